"""The process's side of `hlotune.jit`: what it records in the tuning database, and the rule
that recording never breaks the user's program.

Each program is recorded once, at its first compile (storage/recordings.py). Its calls are
counted in memory, and some are timed from their arguments' readiness to their outputs' (the
others return as soon as jax dispatched them, as under jax.jit): the calls `next_sample` names,
2, 4, 8, ... up to `SAMPLE_EVERY`, then one in `SAMPLE_EVERY`, and every call of a trial
(trial.py). The counts and the trials are written at most every `FLUSH_S` seconds and when the
process exits, so a call costs an increment and a kill -9 loses at most the last interval's
counts, never a recording or a decision.

Every database operation goes through `_guarded`: a database that is missing, locked, corrupt
or unreachable is warned about once per location, and the program runs as jax.jit would.
"""

from __future__ import annotations

import atexit
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from hlotune.progress import note
from hlotune.tuning.storage import CallCount, TuningDatabase, exists
from hlotune.tuning.storage.connection import first_line
from hlotune.tuning.storage.field import DecisionState, FieldStats

if TYPE_CHECKING:
    from hlotune.fleet.trial import ProcessTrial

SAMPLE_EVERY = 64  # calls per timed call, once past the first few (a timed call waits for its
# outputs, which costs a pipelined loop its overlap once)
FLUSH_S = 30.0  # seconds between writes of the counts
T = TypeVar("T")


def next_sample(calls: int) -> int:
    """The number of the call to time next, after `calls` calls: 2, 4, 8, ... SAMPLE_EVERY,
    then every SAMPLE_EVERY-th (128 calls time 7: 2, 4, 8, 16, 32, 64 and 128)."""
    if calls < SAMPLE_EVERY:
        return max(2, 1 << calls.bit_length())
    return (calls // SAMPLE_EVERY + 1) * SAMPLE_EVERY


class ProgramCalls:
    """One program's calls in this process."""

    __slots__ = ("fingerprint", "calls", "sampled", "sampled_s", "since", "next_sample")

    def __init__(self, fingerprint: str) -> None:
        self.fingerprint = fingerprint
        self.calls = self.sampled = 0
        self.sampled_s = 0.0
        self.since = time.time()
        self.next_sample = next_sample(0)

    def timed(self, seconds: float) -> None:
        """One more call, timed at `seconds`."""
        self.calls += 1
        self.sampled += 1
        self.sampled_s += seconds
        self.next_sample = next_sample(self.calls)

    def count(self) -> CallCount:
        return CallCount(self.calls, self.sampled, self.sampled_s, self.since)


def timed_call(run: Callable[[], Any], args: tuple) -> tuple[Any, float]:
    """`run()`'s outputs and its seconds to completion; its arguments are waited for first, so
    calls still queued before it (jax dispatches asynchronously) do not count as its time."""
    import jax

    jax.block_until_ready(args)
    started = time.perf_counter()
    out = jax.block_until_ready(run())
    return out, time.perf_counter() - started


class Recorder:
    """The recordings of one database location in this process (one per location: see
    `recorder_for`)."""

    def __init__(self, location: str | Path) -> None:
        self.location = str(location)
        self.programs: dict[str, ProgramCalls] = {}
        self._db: TuningDatabase | None = None
        self._broken = False  # warned: the database is not used again in this process
        self._flushed = time.monotonic()
        self._announced: set[str] = set()
        self.trials: dict[str, ProcessTrial] = {}  # by fingerprint: each program's trial in this process
        atexit.register(self.flush)

    def record(self, fingerprint: str, name: str, shapes: str, exported: Callable[[], bytes] | None,
               reason: str) -> ProgramCalls:
        """Record the program once; its counter for this process. `exported` makes its export's
        bytes (the arguments with it: megabytes for a training step), called only where the
        database does not hold the program yet."""
        if fingerprint not in self.programs:
            self.programs[fingerprint] = ProgramCalls(fingerprint)
            self._guarded(lambda db: db.recorded(fingerprint) or db.record_program(
                fingerprint, name, shapes, None if exported is None else exported(), reason))
        return self.programs[fingerprint]

    def state(self, fingerprint: str, allow_numerics_change: bool) -> DecisionState | None:
        """The rule's word on the program's decision (storage/field.py); None where the
        database cannot say (a file that does not exist holds none, and is not made by looking)."""
        if self._db is None and not exists(self.location):
            return None
        return self._guarded(lambda db: db.state(fingerprint, allow_numerics_change=allow_numerics_change))

    def field(self, fingerprint: str, config_key: str) -> FieldStats | None:
        """The config's trials in other processes (None where the database cannot say)."""
        return self._guarded(lambda db: db.field(fingerprint, config_key, excluding=db.owner))

    @property
    def broken(self) -> bool:
        return self._broken

    def announce(self, key: str, message: str) -> None:
        """Say `message` on stderr, once per `key` (a program's fingerprint) and process."""
        if key not in self._announced:
            self._announced.add(key)
            note(f"hlotune: {message}")

    def timed(self, calls: ProgramCalls, run: Callable[[], Any], args: tuple) -> Any:
        """`run()` timed to completion, as one sampled call of the program (`timed_call`)."""
        out, seconds = timed_call(run, args)
        calls.timed(seconds)
        self.flush_if_due()
        return out

    def flush_if_due(self) -> None:
        if time.monotonic() - self._flushed > FLUSH_S:
            self.flush()

    def flush(self) -> None:
        """Write every program's counts and trials so far."""
        self._flushed = time.monotonic()
        counted = [calls for calls in self.programs.values() if calls.calls]
        trials = [(fingerprint, trial.outcome()) for fingerprint, trial in self.trials.items() if trial.pairs]
        if counted:
            self._guarded(lambda db: [db.record_calls(c.fingerprint, c.count()) for c in counted])
        if trials:
            self._guarded(lambda db: db.record_trials(trials))

    def _guarded(self, action: Callable[[TuningDatabase], T]) -> T | None:
        if self._broken:
            return None
        try:
            if self._db is None:
                self._db = TuningDatabase(self.location)
            return action(self._db)
        except Exception as error:  # any failure of the database: the program runs on
            self._broken = True
            warnings.warn(f"hlotune: the tuning database {self.location} cannot be used "
                          f"({first_line(error)}); programs compile as jax.jit would",
                          RuntimeWarning, stacklevel=4)
            return None


_RECORDERS: dict[str, Recorder] = {}


def recorder_for(location: str | Path) -> Recorder:
    """The process's recorder of `location`, shared by every hlotune.jit function using it."""
    key = str(location)
    if key not in _RECORDERS:
        _RECORDERS[key] = Recorder(key)
    return _RECORDERS[key]

