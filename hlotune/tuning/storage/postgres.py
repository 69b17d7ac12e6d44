"""A tuning database on a PostgreSQL server, which many machines share.

Chosen by URL (`postgresql://user@host/dbname`, as `--db` or $HLOTUNE_DB). Every row is keyed
by machine and compiler as in SQLite, so machines of several kinds share one database without
mixing their measurements. Statements run in autocommit, each write group in one transaction;
claimers queue on a transaction-scoped advisory lock. Needs psycopg (`pip install
"hlotune[postgres]"`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from hlotune.errors import HlotuneError
from hlotune.extras import require
from hlotune.tuning.storage import schema
from hlotune.tuning.storage.connection import Connection, first_line

CONNECT_TIMEOUT_S = 10
_CLAIMS_LOCK = 0x686C6F74  # "hlot": one advisory lock for every claimer of the database
_VERSION_TABLE = "CREATE TABLE IF NOT EXISTS hlotune_schema (version INTEGER NOT NULL)"


class PostgresConnection(Connection):
    order = "seq"

    def __init__(self, url: str) -> None:
        psycopg = require("psycopg", "postgres", "a PostgreSQL tuning database")
        self.location = _without_password(url)
        self._errors = psycopg.Error
        try:
            self._db = psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
        except psycopg.Error as error:
            raise HlotuneError(f"{self.location}: cannot reach the tuning database ({first_line(error)})") from None
        self._migrate()

    def execute(self, sql: str, arguments: Sequence[Any] = ()) -> Any:
        try:
            return self._db.execute(_placeholders(sql), arguments)
        except self._errors as error:
            raise HlotuneError(f"{self.location}: {first_line(error)}") from None

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            with self._db.cursor() as cursor:
                cursor.executemany(_placeholders(sql), rows)

    @contextmanager
    def writing(self) -> Iterator[None]:
        try:
            with self._db.transaction():
                yield
        except self._errors as error:
            raise HlotuneError(f"{self.location}: cannot write the tuning database ({first_line(error)}); "
                               "every batch stored before this one is kept") from None

    def lock_claims(self) -> None:
        self._db.execute("SELECT pg_advisory_xact_lock(%s)", (_CLAIMS_LOCK,))

    def close(self) -> None:
        self._db.close()

    def _migrate(self) -> None:
        """Create the tables of this version; refuse a database a newer hlotune wrote."""
        with self.writing():
            self._db.execute("SELECT pg_advisory_xact_lock(%s)", (_CLAIMS_LOCK + 1,))  # one creator
            self._db.execute(_VERSION_TABLE)
            row = self._db.execute("SELECT MAX(version) FROM hlotune_schema").fetchone()
            if row[0] is not None and row[0] > schema.VERSION:
                raise HlotuneError(f"{self.location}: tuning database version {row[0]}, "
                                   f"this hlotune reads {schema.VERSION}")
            for statement in schema.statements(real="DOUBLE PRECISION", blob="BYTEA",
                                               seq=",\n    seq BIGSERIAL"):
                self._db.execute(statement)
            if row[0] is None:
                self._db.execute("INSERT INTO hlotune_schema VALUES (%s)", (schema.VERSION,))


def _placeholders(sql: str) -> str:
    """psycopg's `%s` for the portable `?` (no query holds a literal `?` or `%`)."""
    return sql.replace("?", "%s")


def _without_password(url: str) -> str:
    """The URL as messages may show it."""
    scheme, _, rest = url.partition("://")
    credentials, at, host = rest.rpartition("@")
    return f"{scheme}://{credentials.split(':')[0]}{at}{host}" if at else url
