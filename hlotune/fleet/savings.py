"""What the fleet's tuning saves, from runs: per program and in total.

A program's saving a day is its recorded time a day (recordings.py: calls x the mean sampled
call, over the window the counts span) times the share its decision saves, 1 - 1/speedup, where
the speedup is the one verified beside jax.jit (tuning/verify.py), not the tune's report; a
program with no verification, or one not verified faster (which hlotune.jit does not apply), saves
nothing here, whatever its tune reported. Set against the tuning time every fleet tune spent on
it, a day's saving over that cost is the seeds' figure: XTAT's fleet saves about 15x what its
tuning costs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from hlotune.tuning.storage import Recording, TuningDatabase


@dataclass(frozen=True)
class ProgramSaving:
    name: str
    fingerprint: str
    seconds_per_day: float  # recorded
    reported: float | None  # the decision's speedup as its tune measured it (None: not tuned)
    verified: float | None  # beside jax.jit (None: not verified, or the default was kept)
    saved_per_day: float  # seconds
    tuning_s: float

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class FleetSavings:
    programs: list[ProgramSaving]  # most saved first

    @property
    def seconds_per_day(self) -> float:
        return sum(p.seconds_per_day for p in self.programs)

    @property
    def saved_per_day(self) -> float:
        return sum(p.saved_per_day for p in self.programs)

    @property
    def tuning_s(self) -> float:
        return sum(p.tuning_s for p in self.programs)

    @property
    def saving_over_cost(self) -> float | None:
        """A day's saving over the tuning time spent (None before any tuning)."""
        return self.saved_per_day / self.tuning_s if self.tuning_s else None

    def to_json(self) -> dict:
        return {"programs": [p.to_json() for p in self.programs], "seconds_per_day": self.seconds_per_day,
                "saved_per_day": self.saved_per_day, "tuning_s": self.tuning_s,
                "saving_over_cost": self.saving_over_cost}


def fleet_savings(db: TuningDatabase) -> FleetSavings:
    programs = [_saving(db, recording) for recording in db.recordings()]
    return FleetSavings(sorted(programs, key=lambda p: -p.saved_per_day))


def _saving(db: TuningDatabase, recording: Recording) -> ProgramSaving:
    decision = db.best(recording.program)
    reported = None if decision is None else decision.speedup
    verification = None if decision is None or decision.kept_default else db.verification(
        recording.program, decision.chosen.key)
    verified = None if verification is None else verification.speedup
    saved = recording.seconds_per_day * (1 - 1 / verified) if verification and verification.applies else 0.0
    return ProgramSaving(recording.name, recording.program, recording.seconds_per_day, reported,
                         verified, saved, db.tuning_seconds(recording.program))
