"""What the fleet's tuning saves, from runs: per program and in total.

A program's saving is its recorded time (recordings.py: calls x the mean sampled call, summed
over processes, over the window the counts span) times the share its decision saves. That
share comes from the field's trials where there are finished ones (source "field": the mean
over those processes of 1 - 1/speedup where the trial kept the decision, 0 where it kept
jax.jit's), else from the verification beside jax.jit (source "verified", where the rule lets it
apply), else nothing, whatever the tune reported. A rate a day is the recorded time scaled to a
day, given only where the counts span at least MIN_DAY_WINDOW_S (a few minutes of a few jobs
say little of a day) and never beyond what the recorded hosts could run in a day, each core
busy all day. Set against the tuning time spent, the saving over that cost is the seeds'
figure: XTAT's fleet saves about 15x what its tuning costs.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from hlotune.tuning.storage import Recording, TuningDatabase
from hlotune.tuning.storage.field import KEPT, DecisionState

FIELD, VERIFIED, NONE = "field", "verified", "none"  # where a program's saved share comes from
MIN_DAY_WINDOW_S = 3600.0  # the shortest window whose counts are scaled to a day


@dataclass(frozen=True)
class ProgramSaving:
    name: str
    fingerprint: str
    recorded_s: float  # over the window its counts span
    window_s: float
    reported: float | None  # the decision's speedup as its tune measured it (None: not tuned)
    verified: float | None  # beside jax.jit (None: not verified, or the default was kept)
    saved_share: float  # of its time, by `source`
    source: str  # FIELD, VERIFIED or NONE
    tuning_s: float

    @property
    def saved_s(self) -> float:
        return self.recorded_s * self.saved_share

    def to_json(self, day: float | None = None) -> dict:
        """Its fields, with the rates a day where `day` (days per second of the window) is given."""
        return asdict(self) | {"saved_s": self.saved_s,
                               "seconds_per_day": None if day is None else self.recorded_s * day,
                               "saved_per_day": None if day is None else self.saved_s * day}


@dataclass(frozen=True)
class FleetSavings:
    programs: list[ProgramSaving]  # most saved first
    capacity_s: float = math.inf  # what the recorded hosts could run in a day: hosts x cores x 86400

    @property
    def recorded_s(self) -> float:
        return sum(p.recorded_s for p in self.programs)

    @property
    def saved_s(self) -> float:
        return sum(p.saved_s for p in self.programs)

    @property
    def window_s(self) -> float:
        return max((p.window_s for p in self.programs), default=0.0)

    @property
    def seconds_per_day(self) -> float | None:
        return None if self._day_scale is None else self.recorded_s * self._day_scale

    @property
    def saved_per_day(self) -> float | None:
        return None if self._day_scale is None else self.saved_s * self._day_scale

    @property
    def _day_scale(self) -> float | None:
        """Days per second of the window, capped so that the fleet's time a day fits the hosts."""
        if self.window_s < MIN_DAY_WINDOW_S or not self.recorded_s:
            return None
        return min(86400 / self.window_s, self.capacity_s / self.recorded_s)

    @property
    def tuning_s(self) -> float:
        return sum(p.tuning_s for p in self.programs)

    @property
    def saving_over_cost(self) -> float | None:
        """The window's saving over the tuning time spent (None before any tuning)."""
        return self.saved_s / self.tuning_s if self.tuning_s else None

    def to_json(self) -> dict:
        return {"programs": [p.to_json(self._day_scale) for p in self.programs], "recorded_s": self.recorded_s,
                "saved_s": self.saved_s, "window_s": self.window_s, "seconds_per_day": self.seconds_per_day,
                "saved_per_day": self.saved_per_day, "tuning_s": self.tuning_s,
                "saving_over_cost": self.saving_over_cost}


def fleet_savings(db: TuningDatabase) -> FleetSavings:
    programs = [_saving(db, recording) for recording in db.recordings()]
    capacity = db.recorded_hosts() * db.machine.cores * 86400.0
    return FleetSavings(sorted(programs, key=lambda p: -p.saved_s), capacity)


def _saving(db: TuningDatabase, recording: Recording) -> ProgramSaving:
    state = db.state(recording.fingerprint)
    reported = None if state.decision is None else state.decision.speedup
    verified = None if state.verification is None else state.verification.speedup
    share, source = _saved_share(state)
    return ProgramSaving(recording.name, recording.fingerprint, recording.seconds, recording.window_s, reported,
                         verified, share, source, db.tuning_seconds(recording.fingerprint))


def _saved_share(state: DecisionState) -> tuple[float, str]:
    finished = state.field.finished
    if finished:
        return sum(1 - 1 / t.speedup for t in finished if t.verdict == KEPT) / len(finished), FIELD
    if state.candidate is not None and state.verification is not None:
        return max(0.0, 1 - 1 / state.verification.speedup), VERIFIED
    return 0.0, NONE
