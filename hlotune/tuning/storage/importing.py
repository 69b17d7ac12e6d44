"""Decisions from elsewhere: flags found by hand, or a decision tuned on a staging machine of
the same kind, stored for a program this database knows.

The file is what `hlotune db export --format json` prints, or at least
`{"program": NAME_OR_FINGERPRINT, "config": {...}}` written by hand. Its speedup, where given,
is the one it claims; an imported decision is trialled in every process like any other, so the
claim is shown, never trusted. A file exported on another kind of machine
(its "machine" names another CPU, core count or system) is refused: its runtimes say nothing
of this one; one from another jax release of the same kind is imported, and trialled here.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.measurement.machine import Machine
from hlotune.errors import HlotuneError
from hlotune.tuning.storage.base import Decision

IMPORTED = "import"  # the strategy of an imported decision
HARDWARE = ("cpu", "cores", "system")  # a machine's kind; its jax release may differ (a trial decides)


class Importing:
    """Part of TuningDatabase (sql.py)."""

    machine: Machine

    def import_decision(self, path: str | Path) -> Decision:
        """Store the decision the file holds for a program recorded or measured here."""
        values = _read(Path(path))
        theirs = {key: (values.get("machine") or {}).get(key) for key in HARDWARE}
        ours = {key: getattr(self.machine, key) for key in HARDWARE}
        if values.get("machine") and theirs != ours:
            raise HlotuneError(f"{path}: exported on another kind of machine ({_kind(theirs)}; this one is "
                               f"{_kind(ours)}): its decision says nothing of this one")
        config = CompileConfig.from_dict(values["config"])
        if config.is_default:
            raise HlotuneError(f"{path}: the config is XLA's default: there is nothing to import")
        speedup = float(values.get("speedup") or 1.0)
        decision = Decision(self.program_named(values.get("fingerprint") or values["program"]), config,
                            config, speedup, 1.0, None, IMPORTED, values.get("space", "flags"), time.time())
        self.decide(decision)
        return decision

    def program_named(self, name: str) -> str:
        """The fingerprint of the program recorded under `name` here, or that a fingerprint
        prefix picks."""
        named = {r.fingerprint for r in self.recordings() if r.name == name}
        if len(named) == 1:
            return named.pop()
        return self.resolve(name)


def _kind(machine: dict) -> str:
    return f"{machine['cpu']}, {machine['cores']} cores, {machine['system']}"


def _read(path: Path) -> dict:
    try:
        values = json.loads(path.read_text())
    except FileNotFoundError:
        raise HlotuneError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise HlotuneError(f"{path}: not a decision file ({str(error).splitlines()[0]})") from None
    if not isinstance(values, dict) or "config" not in values or not ("program" in values or "fingerprint" in values):
        raise HlotuneError(f'{path}: not a decision file: it needs "program" (a name or fingerprint) and "config"')
    if not isinstance(values["config"], dict):
        raise HlotuneError(f'{path}: "config" must be an object of flags, layout and kernels')
    return values
