"""A program to compile and measure: a JAX function with its example arguments."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ZOO_PREFIX = "zoo:"
CORPUS_PREFIX = "corpus:"
GO_PREFIX = "go:"
EXPORT_PREFIX = "export:"
NUMERICS_PREFIX = "numerics:"


@dataclass
class Program:
    name: str  # the spec it was loaded from
    fn: Callable
    args: tuple

    @property
    def slug(self) -> str:
        return slug_of(self.name)


def slug_of(name: str) -> str:
    """A short file-name-safe name for a program spec: `resnet@small-train`, `hf-bert@tiny` for
    corpus:hf-bert@tiny, `rnnlm@tiny` for go:rnnlm@tiny, `heat@small` for numerics:heat@small,
    `model_make` for model.py:make, the file's stem for export:PATH."""
    for prefix in (ZOO_PREFIX, CORPUS_PREFIX, GO_PREFIX, NUMERICS_PREFIX):
        if name.startswith(prefix):
            return name.removeprefix(prefix)
    if name.startswith(EXPORT_PREFIX):
        return Path(name.removeprefix(EXPORT_PREFIX)).stem
    path, _, factory = name.rpartition(":")
    return f"{Path(path).stem}_{factory}"
