"""A program `hlotune.jit` recorded, as a program spec any command takes.

The recording holds the program exported with its example arguments (recorder.py), so another
process or machine sharing the database tunes it without the user's code: it is written
beside the database as an `export:PATH` file, whose fingerprint is the recording's.
"""

from __future__ import annotations

from pathlib import Path

from hlotune.atomic import write_bytes_atomic
from hlotune.errors import HlotuneError
from hlotune.programs.program import EXPORT_PREFIX
from hlotune.tuning.storage import Recording, TuningDatabase, local_folder


def find_recording(db: TuningDatabase, name: str) -> Recording:
    """The recording `name` picks: its recorded name (module.function), or a fingerprint prefix."""
    recordings = db.recordings()
    matches = [r for r in recordings if r.name == name] or [r for r in recordings if r.program.startswith(name)]
    if len(matches) != 1:
        what = "no recorded program" if not matches else f"{len(matches)} recorded programs"
        raise HlotuneError(f"{db.location}: {what} named {name!r} or with a fingerprint starting so "
                           "(hlotune fleet status lists them)")
    return matches[0]


def recorded_spec(db: TuningDatabase, recording: Recording) -> str:
    """The `export:PATH` spec of the recorded program, its file written if needed."""
    exported = db.exported(recording.program)
    if exported is None:
        raise HlotuneError(f"{recording.name}: tunable only in the process that runs it ({recording.reason})")
    path = local_folder(db.location) / "programs" / f"recorded-{recording.program[:16]}.npz"
    if not Path(path).is_file():
        write_bytes_atomic(path, exported)
    return f"{EXPORT_PREFIX}{path}"
