"""The tuning database: every measurement a tune makes, kept so that no config is measured twice.

As in TVM MetaSchedule, search (strategies) and storage are separate: the tuner looks a config
up before measuring it, and each measured batch is committed as soon as it lands, so a tune
killed with -9 resumes where it stopped. SQLite in WAL mode with a busy timeout lets several
tuning processes share one file, and claims keep them from measuring one config twice: a tuner
claims the configs it is about to measure, and another that wants them waits for their records
(or takes a claim over once it expired or its owner died). A write that fails (a full disk, a
read-only file) is a one-line error; every batch committed before it stays.

A runtime means something only for one program, on one machine, under one compiler, so every
record is keyed by the program's fingerprint (fingerprint.py), the config's canonical key, the
hardware fingerprint and the jax/jaxlib versions; queries only ever return records of this
machine and compiler. The tables:

- `measurements`: one row per (program, config, machine, compiler): status, reason, median,
  samples, whether early stopping cut its samples short (measure.py), and the default's median
  and noise floor of its batch (a runtime is compared with the default measured beside it:
  batches minutes apart drift);
- `compiles` and `thunk_modules`: what the kernel screen (kernel_screen.py) learnt of a config
  by compiling it, its thunks, and each thunk's module text once, so a resumed tune compiles
  nothing twice;
- `decisions`: what each finished tune chose after re-measuring its finalists against the
  default (final_check.py), with the speedup measured after choosing, the one the rounds that
  chose it saw, and the search's; `best()` and the exports read the latest one.
"""

from __future__ import annotations

import json
import math
import os
import socket
import sqlite3
import time
import uuid
import zlib
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from hlotune.compiler.config import CompileConfig
from hlotune.compiler.machine import Machine, this_machine
from hlotune.compiler.measure import OK, BatchResult, Measurement
from hlotune.errors import HlotuneError

EXPORT_FORMATS = ("json", "compiler_options", "xla_flags")
_SCHEMA_VERSION = 6  # 2: measurements.max_rel_error; 3: .kernel_costs; 4: decisions' final check;
# 5: compiles and thunk_modules (the kernel screen's cache); 6: measurements.stopped
_BUSY_TIMEOUT_S = 60.0
CONFIRM_PREFIX = "confirm:"  # claims on re-measuring a candidate beside the default
_CLAIM_TTL_S = 3600.0  # longer than any batch; a live owner's claim lapses only after this

_SCHEMA = """
CREATE TABLE IF NOT EXISTS programs (
    fingerprint TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    first_seen REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS measurements (
    program TEXT NOT NULL,
    config TEXT NOT NULL,
    machine TEXT NOT NULL,
    jax TEXT NOT NULL,
    jaxlib TEXT NOT NULL,
    status TEXT NOT NULL,
    reason TEXT NOT NULL,
    median_ns REAL,
    default_ns REAL NOT NULL,
    noise_floor REAL,
    samples TEXT NOT NULL,
    compile_s REAL NOT NULL,
    timestamp REAL NOT NULL,
    max_rel_error REAL,
    kernel_costs TEXT,
    stopped INTEGER,
    UNIQUE (program, config, machine, jax, jaxlib)
);
CREATE TABLE IF NOT EXISTS decisions (
    program TEXT NOT NULL,
    machine TEXT NOT NULL,
    jax TEXT NOT NULL,
    jaxlib TEXT NOT NULL,
    candidate TEXT NOT NULL,
    chosen TEXT NOT NULL,
    default_ns REAL NOT NULL,
    candidate_ns REAL,
    noise_floor REAL,
    strategy TEXT NOT NULL,
    space TEXT NOT NULL,
    timestamp REAL NOT NULL,
    found_speedup REAL,
    confirmed_speedup REAL,
    rounds INTEGER
);
CREATE INDEX IF NOT EXISTS decisions_by_program ON decisions (program, machine, jax, jaxlib);
CREATE TABLE IF NOT EXISTS compiles (
    program TEXT NOT NULL,
    config TEXT NOT NULL,
    machine TEXT NOT NULL,
    jax TEXT NOT NULL,
    jaxlib TEXT NOT NULL,
    thunks TEXT,
    UNIQUE (program, config, machine, jax, jaxlib)
);
CREATE TABLE IF NOT EXISTS thunk_modules (
    fingerprint TEXT PRIMARY KEY,
    module BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS claims (
    program TEXT NOT NULL,
    config TEXT NOT NULL,
    machine TEXT NOT NULL,
    jax TEXT NOT NULL,
    jaxlib TEXT NOT NULL,
    owner TEXT NOT NULL,
    expires REAL NOT NULL,
    UNIQUE (program, config, machine, jax, jaxlib)
);
"""


def default_db_path() -> Path:
    """$HLOTUNE_DB, or ~/.cache/hlotune/tuning.sqlite."""
    return Path(os.environ.get("HLOTUNE_DB") or Path.home() / ".cache" / "hlotune" / "tuning.sqlite")


@dataclass(frozen=True)
class Record:
    """One config of one program as measured on this machine."""

    program: str  # fingerprint
    config_key: str
    status: str
    reason: str
    median_ns: float | None
    default_ns: float  # the default's median in the same batch
    noise_floor: float | None  # of that batch
    samples: tuple[int, ...]
    compile_s: float
    timestamp: float
    max_rel_error: float | None = None  # outputs vs the default's (None: measured before v2)
    # profiled kernels' times relative to the same kernels under the batch's default, by name
    # (None: not profiled)
    kernel_costs: dict[str, float] | None = None
    stopped: bool = False  # early stopping cut its samples short (never, before v6)

    @property
    def config(self) -> CompileConfig:
        return CompileConfig.from_dict(json.loads(self.config_key))

    @property
    def ok(self) -> bool:
        return self.status == OK

    @property
    def cost(self) -> float:
        """Runtime relative to the default of its batch; inf when it failed."""
        return self.median_ns / self.default_ns if self.ok and self.median_ns else math.inf


@dataclass(frozen=True)
class Decision:
    """A finished tune: its finalists re-measured beside the default (final_check.py), the
    candidate they chose, and what was kept.

    `default_ns` and `candidate_ns` come from the batch that reports the speedup: for a kept
    candidate, one measured after choosing it (unbiased by the choice); when the default was
    kept, the candidate's last choosing round (its search batch, when none raced). Decisions
    stored before the final check had rounds hold None, None and 0 in the last three fields,
    and their speedup is the choosing batch's."""

    program: str
    candidate: CompileConfig
    chosen: CompileConfig  # the candidate, or the default when its gain was within the noise
    default_ns: float
    candidate_ns: float | None  # None when the candidate failed on re-measurement
    noise_floor: float | None  # of the rounds that chose (final_check.py derives the bar from it)
    strategy: str
    space: str
    timestamp: float
    found_speedup: float | None = None  # the candidate's in the search (flattered by it)
    confirmed_speedup: float | None = None  # over the rounds that chose it (None: it failed)
    rounds: int = 0  # choosing rounds

    @property
    def kept_default(self) -> bool:
        return self.chosen.is_default

    @property
    def speedup(self) -> float:
        """Of the chosen config over the default (1 when the default was kept)."""
        return 1.0 if self.kept_default else self.default_ns / self.candidate_ns


@dataclass(frozen=True)
class ProgramEntry:
    fingerprint: str
    name: str
    records: int  # on this machine and compiler
    failed: int
    best: Decision | None


@dataclass(frozen=True)
class Export:
    text: str
    note: str  # what the format cannot say ("" when nothing is lost)


class Database(ABC):
    """What a tuner needs from storage (MetaSchedule's Database): look a config up before
    measuring it, store each measured batch at once, and keep each tune's decision."""

    @abstractmethod
    def register(self, fingerprint: str, name: str) -> None: ...

    @abstractmethod
    def lookup(self, fingerprint: str, config_key: str) -> Record | None: ...

    @abstractmethod
    def records(self, fingerprint: str) -> list[Record]:
        """Every record of the program, in the order they were stored."""

    @abstractmethod
    def record_batch(self, fingerprint: str, batch: BatchResult, *, with_default: bool) -> None:
        """Store a batch's candidates (and its reference default) in one commit."""

    @abstractmethod
    def decision(self, fingerprint: str, candidate_key: str | None = None) -> Decision | None:
        """The latest decision of the program (about `candidate_key`, if given)."""

    @abstractmethod
    def decide(self, decision: Decision) -> None: ...

    def claim(self, fingerprint: str, config_keys: list[str]) -> list[str]:
        """The keys this tuner may measure now; the others are being measured by another tuner
        sharing the database (none, for a database only one tuner uses)."""
        return list(config_keys)

    def release(self, fingerprint: str, keys: list[str]) -> None:
        """Give up claims this tuner holds (a database without claims has none)."""

    def winners(self, fingerprint: str) -> list[CompileConfig]:
        """Configs that tunes of other programs chose here, newest first (XTAT's transfer);
        none for a database that keeps no decisions."""
        return []


class TuningDatabase(Database):
    """A tuning database file (SQLite); records of other machines and compilers stay invisible."""

    def __init__(self, path: str | Path, *, machine: Machine | None = None) -> None:
        self.path = Path(path)
        self.machine = machine or this_machine()
        self._scope = (self.machine.fingerprint, self.machine.jax, self.machine.jaxlib)
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S)
            self._db.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")
            self._enter_wal()
            self._migrate()
        except sqlite3.DatabaseError as error:
            raise HlotuneError(f"{self.path}: not a tuning database ({error})") from None

    def _enter_wal(self) -> None:
        """WAL mode, waiting out another connection switching the same new file: SQLite answers
        that switch's lock with "database is locked" at once, without its busy handler."""
        deadline = time.monotonic() + _BUSY_TIMEOUT_S
        while True:
            try:
                self._db.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def _migrate(self) -> None:
        with self._writing():
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, 1, 2, 3, 4, 5, _SCHEMA_VERSION):
                raise HlotuneError(
                    f"{self.path}: tuning database version {version}, this hlotune reads {_SCHEMA_VERSION}"
                )
            if version == 1:  # its records keep max_rel_error NULL: not checked then
                self._db.execute("ALTER TABLE measurements ADD COLUMN max_rel_error REAL")
            if version in (1, 2):  # and kernel_costs NULL: not profiled
                self._db.execute("ALTER TABLE measurements ADD COLUMN kernel_costs TEXT")
            if version in (1, 2, 3):  # decisions taken before the final check had rounds
                for column in ("found_speedup REAL", "confirmed_speedup REAL", "rounds INTEGER"):
                    self._db.execute(f"ALTER TABLE decisions ADD COLUMN {column}")
            for statement in _SCHEMA.split(";"):
                self._db.execute(statement)
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(measurements)")}
            if "stopped" not in columns:  # before v6: NULL, measured before early stopping
                self._db.execute("ALTER TABLE measurements ADD COLUMN stopped INTEGER")
            self._db.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """One transaction; a failed write rolls it back and becomes a one-line error."""
        try:
            with self._db:
                yield
        except sqlite3.OperationalError as error:
            raise HlotuneError(f"{self.path}: cannot write the tuning database ({error}); "
                               "every batch stored before this one is kept") from None

    def __enter__(self) -> TuningDatabase:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # Writing

    def register(self, fingerprint: str, name: str) -> None:
        with self._writing():
            self._db.execute(
                "INSERT OR IGNORE INTO programs VALUES (?, ?, ?)", (fingerprint, name, time.time())
            )

    def record(
        self, fingerprint: str, measurement: Measurement, *, default_ns: float, noise_floor: float
    ) -> Record:
        """Store one measurement (committed now) and return the record the database keeps:
        the first one stored if another process measured the same config meanwhile."""
        with self._writing():
            self._insert(fingerprint, measurement, default_ns, noise_floor)
        return self.lookup(fingerprint, measurement.config.key)

    def record_batch(self, fingerprint: str, batch: BatchResult, *, with_default: bool) -> None:
        """Store a batch's candidates (and its reference default) in one commit, releasing
        their claims."""
        measurements = ([batch.defaults[0]] if with_default else []) + batch.measurements
        with self._writing():
            for measurement in measurements:
                self._insert(fingerprint, measurement, batch.default_ns, batch.noise_floor,
                             _kernel_costs(measurement, batch.defaults[0]))
                self._db.execute("DELETE FROM claims WHERE program = ? AND config = ? AND machine = ? "
                                 "AND jax = ? AND jaxlib = ?", (fingerprint, measurement.config.key, *self._scope))

    def record_compiled(self, fingerprint: str, config_key: str, thunks: list | None, modules: dict[str, str]) -> None:
        """A config as compiled: its thunks (JSON-able; None: it failed to compile) and the
        module text of each thunk not stored yet."""
        with self._writing():
            self._db.execute("INSERT OR IGNORE INTO compiles VALUES (?, ?, ?, ?, ?, ?)",
                             (fingerprint, config_key, *self._scope, None if thunks is None else json.dumps(thunks)))
            self._db.executemany("INSERT OR IGNORE INTO thunk_modules VALUES (?, ?)",
                                 [(f, zlib.compress(text.encode())) for f, text in modules.items()])

    def compiled(self, fingerprint: str, config_key: str) -> tuple[bool, list | None]:
        """(known, thunks) of a config compiled before on this machine and compiler."""
        row = self._db.execute("SELECT thunks FROM compiles WHERE program = ? AND config = ? AND machine = ? "
                               "AND jax = ? AND jaxlib = ?", (fingerprint, config_key, *self._scope)).fetchone()
        return (False, None) if row is None else (True, None if row[0] is None else json.loads(row[0]))

    def thunk_modules(self, fingerprints: list[str]) -> dict[str, str]:
        found = {}
        for fingerprint in fingerprints:
            row = self._db.execute("SELECT module FROM thunk_modules WHERE fingerprint = ?", (fingerprint,)).fetchone()
            if row is not None:
                found[fingerprint] = zlib.decompress(row[0]).decode()
        return found

    def claim(self, fingerprint: str, config_keys: list[str], ttl_s: float = _CLAIM_TTL_S) -> list[str]:
        """Claim the keys no live tuner holds; the keys this tuner holds now, in order."""
        now = time.time()
        with self._writing():
            self._db.execute("BEGIN IMMEDIATE")  # one claimer at a time
            for config, owner, expires in self._db.execute(
                "SELECT config, owner, expires FROM claims WHERE program = ? AND machine = ? AND jax = ? "
                "AND jaxlib = ?", (fingerprint, *self._scope)
            ).fetchall():
                if expires < now or not _alive(owner):
                    self._db.execute("DELETE FROM claims WHERE program = ? AND config = ? AND owner = ?",
                                     (fingerprint, config, owner))
            self._db.executemany(
                "INSERT OR IGNORE INTO claims VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(fingerprint, key, *self._scope, self.owner, now + ttl_s) for key in config_keys],
            )
            held = {row[0] for row in self._db.execute(
                "SELECT config FROM claims WHERE program = ? AND owner = ?", (fingerprint, self.owner))}
        return [key for key in config_keys if key in held]

    def _insert(self, fingerprint: str, m: Measurement, default_ns: float, noise_floor: float,
                kernel_costs: dict[str, float] | None = None) -> None:
        self._db.execute(
            "INSERT OR IGNORE INTO measurements VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (fingerprint, m.config.key, *self._scope, m.status, m.reason,
             m.median_ns if m.samples_ns else None, default_ns, _finite_or_none(noise_floor),
             json.dumps(m.samples_ns), m.compile_s, time.time(), _finite_or_none(m.max_rel_error),
             None if kernel_costs is None else json.dumps(kernel_costs), int(m.stopped)),
        )

    def decide(self, decision: Decision) -> None:
        with self._writing():
            self._db.execute(
                "INSERT INTO decisions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (decision.program, *self._scope, decision.candidate.key, decision.chosen.key,
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
        rows = self._db.execute(
            "SELECT program, config, status, reason, median_ns, default_ns, noise_floor, samples, "
            "compile_s, timestamp, max_rel_error, kernel_costs, COALESCE(stopped, 0) FROM measurements "
            f"WHERE program = ? {where} AND machine = ? AND jax = ? AND jaxlib = ? ORDER BY rowid",
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

    def release(self, fingerprint: str, keys: list[str]) -> None:
        with self._writing():
            self._db.executemany("DELETE FROM claims WHERE program = ? AND config = ? AND owner = ?",
                                 [(fingerprint, key, self.owner) for key in keys])

    def winners(self, fingerprint: str) -> list[CompileConfig]:
        rows = self._db.execute(
            "SELECT chosen FROM decisions WHERE program != ? AND machine = ? AND jax = ? AND jaxlib = ? "
            "ORDER BY rowid DESC", (fingerprint, *self._scope)).fetchall()
        chosen = [_config(key) for key in dict.fromkeys(key for (key,) in rows)]
        return [config for config in chosen if not config.is_default]

    def _decisions(self, fingerprint: str, candidate_key: str | None = None) -> Iterator[Decision]:
        """The program's decisions here, newest first."""
        query = (
            "SELECT program, candidate, chosen, default_ns, candidate_ns, noise_floor, strategy, "
            "space, timestamp, found_speedup, confirmed_speedup, COALESCE(rounds, 0) FROM decisions "
            "WHERE program = ? AND machine = ? AND jax = ? AND jaxlib = ?"
        )
        arguments: tuple = (fingerprint, *self._scope)
        if candidate_key is not None:
            query, arguments = query + " AND candidate = ?", arguments + (candidate_key,)
        for fingerprint, candidate, chosen, *rest in self._db.execute(query + " ORDER BY rowid DESC", arguments).fetchall():
            yield Decision(fingerprint, _config(candidate), _config(chosen), *rest)

    def programs(self) -> list[ProgramEntry]:
        """Programs with records on this machine and compiler, most recently measured last."""
        rows = self._db.execute(
            "SELECT p.fingerprint, p.name, COUNT(*), SUM(m.status != ?), MAX(m.timestamp) "
            "FROM programs p JOIN measurements m ON m.program = p.fingerprint "
            "WHERE m.machine = ? AND m.jax = ? AND m.jaxlib = ? GROUP BY p.fingerprint "
            "ORDER BY MAX(m.timestamp)",
            (OK, *self._scope),
        ).fetchall()
        return [ProgramEntry(fp, name, count, failed, self.decision(fp)) for fp, name, count, failed, _ in rows]

    def name_of(self, fingerprint: str) -> str:
        row = self._db.execute("SELECT name FROM programs WHERE fingerprint = ?", (fingerprint,)).fetchone()
        return row[0] if row else fingerprint

    def resolve(self, prefix: str) -> str:
        """The full fingerprint that starts with `prefix` (unique among this machine's programs)."""
        matches = [entry.fingerprint for entry in self.programs() if entry.fingerprint.startswith(prefix)]
        if len(matches) != 1:
            what = "no program" if not matches else f"{len(matches)} programs"
            raise HlotuneError(f"{self.path}: {what} with a fingerprint starting {prefix!r} on this machine")
        return matches[0]

    # Export

    def export(self, fingerprint: str, fmt: str) -> Export:
        """The chosen config of the latest tune as JSON, a compiler_options dict (JSON) or an
        XLA_FLAGS string. Layouts and per-kernel options are not XLA options: the two flag formats
        drop them, and the note says so."""
        if fmt not in EXPORT_FORMATS:
            raise HlotuneError(f"unknown export format {fmt!r}: use {', '.join(EXPORT_FORMATS)}")
        best = self.decision(fingerprint)
        if best is None:
            raise HlotuneError(f"{self.name_of(fingerprint)}: not tuned on this machine yet (run hlotune tune)")
        config = best.chosen
        numerics = ("the tuned config changes numerics by design (it was searched with "
                    "--allow-numerics-change)" if config.flags.changes_numerics else "")
        if fmt == "json":
            return Export(json.dumps(self._export_json(best), indent=1), numerics)
        sites, kernels = len(config.layout.layouts), len(config.kernels.partitions) + len(config.kernels.fusion)
        parts = [f"{sites} tensor layout(s)"] * bool(sites) + [f"{kernels} kernel option(s)"] * bool(kernels)
        unsaid = (
            f"the tuned config also sets {' and '.join(parts)}, which XLA options cannot "
            "express: use --format json and hlotune.compiled(fn, *args, config=...), or "
            "TuneResult.compiled() in Python"
            if parts else ""
        )
        note = "; ".join(text for text in (numerics, unsaid) if text)
        if fmt == "compiler_options":
            return Export(json.dumps(config.flags.compiler_options(), sort_keys=True), note)
        return Export(config.flags.xla_flags(), note)

    def _export_json(self, best: Decision) -> dict:
        return {
            "program": self.name_of(best.program),
            "fingerprint": best.program,
            "machine": self.machine.to_dict(),
            "config": best.chosen.to_dict(),
            "numerics": best.chosen.numerics,
            "compiler_options": best.chosen.flags.compiler_options(),
            "xla_flags": best.chosen.flags.xla_flags(),
            "kept_default": best.kept_default,
            "speedup": best.speedup,
            "found_speedup": best.found_speedup,
            "confirmed_speedup": best.confirmed_speedup,
            "rounds": best.rounds,
            "noise": best.noise_floor,
            "candidate": best.candidate.to_dict(),
            "strategy": best.strategy,
            "space": best.space,
            "timestamp": best.timestamp,
        }


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
