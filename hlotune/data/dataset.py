"""A folder of TpuGraphs npz files, read one graph at a time.

The full dataset is about 30 GB and a layout graph alone can have 500k nodes, so nothing here
loads more than the graph asked for: paths are listed once, samples are read on access and never
cached, and `peek` gives shapes from the array headers without reading any data.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from hlotune.data.builtin import resolve
from hlotune.data.collections import KINDS
from hlotune.data.npz import PathLike, peek, read_sample
from hlotune.data.sample import GraphSample
from hlotune.data.schema import detect_collection
from hlotune.errors import HlotuneError

__all__ = ["Dataset", "SplitInfo", "peek", "split_info"]

SPLITS = ("train", "valid", "test")
SEARCHES = ("default", "random")


@dataclass(frozen=True)
class SplitInfo:
    """Where a TpuGraphs path sits: `layout/xla/random/train` -> layout, xla, random, train.

    Fields the path does not name are None (tile has no search; a loose file has nothing).
    """

    collection: str | None = None
    source: str | None = None
    search: str | None = None
    split: str | None = None


def split_info(path: PathLike) -> SplitInfo:
    """Parse the folders after the last `tile`, `layout`, `flags` or `fusion` component of `path`."""
    folders = Path(path).parts
    if folders and folders[-1].endswith(".npz"):
        folders = folders[:-1]
    anchors = [i for i, part in enumerate(folders) if part in KINDS]
    if not anchors:
        return SplitInfo()
    collection, *rest = folders[anchors[-1]:]
    return SplitInfo(
        collection=collection,
        source=rest[0] if rest and rest[0] not in SEARCHES + SPLITS else None,
        search=next((part for part in rest if part in SEARCHES), None),
        split=next((part for part in rest if part in SPLITS), None),
    )


class Dataset:
    """The `*.npz` files under `root` (or `root` itself when it is a file), in sorted order.

    `root` may name the built-in dataset: `builtin:flags/train`, `builtin:layout`, ... A list
    of roots pools their files in the order given (several folders, or the files of a
    cross-validation fold); `root` is then their common folder.

    Indices are stable across runs and machines; each access reads one file.
    """

    def __init__(self, root: PathLike | Sequence[PathLike], *, validate: bool = True) -> None:
        roots = [resolve(r) for r in ([root] if isinstance(root, (str, os.PathLike)) else root)]
        if not roots:
            raise HlotuneError("no dataset given")
        common = Path(os.path.commonpath([folder.absolute() for folder in roots]))
        self.root = roots[0] if len(roots) == 1 else common
        self.validate = validate
        self.paths = [path for folder in roots for path in _find_npz(folder)]

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> GraphSample:
        return read_sample(self.paths[index], validate=self.validate)

    def __iter__(self) -> Iterator[GraphSample]:
        return (read_sample(path, validate=self.validate) for path in self.paths)

    @cached_property
    def collection(self) -> str | None:
        """The collection of the first file, from its keys (None: graphs without configs)."""
        first = self.paths[0]
        keys = peek(first)
        try:
            return detect_collection(keys)
        except HlotuneError as err:
            raise HlotuneError(f"{first}: {err}") from err

    @property
    def info(self) -> SplitInfo:
        """What the root's own path says (`.../layout/xla/random` -> no split yet)."""
        return split_info(self.root)

    def info_of(self, index: int) -> SplitInfo:
        return split_info(self.paths[index])


def _find_npz(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise HlotuneError(f"{root}: no such file or folder")
    paths = sorted(path for path in root.rglob("*.npz") if path.is_file())
    if not paths:
        raise HlotuneError(f"{root}: no .npz files in this folder")
    return paths
