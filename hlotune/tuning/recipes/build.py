"""What every recipe builds from: the tune's options, its program and where it is stored, and
the program's layouts and default module, made once when first asked (the flags space needs
layouts only for a scorer, and only the kernel spaces need the module)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from hlotune.compiler.spaces.kernel_space import program_module
from hlotune.compiler.configs.layouts import LayoutSpace
from hlotune.programs import Program
from hlotune.tuning.options import TuneOptions


@dataclass
class Build:
    """One tune's ingredients."""

    options: TuneOptions
    program: Program  # as measured
    spec: str  # what the runner loads: the kernel screen compiles it too
    fingerprint: str
    db_location: str | Path  # the database, a file or a URL: the kernel screen caches compiles
    # there, and an Optuna study is kept beside it
    started: float  # time.monotonic() of the call: a time budget counts from it
    show: bool  # note each kernel stage as it begins

    @cached_property
    def layouts(self) -> LayoutSpace:
        return LayoutSpace(self.program)

    @cached_property
    def module(self) -> str:
        """The module XLA compiles for the default config."""
        return program_module(self.layouts)

    @property
    def deadline(self) -> float | None:
        return None if self.options.time_s is None else self.started + self.options.time_s
