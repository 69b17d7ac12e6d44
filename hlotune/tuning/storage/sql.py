"""The tuning database: every measurement a tune makes, kept so that no config is measured twice.

One class over two backends, chosen by location: a file path is SQLite (sqlite.py, the embedded
default), a `postgresql://` URL a server many machines share (postgres.py). Each measured batch
is committed as soon as it lands, so a tune killed with -9 resumes where it stopped. Claims keep
tuners that share a database from measuring one config twice: a tuner claims the configs it is
about to measure, and another that wants them waits for their records (or takes a claim over
once it expired or its owner died). A write that fails (a full disk, a read-only file, a lost
server) is a one-line error; every batch committed before it stays.

Every row is keyed by the program's fingerprint, the hardware fingerprint and the jax/jaxlib
versions (schema.py); queries only ever return rows of this machine and compiler. The kernel
screen's compile cache (compile_cache.py), the exports and imports (exporting.py, importing.py), `hlotune.jit`'s
recordings (recordings.py), the fleet's tuning times and verifications (fleet_log.py) and the
field's trials with the rule that says what applies (field.py) are parts of the same class.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.measurement.machine import Machine, this_machine
from hlotune.compiler.measurement.measure import OK, BatchResult, Measurement
from hlotune.errors import HlotuneError
from hlotune.tuning.storage.base import Database, Decision, ProgramEntry, Record
from hlotune.tuning.storage.compile_cache import CompileCache
from hlotune.tuning.storage.connection import Connection
from hlotune.tuning.storage.exporting import Exporting
from hlotune.tuning.storage.field import Field
from hlotune.tuning.storage.importing import Importing
from hlotune.tuning.storage.fleet_log import FleetLog
from hlotune.tuning.storage.locations import connect
from hlotune.tuning.storage.recordings import Recordings

CONFIRM_PREFIX = "confirm:"  # claims on re-measuring a candidate beside the default
_CLAIM_TTL_S = 3600.0  # longer than any batch; a live owner's claim lapses only after this
_KEY = "machine = ? AND jax = ? AND jaxlib = ?"  # this machine and compiler


class TuningDatabase(CompileCache, Exporting, Importing, Recordings, FleetLog, Field, Database):
    """A tuning database (a SQLite file or a PostgreSQL URL); rows of other machines and
    compilers stay invisible."""

    def __init__(self, location: str | Path, *, machine: Machine | None = None) -> None:
        self.machine = machine or this_machine()
        self._scope = (self.machine.fingerprint, self.machine.jax, self.machine.jaxlib)
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._sql: Connection = connect(location)
        self.location = self._sql.location

    def close(self) -> None:
        self._sql.close()

    def __enter__(self) -> TuningDatabase:
        return self

    # Writing

    def register(self, fingerprint: str, name: str) -> None:
        with self._sql.writing():
            self._sql.execute(self._sql.insert_ignoring("programs", 3), (fingerprint, name, time.time()))

    def record(
        self, fingerprint: str, measurement: Measurement, *, default_ns: float, noise_floor: float
    ) -> Record:
        """Store one measurement (committed now) and return the record the database keeps:
        the first one stored if another process measured the same config meanwhile."""
        with self._sql.writing():
            self._insert(fingerprint, measurement, default_ns, noise_floor)
        return self.lookup(fingerprint, measurement.config.key)

    def record_batch(self, fingerprint: str, batch: BatchResult, *, with_default: bool) -> None:
        """Store a batch's candidates (and its reference default) in one commit, releasing
        their claims."""
        measurements = ([batch.defaults[0]] if with_default else []) + batch.measurements
        with self._sql.writing():
            for measurement in measurements:
                self._insert(fingerprint, measurement, batch.default_ns, batch.noise_floor,
                             _kernel_costs(measurement, batch.defaults[0]))
                self._sql.execute(f"DELETE FROM claims WHERE program = ? AND config = ? AND {_KEY}",
                                  (fingerprint, measurement.config.key, *self._scope))

    def claim(self, fingerprint: str, config_keys: list[str], ttl_s: float = _CLAIM_TTL_S) -> list[str]:
        """Claim the keys no live tuner holds; the keys this tuner holds now, in order."""
        now = time.time()
        with self._sql.writing():
            self._sql.lock_claims()  # one claimer at a time
            for config, owner, expires in self._sql.execute(
                f"SELECT config, owner, expires FROM claims WHERE program = ? AND {_KEY}",
                (fingerprint, *self._scope),
            ).fetchall():
                if expires < now or not _alive(owner):
                    self._sql.execute("DELETE FROM claims WHERE program = ? AND config = ? AND owner = ?",
                                      (fingerprint, config, owner))
            self._sql.executemany(self._sql.insert_ignoring("claims", 7),
                                  [(fingerprint, key, *self._scope, self.owner, now + ttl_s) for key in config_keys])
            held = {row[0] for row in self._sql.execute(
                "SELECT config FROM claims WHERE program = ? AND owner = ?", (fingerprint, self.owner)).fetchall()}
        return [key for key in config_keys if key in held]

    def release(self, fingerprint: str, keys: list[str]) -> None:
        with self._sql.writing():
            self._sql.executemany("DELETE FROM claims WHERE program = ? AND config = ? AND owner = ?",
                                  [(fingerprint, key, self.owner) for key in keys])

    def _insert(self, fingerprint: str, m: Measurement, default_ns: float, noise_floor: float,
                kernel_costs: dict[str, float] | None = None) -> None:
        self._sql.execute(
            self._sql.insert_ignoring("measurements", 16),
            (fingerprint, m.config.key, *self._scope, m.status, m.reason,
             m.median_ns if m.samples_ns else None, default_ns, _finite_or_none(noise_floor),
             json.dumps(m.samples_ns), m.compile_s, time.time(), _finite_or_none(m.max_rel_error),
             None if kernel_costs is None else json.dumps(kernel_costs), int(m.stopped)),
        )

    def decide(self, decision: Decision) -> None:
        with self._sql.writing():
            self._sql.execute(
                f"INSERT INTO decisions VALUES ({', '.join('?' * 15)})",
                (decision.fingerprint, *self._scope, decision.candidate.key, decision.chosen.key,
                 decision.default_ns, decision.candidate_ns, _finite_or_none(decision.noise_floor),
                 decision.strategy, decision.space, decision.timestamp, decision.found_speedup,
                 decision.confirmed_speedup, decision.rounds),
            )

    # Reading (this machine and compiler only)

    def lookup(self, fingerprint: str, config_key: str) -> Record | None:
        rows = self._records("AND config = ?", (fingerprint, config_key))
        return rows[0] if rows else None

    def records(self, fingerprint: str) -> list[Record]:
        """Every record of the program, in the order they were stored."""
        return self._records("", (fingerprint,))

    def _records(self, where: str, arguments: tuple) -> list[Record]:
        rows = self._sql.execute(
            "SELECT program, config, status, reason, median_ns, default_ns, noise_floor, samples, "
            "compile_s, timestamp, max_rel_error, kernel_costs, COALESCE(stopped, 0) FROM measurements "
            f"WHERE program = ? {where} AND {_KEY} ORDER BY {self._sql.order}",
            (*arguments, *self._scope),
        ).fetchall()
        return [Record(*row[:7], tuple(json.loads(row[7])), *row[8:11], row[11] and json.loads(row[11]),
                       bool(row[12])) for row in rows]

    def decision(self, fingerprint: str, candidate_key: str | None = None) -> Decision | None:
        """The latest decision on the program (about `candidate_key`, if given)."""
        return next(self._decisions(fingerprint, candidate_key), None)

    def best(self, fingerprint: str, *, allow_numerics_change: bool = False) -> Decision | None:
        """What the latest finished tune of the program chose here (None: never tuned here);
        a config that changes numerics only with `allow_numerics_change`."""
        return next((d for d in self._decisions(fingerprint)
                     if allow_numerics_change or not d.chosen.flags.changes_numerics), None)

    def carried(self, fingerprint: str) -> Decision | None:
        """The newest decision another jax/jaxlib release made for the program on this kind of
        machine, a candidate on trial after an upgrade (None: none, or one that kept the default)."""
        rows = self._sql.execute(
            "SELECT machine, jax, jaxlib, program, candidate, chosen, default_ns, candidate_ns, noise_floor, "
            "strategy, space, timestamp, found_speedup, confirmed_speedup, COALESCE(rounds, 0) FROM decisions "
            f"WHERE program = ? AND NOT (jax = ? AND jaxlib = ?) ORDER BY timestamp DESC, {self._sql.order} DESC",
            (fingerprint, self.machine.jax, self.machine.jaxlib)).fetchall()
        for machine, jax, jaxlib, program, candidate, chosen, *rest in rows:
            if dataclasses.replace(self.machine, jax=jax, jaxlib=jaxlib).fingerprint == machine:
                decision = Decision(program, _config(candidate), _config(chosen), *rest)
                return None if decision.kept_default else decision
        return None

    def decided_elsewhere(self, fingerprint: str) -> list[tuple[str, CompileConfig]]:
        rows = self._sql.execute(
            f"SELECT program, chosen FROM decisions WHERE program != ? AND {_KEY} ORDER BY {self._sql.order} DESC",
            (fingerprint, *self._scope)).fetchall()
        return [(program, _config(chosen)) for program, chosen in rows]

    def _decisions(self, fingerprint: str, candidate_key: str | None = None) -> Iterator[Decision]:
        """The program's decisions here, newest first."""
        query = (
            "SELECT program, candidate, chosen, default_ns, candidate_ns, noise_floor, strategy, "
            "space, timestamp, found_speedup, confirmed_speedup, COALESCE(rounds, 0) FROM decisions "
            f"WHERE program = ? AND {_KEY}"
        )
        arguments: tuple = (fingerprint, *self._scope)
        if candidate_key is not None:
            query, arguments = query + " AND candidate = ?", arguments + (candidate_key,)
        rows = self._sql.execute(f"{query} ORDER BY {self._sql.order} DESC", arguments).fetchall()
        for fingerprint, candidate, chosen, *rest in rows:
            yield Decision(fingerprint, _config(candidate), _config(chosen), *rest)

    def programs(self) -> list[ProgramEntry]:
        """Programs with records on this machine and compiler, most recently measured last."""
        rows = self._sql.execute(
            "SELECT p.fingerprint, p.name, COUNT(*), SUM(CASE WHEN m.status != ? THEN 1 ELSE 0 END) "
            "FROM programs p JOIN measurements m ON m.program = p.fingerprint "
            "WHERE m.machine = ? AND m.jax = ? AND m.jaxlib = ? GROUP BY p.fingerprint, p.name "
            "ORDER BY MAX(m.timestamp)",
            (OK, *self._scope),
        ).fetchall()
        return [ProgramEntry(fp, name, count, failed, self.decision(fp)) for fp, name, count, failed in rows]

    def name_of(self, fingerprint: str) -> str:
        row = self._sql.execute("SELECT name FROM programs WHERE fingerprint = ?", (fingerprint,)).fetchone() \
            or self._sql.execute("SELECT name FROM recordings WHERE program = ?", (fingerprint,)).fetchone()
        return row[0] if row else fingerprint

    def resolve(self, prefix: str) -> str:
        """The full fingerprint that starts with `prefix` (unique among this machine's programs,
        measured or recorded)."""
        known = [entry.fingerprint for entry in self.programs()] + [r.fingerprint for r in self.recordings()]
        matches = [fingerprint for fingerprint in dict.fromkeys(known) if fingerprint.startswith(prefix)]
        if len(matches) != 1:
            what = "no program" if not matches else f"{len(matches)} programs"
            raise HlotuneError(f"{self.location}: {what} with a fingerprint starting {prefix!r} on this machine")
        return matches[0]


def _alive(owner: str) -> bool:
    """Whether a claim's owner (HOST:PID:TOKEN) may still be measuring: a process of this host
    that no longer exists is not; one of another host is, until its claim expires."""
    host, pid, _ = owner.split(":")
    if host != socket.gethostname():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _config(key: str) -> CompileConfig:
    return CompileConfig.from_dict(json.loads(key))


def _finite_or_none(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _kernel_costs(measured: Measurement, reference: Measurement) -> dict[str, float] | None:
    """Each profiled kernel's time over its time in the batch's reference default, by name."""
    if not measured.kernel_ns or not reference.kernel_ns:
        return None
    return {name: ns / reference.kernel_ns[name] for name, ns in measured.kernel_ns.items()
            if reference.kernel_ns.get(name)}
