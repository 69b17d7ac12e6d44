"""A program `hlotune.jit` recorded, as a program spec any command takes, and the one way a
recorded program is tuned.

The recording holds the program exported with its example arguments (recorder.py), so another
process or machine sharing the database tunes it without the user's code: it is written
beside the database as an `export:PATH` file, whose fingerprint is the recording's.
`tune_recorded` is what `hlotune tune NAME` and `fleet tune` both run.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from hlotune.atomic import write_bytes_atomic
from hlotune.errors import HlotuneError
from hlotune.programs.program import EXPORT_PREFIX
from hlotune.tuning.runners.registry import DEFAULT_RUNNER
from hlotune.tuning.storage import Recording, TuningDatabase, local_folder

if TYPE_CHECKING:
    from hlotune.tuning.options import TuneOptions
    from hlotune.tuning.result import TuneResult
    from hlotune.tuning.runners.base import Runner


def find_recording(db: TuningDatabase, name: str) -> Recording:
    """The recording `name` picks: its recorded name (module.function), or a fingerprint prefix."""
    recordings = db.recordings()
    matches = [r for r in recordings if r.name == name] or [r for r in recordings if r.fingerprint.startswith(name)]
    if len(matches) != 1:
        what = "no recorded program" if not matches else f"{len(matches)} recorded programs"
        raise HlotuneError(f"{db.location}: {what} named {name!r} or with a fingerprint starting so "
                           "(hlotune fleet status lists them)")
    return matches[0]


def recorded_spec(db: TuningDatabase, recording: Recording) -> str:
    """The `export:PATH` spec of the recorded program, its file written if needed."""
    exported = db.exported(recording.fingerprint)
    if exported is None:
        raise HlotuneError(f"{recording.name}: tunable only in the process that runs it ({recording.reason})")
    path = local_folder(db.location) / "programs" / f"recorded-{recording.fingerprint[:16]}.npz"
    if not Path(path).is_file():
        write_bytes_atomic(path, exported)
    return f"{EXPORT_PREFIX}{path}"


def tune_recorded(db: str, recording: Recording, options: TuneOptions, *, runner: str | Runner = DEFAULT_RUNNER,
                  progress: bool = False) -> TuneResult:
    """Tune the recorded program from the database `db` alone; the tune logs what it cost and
    times a kept config beside jax.jit (tuning/tuner.py)."""
    from hlotune.tuning.tuner import tune

    with TuningDatabase(db) as database:
        spec = recorded_spec(database, recording)
    return tune(spec, options=options, db=db, runner=runner, progress=progress)
