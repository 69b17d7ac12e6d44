"""What `hlotune.jit` saw run: each program it compiled, exported so that another process or
machine can tune it without the user's code, and how often each process called it.

A recording is written once per program, machine and compiler: its name as the user's code
called it, its flat arguments' shapes, the export (None where the program cannot be exported,
with the reason). Calls are counted per process and a sample of them timed; each process
rewrites its own row as it goes, so the recorded time of a program is the sum over processes
of calls x the mean sampled call, and several processes record into one database at once.
"""

from __future__ import annotations

import time
import warnings
import zlib
from dataclasses import dataclass

from hlotune.tuning.storage.connection import Connection


@dataclass(frozen=True)
class Recording:
    """A recorded program and its calls over every process, on this machine and compiler."""

    fingerprint: str
    name: str  # module.qualname of the function jitted
    shapes: str  # its flat arguments' dtypes and shapes, e.g. "f32[8,128] i32[]"
    tunable: bool  # exported, so any process can tune it
    reason: str  # why not, where it is not ("" when tunable)
    first_seen: float
    calls: int
    seconds: float  # calls x the mean sampled call, summed over processes
    window_s: float = 0.0  # from the first process's first call to the last count written

    @property
    def program(self) -> str:
        """The old name of `fingerprint`, for one release."""
        warnings.warn("Recording.program is deprecated: use Recording.fingerprint", DeprecationWarning, stacklevel=2)
        return self.fingerprint

    @property
    def seconds_per_day(self) -> float:
        """The program's time a day at the recorded rate (0 before a window was recorded)."""
        return self.seconds / self.window_s * 86400 if self.window_s > 0 else 0.0


@dataclass(frozen=True)
class CallCount:
    """One process's calls of one program so far."""

    calls: int
    sampled: int  # calls timed
    sampled_s: float  # their total time
    since: float  # when the process first called it


class Recordings:
    """Part of TuningDatabase (sql.py), on its connection and scope."""

    _sql: Connection
    _scope: tuple[str, str, str]
    owner: str

    def record_program(self, fingerprint: str, name: str, shapes: str, exported: bytes | None,
                       reason: str = "") -> None:
        """Keep the program's first recording on this machine and compiler."""
        blob = None if exported is None else zlib.compress(exported)
        with self._sql.writing():
            self._sql.execute(self._sql.insert_ignoring("recordings", 9),
                              (fingerprint, *self._scope, name, shapes, blob, reason, time.time()))

    def recorded(self, fingerprint: str) -> bool:
        """Whether the program is recorded on this machine and compiler."""
        return self._sql.execute("SELECT 1 FROM recordings WHERE program = ? AND machine = ? AND jax = ? "
                                 "AND jaxlib = ?", (fingerprint, *self._scope)).fetchone() is not None

    def record_calls(self, fingerprint: str, count: CallCount) -> None:
        """This process's calls of the program so far (replacing what it wrote before)."""
        with self._sql.writing():
            self._sql.execute(
                f"INSERT INTO calls VALUES ({', '.join('?' * 10)}) "
                "ON CONFLICT (program, machine, jax, jaxlib, process) DO UPDATE SET calls = excluded.calls, "
                "sampled = excluded.sampled, sampled_s = excluded.sampled_s, updated = excluded.updated",
                (fingerprint, *self._scope, self.owner, count.calls, count.sampled, count.sampled_s,
                 count.since, time.time()),
            )

    def recordings(self) -> list[Recording]:
        """Every program recorded here, most recorded time first."""
        rows = self._sql.execute(
            "SELECT r.program, r.name, r.shapes, r.exported IS NOT NULL, r.reason, r.first_seen, "
            "COALESCE(SUM(c.calls), 0), "
            "COALESCE(SUM(CASE WHEN c.sampled > 0 THEN c.calls * c.sampled_s / c.sampled ELSE 0 END), 0), "
            "COALESCE(MAX(c.updated) - MIN(c.since), 0) "
            "FROM recordings r LEFT JOIN calls c ON c.program = r.program AND c.machine = r.machine "
            "AND c.jax = r.jax AND c.jaxlib = r.jaxlib "
            "WHERE r.machine = ? AND r.jax = ? AND r.jaxlib = ? "
            "GROUP BY r.program, r.name, r.shapes, r.exported, r.reason, r.first_seen",
            self._scope,
        ).fetchall()
        found = [Recording(p, n, s, bool(t), reason, first, int(calls), float(seconds), float(window))
                 for p, n, s, t, reason, first, calls, seconds, window in rows]
        return sorted(found, key=lambda r: (-r.seconds, r.first_seen))

    def recorded_hosts(self) -> int:
        """The hosts whose processes recorded calls here (a process is HOST:PID:TOKEN)."""
        rows = self._sql.execute("SELECT DISTINCT process FROM calls WHERE machine = ? AND jax = ? AND jaxlib = ?",
                                 self._scope).fetchall()
        return len({process.rsplit(":", 2)[0] for (process,) in rows})

    def exported(self, fingerprint: str) -> bytes | None:
        """The recorded program's export (None: not recorded here, or not exportable)."""
        row = self._sql.execute(
            "SELECT exported FROM recordings WHERE program = ? AND machine = ? AND jax = ? AND jaxlib = ?",
            (fingerprint, *self._scope)).fetchone()
        return None if row is None or row[0] is None else zlib.decompress(row[0])
