"""The embedded backend: one SQLite file, shared by this machine's tuning processes.

WAL mode with a busy timeout lets several processes read while one writes; claimers queue on
`BEGIN IMMEDIATE`. A file written by an older hlotune is migrated in place.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hlotune.errors import HlotuneError
from hlotune.tuning.storage import schema
from hlotune.tuning.storage.connection import Connection

BUSY_TIMEOUT_S = 60.0


class SqliteConnection(Connection):
    order = "rowid"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S)
            self._db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            self._enter_wal()
            self._migrate()
        except sqlite3.DatabaseError as error:
            raise HlotuneError(f"{self.path}: not a tuning database ({error})") from None
        except OSError as error:
            raise HlotuneError(f"{self.path}: cannot open the tuning database ({error.strerror})") from None

    def execute(self, sql: str, arguments: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self._db.execute(sql, arguments)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._db.executemany(sql, rows)

    @contextmanager
    def writing(self) -> Iterator[None]:
        try:
            with self._db:
                yield
        except sqlite3.OperationalError as error:
            raise HlotuneError(f"{self.path}: cannot write the tuning database ({error}); "
                               "every batch stored before this one is kept") from None

    def lock_claims(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def close(self) -> None:
        self._db.close()

    def _enter_wal(self) -> None:
        """WAL mode, waiting out another connection switching the same new file: SQLite answers
        that switch's lock with "database is locked" at once, without its busy handler."""
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            try:
                self._db.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def _migrate(self) -> None:
        with self.writing():
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if not 0 <= version <= schema.VERSION:
                raise HlotuneError(
                    f"{self.path}: tuning database version {version}, this hlotune reads {schema.VERSION}"
                )
            if version == 1:  # its records keep max_rel_error NULL: not checked then
                self._db.execute("ALTER TABLE measurements ADD COLUMN max_rel_error REAL")
            if version in (1, 2):  # and kernel_costs NULL: not profiled
                self._db.execute("ALTER TABLE measurements ADD COLUMN kernel_costs TEXT")
            if version in (1, 2, 3):  # decisions taken before the final check had rounds
                for column in ("found_speedup REAL", "confirmed_speedup REAL", "rounds INTEGER"):
                    self._db.execute(f"ALTER TABLE decisions ADD COLUMN {column}")
            for statement in schema.statements(real="REAL", blob="BLOB", seq=""):
                self._db.execute(statement)
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(measurements)")}
            if "stopped" not in columns:  # before v6: NULL, measured before early stopping
                self._db.execute("ALTER TABLE measurements ADD COLUMN stopped INTEGER")
            self._db.execute(f"PRAGMA user_version = {schema.VERSION}")
