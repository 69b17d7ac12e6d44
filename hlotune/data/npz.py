"""Reading and writing TpuGraphs `.npz` files, validated against `hlotune.data.schema`.

Files come from users and from other machines, so nothing in them is trusted: pickles are never
loaded, keys, dtypes and shapes are checked from the array headers before any array is read, and
every problem becomes a one-line HlotuneError naming the file and the key.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import re
import struct
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Protocol, TypeVar

import numpy as np

from hlotune.atomic import write_atomic
from hlotune.data import schema
from hlotune.data.sample import (
    FlagConfigArrays,
    FusionConfigArrays,
    GraphArrays,
    GraphSample,
    LayoutConfigArrays,
    TileConfigArrays,
)
from hlotune.errors import HlotuneError

PathLike = str | os.PathLike[str]
T = TypeVar("T")

CONFIG_TYPES = {"tile": TileConfigArrays, "layout": LayoutConfigArrays, "flags": FlagConfigArrays,
                "fusion": FusionConfigArrays}

_HEADER_READERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}
_HEADER_LENGTH = {(1, 0): "<H", (2, 0): "<I"}
# The header numpy writes for a plain array, e.g. {'descr': '<f4', 'fortran_order': False,
# 'shape': (38, 140), } padded with spaces: read without numpy's ast.literal_eval, which took a
# fifth of reading a split. Any other header (and one past numpy's size limit) goes to numpy.
_PLAIN_HEADER = re.compile(
    r"\{'descr': '([<>|=][a-zA-Z][0-9]*)', 'fortran_order': (True|False), "
    r"'shape': \((|[0-9]+,|[0-9]+(?:, [0-9]+)+)\), \} *\n"
)
_PLAIN_HEADER_MAX = 10_000  # numpy's max_header_size


class _ShapedArray(Protocol):
    """What validation needs of an array: an ndarray, or an ArrayInfo read from its header."""

    @property
    def shape(self) -> tuple[int, ...]: ...

    @property
    def dtype(self) -> np.dtype: ...


@dataclass(frozen=True)
class ArrayInfo:
    """Shape and dtype of one stored array, read from its header alone."""

    shape: tuple[int, ...]
    dtype: np.dtype


def peek(path: PathLike) -> dict[str, ArrayInfo]:
    """Every key's shape and dtype, reading only the array headers (fast on 500k-node files)."""
    path = Path(path)
    with _open_archive(path) as archive:
        return {key: _read_header(archive, member, path) for key, member in _members(archive, path)}


def read_sample(path: PathLike, *, validate: bool = True) -> GraphSample:
    """Load one file as a GraphSample with canonical dtypes; its name is the file stem.

    Keys, dtype kinds and shapes are always checked (before any value is looked at; no header
    may claim more bytes than its member holds). `validate=False` skips only the value rules
    (ranges, ordering), which cost a pass over every array.
    """
    path = Path(path)
    with _open_archive(path) as archive:
        arrays = {key: _read_array(archive, member, path) for key, member in _members(archive, path)}
    _raise_if(_problems(arrays, path, check_values=False))
    if validate:
        _raise_if(validate_arrays(arrays, path))
    collection = schema.detect_collection(arrays)
    return _to_sample(_canonical(arrays, collection), collection, path)


def write_sample(path: PathLike, sample: GraphSample) -> None:
    """Validate `sample` and write it atomically: readers see the old file or the new, never half.

    Parent folders are created. Arrays are stored in their canonical dtypes, so a read gives back
    bit-identical arrays.
    """
    path = Path(path)
    arrays = _from_sample(sample)
    _raise_if(validate_arrays(arrays, path))
    arrays = _canonical(arrays, sample.collection)
    write_atomic(path, lambda stream: np.savez_compressed(stream, **arrays))


def validate_arrays(arrays: Mapping[str, np.ndarray], path: PathLike) -> list[str]:
    """Every problem of one file's arrays, one readable line each; empty when the file is valid."""
    return _problems(arrays, path, check_values=True)


def _problems(
    arrays: Mapping[str, _ShapedArray], path: PathLike, *, check_values: bool
) -> list[str]:
    """Problems of the keys, dtypes and shapes, and of the values when `check_values`."""
    where = os.fspath(path)
    try:
        collection = schema.detect_collection(arrays)
    except HlotuneError as err:
        return [f"{where}: {err}"]
    specs = schema.keys_of(collection)
    known = {spec.name for spec in specs}
    label = collection or "graph-only"
    problems = [
        f"{where}: {key}: not a key of the {label} collection" for key in arrays if key not in known
    ]
    dims: schema.Dims = {}
    for spec in specs:
        if spec.name not in arrays:
            if spec.required:
                problems.append(f"{where}: {spec.name}: missing (required in {label} files)")
            continue
        array = arrays[spec.name]
        problem = spec.dtype_error(array.dtype) or spec.shape_error(array.shape, dims)
        if problem is None and check_values:
            problem = spec.value_error(np.asarray(array), dims)
        if problem:
            problems.append(f"{where}: {spec.name}: {problem}")
    return problems


class InvalidFile(HlotuneError):
    """A file that breaks the schema; `problems` lists each broken rule on its own line."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def check_file(path: PathLike) -> tuple[GraphSample | None, list[str]]:
    """Read a file and list every problem instead of stopping at the first bad one.

    The sample is None when the file cannot be read at all (missing, truncated, wrong keys).
    """
    try:
        sample = read_sample(path, validate=False)
    except InvalidFile as err:
        return None, err.problems
    except HlotuneError as err:
        return None, [str(err)]
    return sample, validate_arrays(_from_sample(sample), path)


def _raise_if(problems: list[str]) -> None:
    if problems:
        raise InvalidFile(problems)


def _open_archive(path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except FileNotFoundError as err:
        raise HlotuneError(f"{path}: no such file") from err
    except OSError as err:
        raise HlotuneError(f"{path}: cannot read ({err.strerror or err})") from err
    except Exception as err:  # zipfile raises many types on damaged bytes, all meaning this
        why = "empty file" if path.stat().st_size == 0 else "truncated, or not a zip file"
        raise HlotuneError(f"{path}: not an npz archive ({why})") from err


def _members(archive: zipfile.ZipFile, path: Path) -> Iterator[tuple[str, zipfile.ZipInfo]]:
    """(key, member) for each array; numpy stores key `k` as member `k.npy`."""
    for member in archive.infolist():
        if not member.filename.endswith(".npy"):
            raise HlotuneError(f"{path}: {member.filename}: not an array (.npy) member")
        yield member.filename.removesuffix(".npy"), member


@contextlib.contextmanager
def _reading(
    archive: zipfile.ZipFile, member: zipfile.ZipInfo, path: Path
) -> Iterator[zipfile.ZipExtFile]:
    """Open one member, turning whatever a damaged archive raises into a HlotuneError."""
    try:
        with archive.open(member) as stream:
            yield stream
    except Exception as err:  # zipfile and numpy's header parser raise many types on bad bytes
        key = member.filename.removesuffix(".npy")
        why = str(err).strip().splitlines()  # numpy's can run to several lines
        raise HlotuneError(f"{path}: {key}: unreadable array ({why[0] if why else type(err).__name__})") from err


def _read_header(archive: zipfile.ZipFile, member: zipfile.ZipInfo, path: Path) -> ArrayInfo:
    with _reading(archive, member, path) as stream:
        return _header(stream, member)[0]


def _header(stream: zipfile.ZipExtFile, member: zipfile.ZipInfo) -> tuple[ArrayInfo, bool]:
    """The header's shape and dtype, and whether the data is in Fortran order."""
    version = np.lib.format.read_magic(stream)
    if version not in _HEADER_READERS:
        raise ValueError(f"unsupported .npy format version {version}")
    shape, fortran_order, dtype = _parse_header(stream, version)
    # A forged header must not make the reader allocate more than the member holds.
    claimed = math.prod(shape) * dtype.itemsize
    if claimed > member.file_size:
        raise ValueError(f"header claims {claimed} bytes, the member holds {member.file_size}")
    return ArrayInfo(tuple(shape), dtype), fortran_order


def _parse_header(stream: zipfile.ZipExtFile, version: tuple[int, int]) -> tuple[tuple[int, ...], bool, np.dtype]:
    """numpy's (shape, fortran_order, dtype) of the header after the magic string."""
    length_bytes = stream.read(struct.calcsize(_HEADER_LENGTH[version]))
    (length,) = struct.unpack(_HEADER_LENGTH[version], length_bytes)
    header = stream.read(length)  # as numpy reads it: a member holds no more than its size
    plain = _PLAIN_HEADER.fullmatch(header.decode("latin1")) if length <= _PLAIN_HEADER_MAX else None
    if plain is None:
        return _HEADER_READERS[version](io.BytesIO(length_bytes + header))
    descr, fortran_order, shape = plain.groups()
    return tuple(int(size) for size in shape.split(",") if size), fortran_order == "True", np.dtype(descr)


def _read_array(archive: zipfile.ZipFile, member: zipfile.ZipInfo, path: Path) -> np.ndarray:
    """The array of one member, its header parsed once (numpy's reader would parse it again)."""
    with _reading(archive, member, path) as stream:
        info, fortran_order = _header(stream, member)
        if info.dtype.hasobject:
            raise ValueError("an array of Python objects (pickles are never read)")
        array = np.empty(info.shape[::-1] if fortran_order else info.shape, info.dtype)
        raw = array.reshape(-1).view(np.uint8)
        if stream.readinto(raw) != raw.size:
            raise ValueError("the member ends inside its array")
        if stream.read(1):  # reading to the end also makes zipfile check the CRC
            raise ValueError("bytes left after the array")
    return array.T if fortran_order else array


def _canonical(arrays: Mapping[str, np.ndarray], collection: str | None) -> dict[str, np.ndarray]:
    """Arrays in the dtypes of the schema (int32 edges become int64, ...), for accepted kinds."""
    dtypes = {spec.name: spec.canonical_dtype for spec in schema.keys_of(collection)}
    return {
        key: array if dtypes[key] in (None, array.dtype) else array.astype(dtypes[key])
        for key, array in arrays.items()
    }


def _to_sample(arrays: Mapping[str, np.ndarray], collection: str | None, path: Path) -> GraphSample:
    configs = _build(CONFIG_TYPES[collection], arrays) if collection else None
    return GraphSample(_build(GraphArrays, arrays), configs, name=path.stem, source=str(path))


def _build(cls: type[T], arrays: Mapping[str, np.ndarray]) -> T:
    """A sample dataclass from the arrays named like its fields (absent optional ones stay None)."""
    return cls(**{f.name: arrays[f.name] for f in fields(cls) if f.name in arrays})


def _from_sample(sample: GraphSample) -> dict[str, np.ndarray]:
    parts = [sample.graph] if sample.configs is None else [sample.graph, sample.configs]
    return {
        f.name: np.asarray(value)
        for part in parts
        for f in fields(part)
        if (value := getattr(part, f.name)) is not None
    }
