"""`hlotune fleet tune`: one tuning budget spent across the recorded programs, where it saves most.

A fleet's programs differ far more in what tuning can save than a program's configs differ in
runtime: most programs gain nothing, a few gain 2x, and recorded time decides what a gain is
worth. The budget counts configs measured over every program (`--budget`) and/or seconds
(`--hours`); each program is tuned by `hlotune.tune` on its recording (the default engine, flags),
so a stopped fleet tune resumes where it stopped, and every tune ends in its final check and a
stored decision, which the program's next compile under `hlotune.jit` applies. How the budget is
divided is an allocation (allocation.py). A tune that keeps a config times it beside jax.jit in
this process (tuning/verification.py), and hlotune.jit trials it in every process that runs it,
so `fleet report` reads savings from runs, not from the batch that chose.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from hlotune.errors import HlotuneError
from hlotune.progress import note
from hlotune.fleet.recorded import tune_recorded
from hlotune.tuning.options import TuneOptions
from hlotune.tuning.runners.registry import DEFAULT_RUNNER, open_runner
from hlotune.tuning.storage import Recording, TuningDatabase

if TYPE_CHECKING:
    from hlotune.tuning.runners.base import Runner


class BudgetSpent(Exception):
    """The fleet budget or its deadline is reached: the allocation stops there."""


@dataclass(frozen=True)
class Outcome:
    """One program's tune at one budget."""

    recording: Recording
    budget: int
    measured: int  # configs measured by this tune (resumed ones cost nothing)
    seconds: float
    found: float  # the search's best speedup (flattered by the choice)
    speedup: float  # kept, measured after choosing (1: the default was kept)
    verified: float | None = None  # the kept config beside jax.jit in this process (None: none kept)

    @property
    def program(self) -> Recording:
        """The old name of `recording`, for one release."""
        warnings.warn("Outcome.program is deprecated: use Outcome.recording", DeprecationWarning, stacklevel=2)
        return self.recording

    @property
    def promise(self) -> float:
        """What tuning it further may save a day: its recorded time a day times the share of it
        the best config found would save."""
        return self.recording.seconds_per_day * (1 - 1 / max(self.found, self.speedup, 1.0))


@dataclass
class Spender:
    """Tunes a program at a budget, charging the fleet's budget: what an allocation calls."""

    location: str
    budget: int | None  # configs measured over the fleet
    deadline: float | None  # monotonic
    runner: Runner  # open, shared by the fleet's tunes
    seed: int = 0
    show: bool = True
    options: TuneOptions | None = None  # each tune's, but its budget, time and seed
    measured: int = 0
    outcomes: list[Outcome] = field(default_factory=list)

    def __call__(self, program: Recording, budget: int) -> Outcome:
        left = None if self.deadline is None else self.deadline - time.monotonic()
        if (self.budget is not None and self.measured >= self.budget) or (left is not None and left <= 0):
            raise BudgetSpent
        if self.budget is not None:  # the last tune takes what is left beyond its records
            with TuningDatabase(self.location) as db:
                budget = min(budget, len(db.records(program.fingerprint)) + self.budget - self.measured)
        options = replace(self.options or TuneOptions(), budget=budget, time_s=left, seed=self.seed)
        result = tune_recorded(self.location, program, options, runner=self.runner)
        self.measured += result.measurements
        outcome = Outcome(program, budget, result.measurements, result.seconds,
                          result.found_speedup or 1.0, result.speedup, result.verified_speedup)
        self.outcomes.append(outcome)
        note(f"{program.name}: budget {budget}, {result.measurements} measured, found {outcome.found:.3f}x, "
             f"kept {outcome.speedup:.3f}x ({self.measured} measured so far)", show=self.show)
        return outcome


@dataclass(frozen=True)
class FleetTuneResult:
    outcomes: list[Outcome]
    verified: dict[str, float]  # by fingerprint: the last kept config's speedup beside jax.jit
    measured: int
    seconds: float


def fleet_tune(db: str, *, allocate: Callable[[list[Recording], Spender], None],
               budget: int | None, hours: float | None, runner: Runner | str = DEFAULT_RUNNER, seed: int = 0,
               show: bool = True, options: TuneOptions | None = None) -> FleetTuneResult:
    """Spend `budget` measured configs and/or `hours` on the fleet recorded in the database `db` as
    `allocate` divides it, each program tuned as `options` says (their budget, time and seed
    are the fleet's). The runner is opened once for all the tunes: a Ray runner's connection
    and workers start once, not per program."""
    if budget is None and hours is None:
        raise HlotuneError("fleet tune needs --budget or --hours: configs to measure or hours to spend")
    started = time.monotonic()
    with TuningDatabase(db) as database:
        programs = [r for r in database.recordings() if r.tunable]
    if not programs:
        raise HlotuneError(f"{db}: no tunable program recorded on this machine (run them under hlotune.jit)")
    with open_runner(runner) as opened:
        spend = Spender(db, budget, None if hours is None else started + hours * 3600, opened, seed, show,
                        options)
        try:
            allocate(programs, spend)
        except BudgetSpent:
            note(f"fleet budget spent: {spend.measured} configs measured", show=show)
    last = {o.recording.fingerprint: o for o in spend.outcomes}  # each program's last tune
    verified = {fingerprint: o.verified for fingerprint, o in last.items() if o.verified is not None}
    return FleetTuneResult(spend.outcomes, verified, spend.measured, time.monotonic() - started)
