"""The SQL dialect one tuning database speaks: what SQLite and PostgreSQL do differently.

`TuningDatabase` (sql.py) writes its queries once, with `?` placeholders and portable SQL; a
connection runs them on its server and answers for the few places the two differ: how a
transaction starts and fails, how claimers queue, which column orders rows as they were stored,
and how an insert skips a row already there.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any


class Connection(ABC):
    """One open connection to a tuning database; `location` names it in every message."""

    location: str
    order: str  # the column that orders a table's rows as they were stored

    @abstractmethod
    def execute(self, sql: str, arguments: Sequence[Any] = ()) -> Any:
        """Run one statement; a cursor with fetchone() and fetchall()."""

    @abstractmethod
    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...

    @abstractmethod
    def writing(self) -> AbstractContextManager[None]:
        """One transaction; a failed write rolls it back and becomes a one-line HlotuneError."""

    @abstractmethod
    def lock_claims(self) -> None:
        """Inside `writing()`: wait until no other claimer is inside its own."""

    @abstractmethod
    def close(self) -> None: ...

    def insert_ignoring(self, table: str, values: int) -> str:
        """An insert of one row of `values` columns that leaves a row with the same unique key
        as it is (portable: SQLite 3.24 and PostgreSQL 9.5 both take ON CONFLICT)."""
        return f"INSERT INTO {table} VALUES ({', '.join('?' * values)}) ON CONFLICT DO NOTHING"


def first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__

