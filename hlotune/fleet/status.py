"""One line per recorded program: how much it runs and whether a decision applies to it."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from hlotune.tuning.storage import Recording, TuningDatabase

APPLIED, DEFAULT_KEPT, NOT_TUNED, IN_PROCESS = "applied", "default kept", "not tuned", "in process only"
NO_VERIFIED_GAIN = "no verified gain"  # beside jax.jit, where the program runs: not applied


@dataclass(frozen=True)
class ProgramStatus:
    name: str  # as the user's code called it
    fingerprint: str
    shapes: str
    calls: int
    seconds: float  # recorded time: calls x the mean sampled call
    share: float  # of the fleet's recorded time
    decision: str  # APPLIED, NO_VERIFIED_GAIN, DEFAULT_KEPT, NOT_TUNED or IN_PROCESS
    speedup: float | None  # the decision's, as its tune measured it (None: none applies)
    reason: str  # why it is tunable only in its process ("" otherwise)

    def to_json(self) -> dict:
        return asdict(self)


def fleet_status(db: TuningDatabase) -> list[ProgramStatus]:
    """The recorded programs, most recorded time first."""
    recordings = db.recordings()
    total = sum(r.seconds for r in recordings)
    return [_status(db, r, total) for r in recordings]


def _status(db: TuningDatabase, recording: Recording, total: float) -> ProgramStatus:
    decision = db.best(recording.program)
    if decision is None:
        state, speedup = (NOT_TUNED if recording.tunable else IN_PROCESS), None
    elif decision.kept_default:
        state, speedup = DEFAULT_KEPT, None
    elif (verified := db.verification(recording.program, decision.chosen.key)) and not verified.applies:
        state, speedup = NO_VERIFIED_GAIN, None
    else:
        state, speedup = APPLIED, decision.speedup
    return ProgramStatus(recording.name, recording.program, recording.shapes, recording.calls,
                         recording.seconds, recording.seconds / total if total else 0.0, state,
                         speedup, recording.reason)
