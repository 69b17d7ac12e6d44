"""Per-kernel options: the third part of a CompileConfig, applied inside XLA by hlotune's pass.

XLA:CPU reads one per-kernel option that changes generated code on this machine:
`outer_dimension_partitions`, how many parallel tasks split a kernel's outer dimensions (the
CPU's analogue of a TPU kernel's tile). `llvm_kernel_options` (no unrolling, no SLP
vectoriser, optimise for size) was tried on loop fusions in jaxlib 0.10.2 and gave
byte-identical object code, so it is not offered (docs/compiler.md has the probe).

A kernel's `fusion` decision changes XLA's fusion itself (compiler/xla/fusion_rewrite.py):
`"split:NAME"` moves instruction NAME of its fused computation (and what NAME needs) into a
fusion of its own; `"merge"` inlines the kernel into its consumers. Partitions are set first,
on the kernels XLA made; the fusion rewrites follow, merges before splits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hlotune.compiler.xla.fusion_rewrite import Module
from hlotune.compiler.xla.kernels import backend_config, kernel_lines, with_backend_config
from hlotune.errors import HlotuneError
from hlotune.hlo.text import HloText

PARTITIONS = "outer_dimension_partitions"
FUSION = "fusion"
OPTIONS = (PARTITIONS, FUSION)
MERGE, SPLIT = "merge", "split:"


@dataclass(frozen=True)
class KernelConfig:
    """Outer-dimension partitions and fusion decisions of some kernels, by kernel key
    (`kernels.Kernel.key`); every other kernel keeps XLA's choice."""

    partitions: tuple[tuple[str, tuple[int, ...]], ...] = ()
    fusion: tuple[tuple[str, str], ...] = ()  # (key, "merge" or "split:NAME")

    @classmethod
    def from_dict(cls, kernels: Mapping[str, Mapping[str, list[int] | str]]) -> KernelConfig:
        chosen, fusion = [], []
        for key, options in kernels.items():
            unknown = set(options) - set(OPTIONS)
            if unknown or "#" not in key:
                raise HlotuneError(
                    f"kernel {key!r}: " + (f"unknown option {sorted(unknown)[0]!r} (known: "
                                           f"{', '.join(OPTIONS)})" if unknown else
                                           "a kernel key is NAME#FINGERPRINT (hlotune profile --json lists them)")
                )
            value = options.get(PARTITIONS)
            if value is not None:
                chosen.append((key, _partitions(key, value)))
            if options.get(FUSION) is not None:
                fusion.append((key, _decision(key, options[FUSION])))
        return cls(tuple(sorted(chosen)), tuple(sorted(fusion)))

    def to_dict(self) -> dict[str, dict[str, list[int] | str]]:
        kernels: dict[str, dict] = {key: {PARTITIONS: list(value)} for key, value in self.partitions}
        for key, decision in self.fusion:
            kernels.setdefault(key, {})[FUSION] = decision
        return kernels

    @property
    def is_default(self) -> bool:
        return not self.partitions and not self.fusion

    def apply(self, text: str) -> str:
        """The module text with each configured kernel's options set; a key that names no
        kernel of this module is an error, never a silently ignored option."""
        if self.is_default:
            return text
        hlo = HloText.parse(text)
        lines = list(hlo.lines)
        wanted = dict(self.partitions)
        names = {}  # key -> instruction name, on XLA's own module
        for index, kernel in list(kernel_lines(hlo)):
            names[kernel.key] = kernel.name
            if kernel.key in wanted:
                config = backend_config(lines[index]) | {PARTITIONS: [str(p) for p in wanted[kernel.key]]}
                lines[index] = with_backend_config(lines[index], config)
        _check_keys([*wanted, *dict(self.fusion)], names)
        text = "\n".join(lines) + "\n"
        if not self.fusion:
            return text
        module = Module(text)
        order = list(names)  # merges first, producers before consumers, so chains merge
        for key, decision in sorted(self.fusion, key=lambda item: (item[1] != MERGE, order.index(item[0]))):
            if decision == MERGE:
                module.merge(names[key])
            else:
                module.split(names[key], decision.removeprefix(SPLIT))
        return module.text


def _check_keys(keys: list[str], names: dict[str, str]) -> None:
    """A key that names no kernel of this module is an error, never a silently ignored option."""
    missing = sorted(set(keys) - set(names))
    if missing:
        raise HlotuneError(
            f"kernel key {missing[0]} matches no kernel of this program"
            + (f" ({len(missing)} keys do not)" if len(missing) > 1 else "")
            + f"; its kernels are: {', '.join(list(names)[:8])}{' ...' if len(names) > 8 else ''}"
        )


def _decision(key: str, value) -> str:
    if value == MERGE or (isinstance(value, str) and value.startswith(SPLIT) and len(value) > len(SPLIT)):
        return value
    raise HlotuneError(f"kernel {key!r}: {FUSION} is {MERGE!r} or 'split:INSTRUCTION', got {value!r}")


def _partitions(key: str, value) -> tuple[int, ...]:
    try:
        parts = tuple(int(p) for p in value)
    except (TypeError, ValueError):
        raise HlotuneError(f"kernel {key!r}: {PARTITIONS} is a list of integers, got {value!r}") from None
    if any(p < 1 for p in parts):
        raise HlotuneError(f"kernel {key!r}: {PARTITIONS} must be at least 1, got {list(parts)}")
    return parts


DEFAULT_KERNELS = KernelConfig()
