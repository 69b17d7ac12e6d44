"""What a tuner needs from storage, and what storage keeps: records, decisions, recordings.

As in TVM MetaSchedule, search and storage are separate: the tuner looks a config up before
measuring it, stores each measured batch at once and keeps each tune's decision. A runtime
means something only for one program on one machine under one compiler, so every backend keys
what it keeps by the program's fingerprint (tuning/fingerprint.py), the hardware fingerprint
and the jax/jaxlib versions, and answers only with what was kept under its own machine and
compiler.
"""

from __future__ import annotations

import json
import math
import warnings
from abc import ABC, abstractmethod
from dataclasses import dataclass

from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.measurement.measure import OK, BatchResult


@dataclass(frozen=True)
class Record:
    """One config of one program as measured on this machine."""

    fingerprint: str  # the program's
    config_key: str
    status: str
    reason: str
    median_ns: float | None
    default_ns: float  # the default's median in the same batch
    noise_floor: float | None  # of that batch
    samples: tuple[int, ...]
    compile_s: float
    timestamp: float
    max_rel_error: float | None = None  # outputs vs the default's (None: measured before v2)
    # profiled kernels' times relative to the same kernels under the batch's default, by name
    # (None: not profiled)
    kernel_costs: dict[str, float] | None = None
    stopped: bool = False  # early stopping cut its samples short (never, before v6)

    @property
    def config(self) -> CompileConfig:
        return CompileConfig.from_dict(json.loads(self.config_key))

    program = property(lambda self: _renamed(self, "Record"))

    @property
    def ok(self) -> bool:
        return self.status == OK

    @property
    def cost(self) -> float:
        """Runtime relative to the default of its batch; inf when it failed."""
        return self.median_ns / self.default_ns if self.ok and self.median_ns else math.inf


@dataclass(frozen=True)
class Decision:
    """A finished tune: its finalists re-measured beside the default (tuning/final_check.py), the
    candidate they chose, and what was kept.

    `default_ns` and `candidate_ns` come from the batch that reports the speedup: for a kept
    candidate, one measured after choosing it (unbiased by the choice); when the default was
    kept, the candidate's last choosing round (its search batch, when none raced). Decisions
    stored before the final check had rounds hold None, None and 0 in the last three fields,
    and their speedup is the choosing batch's."""

    fingerprint: str  # the program's
    candidate: CompileConfig
    chosen: CompileConfig  # the candidate, or the default when its gain was within the noise
    default_ns: float
    candidate_ns: float | None  # None when the candidate failed on re-measurement
    noise_floor: float | None  # of the rounds that chose (final_check.py derives the bar from it)
    strategy: str
    space: str
    timestamp: float
    found_speedup: float | None = None  # the candidate's in the search (flattered by it)
    confirmed_speedup: float | None = None  # over the rounds that chose it (None: it failed)
    rounds: int = 0  # choosing rounds

    @property
    def kept_default(self) -> bool:
        return self.chosen.is_default

    program = property(lambda self: _renamed(self, "Decision"))

    @property
    def speedup(self) -> float:
        """Of the chosen config over the default (1 when the default was kept)."""
        return 1.0 if self.kept_default else self.default_ns / self.candidate_ns


def _renamed(value: Record | Decision, kind: str) -> str:
    """`program`, the old name of `fingerprint`, for one release."""
    warnings.warn(f"{kind}.program is deprecated: use {kind}.fingerprint", DeprecationWarning, stacklevel=3)
    return value.fingerprint


@dataclass(frozen=True)
class ProgramEntry:
    fingerprint: str
    name: str
    records: int  # on this machine and compiler
    failed: int
    best: Decision | None


@dataclass(frozen=True)
class Export:
    text: str
    note: str  # what the format cannot say ("" when nothing is lost)


def winners_among(decided: list[tuple[str, CompileConfig]]) -> list[CompileConfig]:
    """The configs chosen in `decided` ((fingerprint, chosen) pairs, newest first) but the
    default, each once, in that order."""
    chosen: dict[str, CompileConfig] = {}
    for _, config in decided:
        chosen.setdefault(config.key, config)
    return [config for config in chosen.values() if not config.is_default]


class Database(ABC):
    """What a tuner needs from storage (MetaSchedule's Database): look a config up before
    measuring it, store each measured batch at once, and keep each tune's decision."""

    @abstractmethod
    def register(self, fingerprint: str, name: str) -> None: ...

    @abstractmethod
    def lookup(self, fingerprint: str, config_key: str) -> Record | None: ...

    @abstractmethod
    def records(self, fingerprint: str) -> list[Record]:
        """Every record of the program, in the order they were stored."""

    @abstractmethod
    def record_batch(self, fingerprint: str, batch: BatchResult, *, with_default: bool) -> None:
        """Store a batch's candidates (and its reference default) in one commit."""

    @abstractmethod
    def decision(self, fingerprint: str, candidate_key: str | None = None) -> Decision | None:
        """The latest decision of the program (about `candidate_key`, if given)."""

    @abstractmethod
    def decide(self, decision: Decision) -> None: ...

    def claim(self, fingerprint: str, config_keys: list[str]) -> list[str]:
        """The keys this tuner may measure now; the others are being measured by another tuner
        sharing the database (none, for a database only one tuner uses)."""
        return list(config_keys)

    def release(self, fingerprint: str, keys: list[str]) -> None:
        """Give up claims this tuner holds (a database without claims has none)."""

    def retired(self, fingerprint: str) -> set[str]:
        """Keys of the program's configs that the field's trials retired (none, for a database
        that keeps no trials)."""
        return set()

    def decided_elsewhere(self, fingerprint: str) -> list[tuple[str, CompileConfig]]:
        """The other programs' decisions here as (fingerprint, chosen config), newest first;
        none for a database that keeps no decisions."""
        return []

    def winners(self, fingerprint: str) -> list[CompileConfig]:
        """Configs that tunes of other programs chose here, newest first (XTAT's transfer)."""
        return winners_among(self.decided_elsewhere(fingerprint))

    def close(self) -> None:
        """Let go of the connection (nothing to do for a database that holds none)."""

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
