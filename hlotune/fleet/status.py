"""One line per recorded program: how much it runs, and what the rule (storage/field.py) says of
its decision, with the field's trials behind that."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from hlotune.tuning.storage import Recording, TuningDatabase
from hlotune.tuning.storage.field import APPLIED, NOT_TUNED, ON_TRIAL

UNEXPORTABLE = "in process only"  # recorded, not exportable: tunable only where it runs


@dataclass(frozen=True)
class ProgramStatus:
    name: str  # as the user's code called it
    fingerprint: str
    shapes: str
    calls: int
    seconds: float  # recorded time: calls x the mean sampled call
    share: float  # of the fleet's recorded time
    decision: str  # the rule's state (field.py), or UNEXPORTABLE
    speedup: float | None  # the decision's, as its tune measured it (None: none on trial or applied)
    reason: str  # why it is tunable only in its process ("" otherwise)
    processes: int = 0  # that ran the decision's trial
    kept: int = 0  # of them, those whose trial kept it
    field_speedup: float | None = None  # the median over finished trials (None: none yet)
    field_spread: tuple[float, float] | None = None  # their lowest and highest

    def to_json(self) -> dict:
        return asdict(self)


def fleet_status(db: TuningDatabase) -> list[ProgramStatus]:
    """The recorded programs, most recorded time first."""
    recordings = db.recordings()
    total = sum(r.seconds for r in recordings)
    return [_status(db, r, total) for r in recordings]


def _status(db: TuningDatabase, recording: Recording, total: float) -> ProgramStatus:
    state = db.state(recording.fingerprint)
    decision = UNEXPORTABLE if state.state == NOT_TUNED and not recording.tunable else state.state
    speedup = state.decision.speedup if state.state in (APPLIED, ON_TRIAL) else None
    speedups = state.field.speedups
    return ProgramStatus(recording.name, recording.fingerprint, recording.shapes, recording.calls,
                         recording.seconds, recording.seconds / total if total else 0.0, decision,
                         speedup, recording.reason, len(state.field.trials), state.field.kept,
                         state.field.median, (speedups[0], speedups[-1]) if speedups else None)
