"""What the kernel screen (tuning/models/kernel_screen.py) learnt of a config by compiling it:
its thunks, and each thunk's module text once, so a resumed tune compiles nothing twice."""

from __future__ import annotations

import json
import zlib

from hlotune.tuning.storage.connection import Connection

_KEY = "program = ? AND config = ? AND machine = ? AND jax = ? AND jaxlib = ?"


class CompileCache:
    """Part of TuningDatabase (sql.py), on its connection and scope."""

    _sql: Connection
    _scope: tuple[str, str, str]

    def record_compiled(self, fingerprint: str, config_key: str, thunks: list | None, modules: dict[str, str]) -> None:
        """A config as compiled: its thunks (JSON-able; None: it failed to compile) and the
        module text of each thunk not stored yet."""
        with self._sql.writing():
            self._sql.execute(self._sql.insert_ignoring("compiles", 6),
                              (fingerprint, config_key, *self._scope, None if thunks is None else json.dumps(thunks)))
            self._sql.executemany(self._sql.insert_ignoring("thunk_modules", 2),
                                  [(f, zlib.compress(text.encode())) for f, text in modules.items()])

    def compiled(self, fingerprint: str, config_key: str) -> tuple[bool, list | None]:
        """(known, thunks) of a config compiled before on this machine and compiler."""
        row = self._sql.execute(f"SELECT thunks FROM compiles WHERE {_KEY}",
                                (fingerprint, config_key, *self._scope)).fetchone()
        return (False, None) if row is None else (True, None if row[0] is None else json.loads(row[0]))

    def thunk_modules(self, fingerprints: list[str]) -> dict[str, str]:
        found = {}
        for fingerprint in fingerprints:
            row = self._sql.execute("SELECT module FROM thunk_modules WHERE fingerprint = ?", (fingerprint,)).fetchone()
            if row is not None:
                found[fingerprint] = zlib.decompress(row[0]).decode()
        return found
