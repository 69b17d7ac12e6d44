"""A program's example arguments handed to its measurement workers in a file.

A worker loads its program by spec, and making a model's arguments means running its init: 0.5
to 1 s of CPU for a tiny zoo model, seconds for a corpus one, minutes for a large GO graph. A
process measures the same program in worker after worker: after a config crashes XLA, in each
tune or collection of it, in the kernel screen. So the measuring process keeps one file per
program spec for its lifetime, written by the first worker (or by itself, where it has loaded
the program already, `offer`). A later worker traces the program for its shapes only, which
compiles nothing, and reads the values. The file is checked against those shapes and dtypes;
one that does not match, or cannot be read, is ignored and the worker runs init as before.

Only the built-in model tables (zoo:, corpus:, go:) trace for shapes (hlotune.programs); other
programs build their values in any case, so they get no file.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import math
import os
import shutil
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from hlotune.compiler.measurement.zygote import startup_environment
from hlotune.programs import Program, load_program, traces_abstractly

# Above this the file costs more disk (often memory: /tmp) than a worker's init costs time.
MAX_BYTES = 1 << 30
FOLDER_PREFIX = "hlotune-arguments-"  # then the owning process's id
_FOLDER: Path | None = None


def argument_file(spec: str) -> str | None:
    """Where the workers of `spec` find its arguments (the file may not exist yet); None for a
    program that builds its values in any case. Keyed by the variables a worker reads at start
    too: under another JAX_DEFAULT_PRNG_IMPL, say, init makes other values of the same shapes."""
    if not traces_abstractly(spec):
        return None
    key = json.dumps([spec, sorted(startup_environment().items())])
    return str(_folder() / f"{hashlib.sha256(key.encode()).hexdigest()[:16]}.npz")


def offer(program: Program) -> None:
    """Hand the arguments of `program`, loaded here, to the workers that will measure it (by
    its name, as runners and collections measure it)."""
    path = argument_file(program.name)
    if path is not None and not os.path.exists(path):
        _write(program, path)


def load_with_arguments(spec: str, path: str | None) -> Program:
    """The program, its values read from `path` where that holds them, else made by its init
    and written there for the next worker."""
    if path is None:
        return load_program(spec)
    if os.path.exists(path):
        program = _read(load_program(spec, abstract=True), path)
        if program is not None:
            return program
    program = load_program(spec)
    _write(program, path)
    return program


def _write(program: Program, path: str) -> None:
    """Each leaf's bytes (dtypes such as bfloat16 have no portable npz form); nothing where a
    leaf is not a plain single-device array, or the whole is over MAX_BYTES. Written whole or not
    at all (a temporary file renamed), so a worker killed mid-write leaves no torn file."""
    import jax

    leaves = jax.tree_util.tree_leaves(program.args)
    if not all(_plain(leaf) for leaf in leaves) or sum(leaf.nbytes for leaf in leaves) > MAX_BYTES:
        return
    raw = {str(i): np.ascontiguousarray(leaf).reshape(-1).view(np.uint8) for i, leaf in enumerate(leaves)}
    partial = f"{path}.{os.getpid()}.partial"
    try:
        with open(partial, "wb") as file:
            np.savez(file, **raw)
        os.replace(partial, path)
    except OSError:  # no folder there (a worker on another machine), or no room: the next worker runs init
        Path(partial).unlink(missing_ok=True)


def _plain(leaf) -> bool:
    """An array whose bytes, put on the default device, give back what lowering saw: not
    weak-typed, not a PRNG key, on one device and not committed to it."""
    import jax

    return (isinstance(leaf, jax.Array) and not jax.typeof(leaf).weak_type and not leaf.committed
            and not jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key)
            and len(leaf.sharding.device_set) == 1)


def _read(shapes: Program, path: str) -> Program | None:
    """`shapes` with the values from `path`; None where the file does not hold them."""
    import jax

    structs, tree = jax.tree_util.tree_flatten(shapes.args)
    try:
        with np.load(path) as data:
            raw = [data[str(i)] for i in range(len(structs))] if len(data.files) == len(structs) else None
    except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile):
        return None
    if raw is None or not all(_fits(bytes_, struct) for bytes_, struct in zip(raw, structs)):
        return None
    leaves = [jax.device_put(bytes_.view(struct.dtype).reshape(struct.shape)) for bytes_, struct in zip(raw, structs)]
    return Program(shapes.name, shapes.fn, jax.tree_util.tree_unflatten(tree, leaves))


def _fits(raw: np.ndarray, struct) -> bool:
    import jax

    return (isinstance(struct, jax.ShapeDtypeStruct) and not struct.weak_type and raw.dtype == np.uint8
            and raw.ndim == 1 and raw.size == math.prod(struct.shape) * np.dtype(struct.dtype).itemsize)


def _folder() -> Path:
    """This process's folder, removed when it exits (not by a process forked from it); those
    of processes that died without removing theirs (killed) go when the next one is made."""
    global _FOLDER
    if _FOLDER is None:
        _remove_orphans()
        owner = os.getpid()
        _FOLDER = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{owner}-"))
        atexit.register(lambda: os.getpid() == owner and shutil.rmtree(_FOLDER, ignore_errors=True))
    return _FOLDER


def _remove_orphans() -> None:
    for folder in Path(tempfile.gettempdir()).glob(f"{FOLDER_PREFIX}*-*"):
        pid = folder.name.removeprefix(FOLDER_PREFIX).partition("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True
