"""A bare JAX function as a loadable program: `export:PATH` files.

Measurement runs in a worker process (and, with the Ray runner, on another machine), which
loads its program from a spec string, so a function given as an object must become a file.
`jax.export` serializes the function's lowered module for its example arguments' shapes; the
file is an npz holding that module (`module`, bytes) and the flat example arguments (`arg0`,
`arg1`, ...), which the worker runs. Loading calls `Exported.call`, so a loaded program takes
and returns the original pytrees. Files are named by a hash of the module and the argument
shapes: exporting the same function for the same shapes again reuses the file (and the values
first saved).

The exported module is one opaque call: layout tuning sees only the arguments' layouts
(`p<i>` sites), not the tensors inside. Pytrees of custom classes need
`jax.export.register_pytree_node_serialization`.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hlotune.atomic import write_bytes_atomic
from hlotune.errors import HlotuneError
from hlotune.programs.program import EXPORT_PREFIX, Program

_MODULE = "module"


@dataclass(frozen=True)
class ExportedFunction:
    """A function exported for its example arguments, not yet written to a file."""

    name: str  # the function's name, for the file name
    module: bytes  # jax.export serialization
    args: tuple[np.ndarray, ...]  # flat, in the exported avals' dtypes

    @property
    def key(self) -> str:
        digest = hashlib.sha256(self.module)
        for arg in self.args:
            digest.update(f"{arg.dtype.name}{list(arg.shape)};".encode())
        return digest.hexdigest()[:16]

    def spec(self, folder: Path) -> str:
        """`export:PATH` of the file `save(folder)` writes."""
        return f"{EXPORT_PREFIX}{folder / f'{self.name}-{self.key}.npz'}"

    def save(self, folder: Path) -> str:
        """Write the file unless it exists; its spec."""
        spec = self.spec(folder)
        path = Path(spec.removeprefix(EXPORT_PREFIX))
        if not path.is_file():
            stream = io.BytesIO()
            arrays = {f"arg{i}": arg for i, arg in enumerate(self.args)}
            np.savez(stream, **{_MODULE: np.frombuffer(self.module, np.uint8)}, **arrays)
            write_bytes_atomic(path, stream.getvalue())
        return spec

    def program(self, folder: Path) -> Program:
        """The program `load_program(self.spec(folder))` gives, without writing the file."""
        return _program(self.spec(folder), self.module, list(self.args))


def export_function(fn: Callable, args: tuple) -> ExportedFunction:
    """Export `fn` for `args` (a tuple of pytrees of arrays) with jax.export."""
    import jax
    from jax import export

    try:
        exported = export.export(jax.jit(fn))(*args)
        module = bytes(exported.serialize())
    except Exception as error:  # user code or an unserializable pytree: bad input
        raise HlotuneError(f"cannot export {_name(fn)} with jax.export: {_first_line(error)}") from None
    leaves = jax.tree_util.tree_leaves(args)
    flat = tuple(np.asarray(leaf, dtype=aval.dtype) for leaf, aval in zip(leaves, exported.in_avals))
    return ExportedFunction(_name(fn), module, flat)


def load_exported(spec: str) -> Program:
    """The program of an `export:PATH` spec."""
    path = Path(spec.removeprefix(EXPORT_PREFIX))
    if not path.is_file():
        raise HlotuneError(f"{path}: no such file")
    try:
        with np.load(path, allow_pickle=False) as data:
            module = data[_MODULE].tobytes()
            args = [data[f"arg{i}"] for i in range(len(data.files) - 1)]
    except (OSError, ValueError, KeyError) as error:
        raise HlotuneError(f"{path}: not an exported program ({_first_line(error)})") from None
    return _program(spec, module, args)


def _program(spec: str, module: bytes, args: list[np.ndarray]) -> Program:
    from jax import export

    try:
        exported = export.deserialize(bytearray(module))
    except Exception as error:
        raise HlotuneError(f"{spec}: not a jax.export module ({_first_line(error)})") from None
    avals = exported.in_avals
    if len(args) != len(avals) or any(a.shape != v.shape for a, v in zip(args, avals)):
        raise HlotuneError(f"{spec}: the arguments do not match the module's {len(avals)} parameters")
    typed = [arg if arg.dtype == v.dtype else arg.view(v.dtype) for arg, v in zip(args, avals)]
    positional, _ = exported.in_tree.unflatten(typed)
    return Program(spec, exported.call, tuple(positional))


def _name(fn: Callable) -> str:
    name = getattr(fn, "__name__", type(fn).__name__)
    return re.sub(r"[^A-Za-z0-9_.]+", "_", name).strip("._") or "function"


def _first_line(error: Exception) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__
