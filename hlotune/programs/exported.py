"""A bare JAX function as a loadable program: `export:PATH` files.

Measurement runs in a worker process (and, with the Ray runner, on another machine), which
loads its program from a spec string, so a function given as an object must become a file.
`jax.export` serializes the function's lowered module for its example arguments' shapes; the
file is an npz holding that module (`module`, bytes) and the flat example arguments (`arg0`,
`arg1`, ...), which the worker runs. Files are named by a hash of the module and the argument
shapes: exporting the same function for the same shapes again reuses the file (and the values
first saved).

The file holds the function as a function of its flattened leaves, taking and returning flat
lists of arrays (the lowered module's own calling convention), so the worker needs none of the
user's pytree types (an equinox module, an optax state); the trees stay with the
`ExportedFunction` in the user's process, whose `user_program` takes and returns them. Custom
calls without jax's compatibility guarantee (LAPACK's) are allowed: a file is compiled by the
jax that made it, on a machine of the same fingerprint. A function with host callbacks cannot
be serialized at all (`HostCallbacks`): it is measured in the user's process instead.

The exported module is one opaque call: layout tuning sees only the arguments' layouts
(`p<i>` sites), not the tensors inside.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from hlotune.atomic import write_bytes_atomic
from hlotune.errors import HlotuneError
from hlotune.programs.callbacks import callback_reason
from hlotune.programs.program import EXPORT_PREFIX, Program

_MODULE = "module"
_HOST_CALLBACKS = "serialization of host_callbacks"  # jax.export's refusal
_CUSTOM_CALL = re.compile(r"stablehlo\.custom_call\s*@([\w.$-]+)")  # its target, in MLIR text
# A module that calls jaxlib's LAPACK kernels names them in its bytes (lapack_sgetrf_ffi, ...).
_LAPACK_CALL = b"lapack_"


class HostCallbacks(HlotuneError):
    """A function jax.export cannot serialize: it calls back into Python."""


@dataclass(frozen=True)
class TreeFunction:
    """A function of flat leaves (an export's) as a function of the trees it was exported
    with: what the user calls, compiled in the user's process."""

    fn: Callable
    in_tree: Any  # jax PyTreeDef of the positional arguments (a tuple)
    out_tree: Any

    def __call__(self, *args):
        return self.out_tree.unflatten(self.fn(*self.in_tree.flatten_up_to(args)))


@dataclass(frozen=True)
class ExportedFunction:
    """A function exported for its example arguments, not yet written to a file."""

    name: str  # the function's name, for the file name
    module: bytes  # jax.export serialization of the function of flat leaves
    args: tuple[np.ndarray, ...]  # flat, in the exported avals' dtypes
    in_tree: Any  # jax PyTreeDefs of the arguments (a tuple) and the outputs: the user's types
    out_tree: Any

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
            write_bytes_atomic(path, self.to_bytes())
        return spec

    def to_bytes(self) -> bytes:
        """The file's contents: an npz of the module and the flat arguments."""
        stream = io.BytesIO()
        arrays = {f"arg{i}": arg for i, arg in enumerate(self.args)}
        np.savez(stream, **{_MODULE: np.frombuffer(self.module, np.uint8)}, **arrays)
        return stream.getvalue()

    def program(self, folder: Path) -> Program:
        """The program `load_program(self.spec(folder))` gives, without writing the file: of
        flat leaves, as measured and fingerprinted."""
        return _program(self.spec(folder), self.module, list(self.args))

    def user_program(self, folder: Path) -> Program:
        """`program(folder)` taking and returning the function's pytrees: its compile (the same
        module) is called as the function is."""
        flat = self.program(folder)
        return Program(flat.name, TreeFunction(flat.fn, self.in_tree, self.out_tree),
                       self.in_tree.unflatten(flat.args))


def export_function(fn: Callable, args: tuple) -> ExportedFunction:
    """Export `fn` for `args` (a tuple of pytrees of arrays) with jax.export, as a function of
    the flat leaves; HostCallbacks where it calls back into Python."""
    import jax

    try:
        exported = _export(jax.jit(fn), args)
        module = bytes(_flat(exported).serialize())
    except Exception as error:  # user code: bad input
        if _HOST_CALLBACKS in str(error):
            raise HostCallbacks(f"cannot export {_name(fn)}: jax.export cannot serialize its host "
                                f"callbacks, which are {callback_reason(fn, args)}") from None
        raise HlotuneError(f"cannot export {_name(fn)} with jax.export: {_first_line(error)}") from None
    leaves, in_tree = jax.tree_util.tree_flatten(args)
    typed = tuple(np.asarray(leaf, dtype=aval.dtype) for leaf, aval in zip(leaves, exported.in_avals))
    return ExportedFunction(_name(fn), module, typed, in_tree, exported.out_tree)


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

    if _LAPACK_CALL in module:
        _initialize_lapack()
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


def _initialize_lapack() -> None:
    """Set up jaxlib's LAPACK kernels, which a loaded module's LAPACK custom calls run: jax 0.8
    does it only when it lowers a linalg op itself, and XLA:CPU crashes on a call without. It
    loads scipy's LAPACK (0.4 s), so only a module that makes such calls pays for it."""
    from jaxlib import lapack

    lapack.prepare_lapack_call("getrf_ffi", np.float32)


def _export(jitted: Callable, args: tuple):
    """jax.export's Exported, with the custom calls it refuses for want of a compatibility
    guarantee allowed: a file is compiled by the jax that made it. They are found in the
    lowered module, lowered again only for a program that has such calls."""
    from jax import export

    try:
        return export.export(jitted)(*args)
    except ValueError as error:
        if "custom call" not in str(error):
            raise
    targets = sorted(set(_CUSTOM_CALL.findall(jitted.lower(*args).as_text())))
    return export.export(jitted, disabled_checks=[export.DisabledSafetyCheck.custom_call(target)
                                                  for target in targets])(*args)


def _flat(exported):
    """`exported` as a function of flat lists of arrays: the same module (whose parameters and
    results are the leaves already), with no tree of the user's types left to serialize."""
    import jax

    tree = jax.tree_util.tree_structure
    return replace(exported, in_tree=tree(((0,) * len(exported.in_avals), {})),
                   out_tree=tree([0] * len(exported.out_avals)))


def _name(fn: Callable) -> str:
    name = getattr(fn, "__name__", type(fn).__name__)
    return re.sub(r"[^A-Za-z0-9_.]+", "_", name).strip("._") or "function"


def _first_line(error: Exception) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__
