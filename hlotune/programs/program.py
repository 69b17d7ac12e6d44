"""A program to compile and measure: a JAX function with its example arguments."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ZOO_PREFIX = "zoo:"
EXPORT_PREFIX = "export:"


@dataclass
class Program:
    name: str  # the spec it was loaded from
    fn: Callable
    args: tuple

    @property
    def slug(self) -> str:
        """A short file-name-safe name: `resnet@small-train`, `model_make` for model.py:make,
        the file's stem for export:PATH."""
        if self.name.startswith(ZOO_PREFIX):
            return self.name.removeprefix(ZOO_PREFIX)
        if self.name.startswith(EXPORT_PREFIX):
            return Path(self.name.removeprefix(EXPORT_PREFIX)).stem
        path, _, factory = self.name.rpartition(":")
        return f"{Path(path).stem}_{factory}"
