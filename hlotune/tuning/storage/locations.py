"""Where a tuning database is: a file path (SQLite) or a server's URL (PostgreSQL).

`--db` and $HLOTUNE_DB take either; `sqlite:///PATH` is the file spelled as a URL. Anything
else with a scheme is refused in one line. What a tune writes beside its database (exported
programs, Optuna studies) goes beside the file, or into ~/.cache/hlotune for a server.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from hlotune.errors import HlotuneError
from hlotune.tuning.storage.connection import Connection

POSTGRES_SCHEMES = ("postgresql", "postgres")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
CACHE = Path.home() / ".cache" / "hlotune"


def default_db_location() -> str:
    """$HLOTUNE_DB, or ~/.cache/hlotune/tuning.sqlite."""
    return os.environ.get("HLOTUNE_DB") or str(CACHE / "tuning.sqlite")


def scheme(location: str | Path) -> str | None:
    match = _SCHEME.match(str(location))
    return match.group(1).lower() if match else None


def sqlite_path(location: str | Path) -> Path | None:
    """The file of a SQLite location (None for a server)."""
    kind = scheme(location)
    if kind is None:
        return Path(location)
    return Path(str(location)[len("sqlite://"):]) if kind == "sqlite" else None


def local_folder(location: str | Path) -> Path:
    """Where files that go with the database are kept on this machine."""
    return local_stem(location).parent


def local_stem(location: str | Path) -> Path:
    """The database file, or for a server ~/.cache/hlotune/tuning.sqlite: what files that go
    with it are named after (an Optuna study: <stem>.optuna.sqlite)."""
    return sqlite_path(location) or CACHE / "tuning.sqlite"


def exists(location: str | Path) -> bool:
    """Whether a database may be there to read: a file that exists, or any server."""
    path = sqlite_path(location)
    return path is None or path.is_file()


def connect(location: str | Path) -> Connection:
    """An open connection to the database at `location`, its tables created or migrated."""
    kind = scheme(location)
    if kind in POSTGRES_SCHEMES:
        from hlotune.tuning.storage.postgres import PostgresConnection

        return PostgresConnection(str(location))
    path = sqlite_path(location)
    if path is None:
        raise HlotuneError(f"{location}: unknown database URL scheme {kind!r}: use a file path, "
                           "sqlite:///PATH or postgresql://...")
    from hlotune.tuning.storage.sqlite import SqliteConnection

    return SqliteConnection(path)
