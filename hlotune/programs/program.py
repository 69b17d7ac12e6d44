"""A program to compile and measure: a JAX function with its example arguments."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ZOO_PREFIX = "zoo:"
CORPUS_PREFIX = "corpus:"
EXPORT_PREFIX = "export:"


@dataclass
class Program:
    name: str  # the spec it was loaded from
    fn: Callable
    args: tuple

    @property
    def slug(self) -> str:
        """A short file-name-safe name: `resnet@small-train`, `hf-bert@tiny` for corpus:hf-bert@tiny,
        `model_make` for model.py:make, the file's stem for export:PATH."""
        for prefix in (ZOO_PREFIX, CORPUS_PREFIX):
            if self.name.startswith(prefix):
                return self.name.removeprefix(prefix)
        if self.name.startswith(EXPORT_PREFIX):
            return Path(self.name.removeprefix(EXPORT_PREFIX)).stem
        path, _, factory = self.name.rpartition(":")
        return f"{Path(path).stem}_{factory}"
