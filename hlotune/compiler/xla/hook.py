"""hlotune's pass inside XLA:CPU's pipeline, registered for one compile at a time.

`jax.extend.xla.register_hlo_module_transformation` hands a callback every module the process
compiles, at a pipeline stage (PRE_SCHEDULER: fused, not yet scheduled). This module is the one
place that registers it: `compile_with_pass` filters the modules by the program's name, edits
its text, keeps what it saw, and clears the pass afterwards, whatever happened.

The hook came with jax and jaxlib 0.10.2; under an older jax what needs it (the tile and
fusion spaces, any per-kernel option, measured schedules) stops with a one-line error.

Two caches would let a compile skip the pass: jax's in-memory compilation cache and, where a
user turned it on, the persistent one. Both key on the module before our pass, so a hooked
compile could return a plain executable, and a later plain compile a hooked one. The pass runs
with the persistent cache off (persistent_cache.py) and the in-memory caches cleared before and
after.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.xla.persistent_cache import persistent_cache_off
from hlotune.errors import HlotuneError

PASS_NAME = "hlotune"
HOOK_SINCE = "0.10.2"  # the jax and jaxlib release that added jax.extend.xla and jaxlib._hlo
PRE_SCHEDULER, POST_SCHEDULER = "pre_scheduler", "post_scheduler"
Edit = Callable[[str], "str | None"]  # module text -> changed text, or None to keep it

_LOCK = threading.Lock()  # the registration is process-wide: one hooked compile at a time


@dataclass
class PassRecord:
    """What the pass saw in one compile: the program module's text before any edit."""

    module: str
    texts: list[str] = field(default_factory=list)
    error: BaseException | None = None  # raised by the edit; re-raised after the compile


def compile_with_pass(
    lowered: Any,
    edit: Edit | None = None,
    *,
    compiler_options: dict | None = None,
    stage: str = PRE_SCHEDULER,
) -> tuple[Any, PassRecord]:
    """Compile a `jax.stages.Lowered` with `edit` applied to its module at `stage`.

    `edit=None` only records the module (how a program's kernels are found before choosing
    their configs). An error raised by `edit` (a kernel key that matches nothing) reaches the
    caller as itself, not as XLA's wrapped traceback.
    """
    require_hook()
    import jax
    import jax.extend.xla as xla
    from jaxlib import _hlo

    record = PassRecord(module_name(lowered))

    def callback(serialized: bytes) -> bytes | None:
        module = _hlo.HloModule.from_serialized_hlo_module_proto(serialized)
        if module.name != record.module:
            return None
        text = module.to_string(_print_options(_hlo))
        record.texts.append(text)
        try:
            changed = edit(text) if edit is not None else None
        except Exception as error:  # noqa: BLE001 - handed back to the caller after compile
            record.error = error
            raise
        if changed is None or changed == text:
            return None
        return _hlo.hlo_module_from_text(changed).as_serialized_hlo_module_proto()

    pipeline_stage = getattr(xla.PipelineStage, stage.upper())
    with _LOCK, persistent_cache_off():
        jax.clear_caches()
        xla.register_hlo_module_transformation(callback, name=PASS_NAME, stage=pipeline_stage,
                                               platforms="cpu")
        try:
            compiled = lowered.compile(compiler_options=compiler_options or {})
        except Exception:
            if record.error is not None:
                raise record.error from None
            raise
        finally:
            xla.clear_hlo_module_transformation(PASS_NAME, stage=pipeline_stage, platforms="cpu")
            jax.clear_caches()
    if not record.texts:
        raise HlotuneError(f"XLA never handed hlotune's pass the module {record.module}")
    return compiled, record


def require_hook() -> None:
    """A HlotuneError, in one line, where the installed jax has no module-transformation hook."""
    try:
        import jax.extend.xla  # noqa: F401
        from jaxlib import _hlo  # noqa: F401
    except ImportError:
        import jax
        import jaxlib

        raise HlotuneError(
            f"per-kernel options (the tile and fusion spaces) need XLA's module-transformation hook, "
            f"jax.extend.xla: jax and jaxlib {HOOK_SINCE} or newer (installed: jax {jax.__version__}, "
            f"jaxlib {jaxlib.__version__})") from None


def compile_config(lowered: Any, config: CompileConfig) -> Any:
    """The one way hlotune compiles a config: its flags as compiler options, its per-kernel
    options by hlotune's pass (skipped, with the caches, where it sets none)."""
    options = config.flags.compiler_options()
    if config.kernels.is_default:
        return lowered.compile(compiler_options=options)
    compiled, _ = compile_with_pass(lowered, config.kernels.apply, compiler_options=options)
    return compiled


def _print_options(hlo: Any) -> Any:
    """The text must parse back to the same module: by default XLA elides large constants
    (`{...}`), which would parse back as garbage (seen: wrong outputs of corpus:hf-mistral,
    whose rotary tables are constants)."""
    options = hlo.HloPrintOptions()
    options.print_large_constants = True
    return options


def module_name(lowered: Any) -> str:
    """The HLO module name XLA gives a lowered program (`jit_<function>`)."""
    return str(lowered.compiler_ir("stablehlo").operation.attributes["sym_name"]).strip('"')
