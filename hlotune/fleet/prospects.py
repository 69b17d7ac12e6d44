"""What tuning a recorded program is expected to save a day, and what each of its configs costs:
the two numbers the `saving` allocation (allocation.py) divides a fleet's budget by.

A program's saving a day is its recorded time a day x (1 - 1/speedup). Before it is measured,
its speedup is a prior: the gain model's prediction (gain_model.py), or one flat guess for every
program; a probe that keeps a gain replaces it by what it found, and one that finds nothing
shrinks it. A config's cost is what the database's logged tunes of this program took a config,
or, before any, a line fitted to the fleet's logged tunes over their programs' call times
(compile, then timed calls), or the prior (PRIOR_COMPILE_S, RUNS) until two programs have been
tuned; a tune's measured seconds a config replace it. Costs differ tenfold across a fleet: a
config of an 86 ms training step takes about as long as five of a 5 ms sampler, for the same
share of its time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from hlotune.tuning.storage import Recording, TuningDatabase

if TYPE_CHECKING:
    from hlotune.fleet.tune import Outcome

# Before any tune is logged, a config costs its compile and up to RUNS timed calls, capped as
# MeasureSettings.timed_s caps a batch's rounds (seconds; read off the fleet benchmark's tunes).
PRIOR_COMPILE_S, RUNS, TIMED_CAP_S = 1.5, 30, 2.5
FLAT_GAIN = 1.10  # the flat prior: every program expected to gain this much
# A probe's configs (the default, the fleet's winners, the portfolio's first) find about this
# share of the log gain that a full tune finds (benchmarks/early_stop_bench.py: a median 0.65
# on the fleet benchmark's tunes, 0.92 on the flags collection).
PROBE_SHARE = 0.7


@dataclass
class Prospect:
    """One program as the allocation sees it: its time a day, its expected speedup, what a
    config costs, the configs spent on it, and what a probe found."""

    recording: Recording
    speedup: float  # expected from a full tune
    config_s: float
    configs: int = 0  # evaluated so far by the allocation's tunes
    found: float | None = None  # the kept speedup of the probe that found a gain (None: none yet)

    @property
    def seconds_per_day(self) -> float:
        return self.recording.seconds_per_day

    def value(self, probe: int, full: int) -> float:
        """Saving a day per tuning second of its next step: a probe of `probe` configs, or,
        once a probe found a gain, tuning it on to `full`."""
        if self.found is None:
            return self.probe_value(probe)
        return self.continue_value(max(full - self.configs, 1))

    def probe_value(self, configs: int) -> float:
        """Saving a day per tuning second of probing it with `configs`: the probe's share of the
        expected saving."""
        probed = max(self.speedup, 1.0) ** PROBE_SHARE
        return self.seconds_per_day * (1 - 1 / probed) / (self.config_s * configs)

    def continue_value(self, configs: int) -> float:
        """Saving a day per tuning second of tuning it `configs` further after its probe: what a
        full tune is expected to add to the probe's kept speedup, the probe having found
        PROBE_SHARE of the log gain."""
        found = max(self.found or 1.0, 1.0)
        expected = found ** (1 / PROBE_SHARE)
        return self.seconds_per_day * (1 / found - 1 / expected) / (self.config_s * configs)

    def learn(self, outcome: Outcome, gain_above: float, null_shrink: float) -> None:
        """What a tune of it measured: its configs and their cost, and whether it kept a gain of
        `gain_above` or more (else the expected log gain shrinks by `null_shrink`)."""
        self.configs = outcome.budget
        if outcome.measured:
            self.config_s = outcome.seconds / outcome.measured
        if self.found is None and outcome.speedup >= gain_above:
            self.found = outcome.speedup
        elif self.found is None:
            self.speedup = max(self.speedup, 1.0) ** null_shrink


def config_costs(db: TuningDatabase, programs: list[Recording]) -> dict[str, float]:
    """Each program's expected seconds a config (by fingerprint): its own logged tunes', else a
    least-squares line over the fleet's tuned programs' call times, else the prior."""
    measured = {p.fingerprint: _logged(db, p) for p in programs}
    known = [(p, cost) for p in programs if (cost := measured[p.fingerprint]) is not None]
    line = _fitted_line([_call_s(p) for p, _ in known], [cost for _, cost in known])
    return {p.fingerprint: measured[p.fingerprint] or line(_call_s(p)) for p in programs}


def _logged(db: TuningDatabase, program: Recording) -> float | None:
    """Seconds a config its logged tunes took (None: never tuned here)."""
    configs = len(db.records(program.fingerprint))
    seconds = db.tuning_seconds(program.fingerprint)
    return seconds / configs if configs and seconds > 0 else None


def _call_s(program: Recording) -> float:
    return program.seconds / program.calls if program.calls else 0.0


def _fitted_line(call_s: list[float], costs: list[float]):
    """cost = a + b x min(RUNS x call, TIMED_CAP_S), fitted once two programs are known, each
    coefficient kept non-negative; the prior's before."""
    def timed(call: float) -> float:
        return min(RUNS * call, TIMED_CAP_S)

    if len({round(c, 6) for c in call_s}) < 2:
        return lambda call: PRIOR_COMPILE_S + timed(call)
    slope, intercept = np.polyfit([timed(c) for c in call_s], costs, 1)
    slope, intercept = max(float(slope), 0.0), max(float(intercept), 0.1)
    return lambda call: intercept + slope * timed(call)
