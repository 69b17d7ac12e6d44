"""XLA through jax/jaxlib: the HloModuleProto of a program, before or after optimisation.

jaxlib hands out serialized HloModuleProtos, so every importer ends in the one proto reader.
Entry points that jax keeps private are pinned by the jax version in pyproject.toml.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hlotune.errors import HlotuneError


def lowered_proto(fn: Callable, args: Sequence, *, optimized: bool = False) -> bytes:
    """HloModuleProto of `jax.jit(fn)(*args)`, as lowered or after XLA's passes."""
    import jax

    try:
        lowered = jax.jit(fn).lower(*args)
    except Exception as error:  # user code: any failure to trace is bad input
        raise HlotuneError(f"cannot trace the program: {_first_line(error)}") from None
    if not optimized:
        return lowered.compiler_ir("hlo").as_serialized_hlo_module_proto()
    executable = lowered.compile().runtime_executable()
    return executable.hlo_modules()[0].as_serialized_hlo_module_proto()


def optimize_proto(proto: bytes) -> bytes:
    """Run XLA:CPU's optimisation passes on a module and return the optimised module."""
    import jax.extend
    from jax._src.lib import xla_client

    try:
        stablehlo = xla_client._xla.mlir.hlo_to_stablehlo(proto)
        backend = jax.extend.backend.get_backend("cpu")
        devices = xla_client.DeviceList(tuple(backend.devices()[:1]))
        executable = backend.compile_and_load(stablehlo, devices, xla_client.CompileOptions())
    except Exception as error:
        raise HlotuneError(f"XLA cannot compile the module: {_first_line(error)}") from None
    return executable.hlo_modules()[0].as_serialized_hlo_module_proto()


def _first_line(error: Exception) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__
