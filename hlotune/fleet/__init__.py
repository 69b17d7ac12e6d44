"""The deployment loop, XTAT's AutoFDO for JAX: record what runs, tune it, trial the decision in each process, apply it.

Every program `hlotune.jit` recorded in a tuning database, its share of the recorded time, the
decisions tuned for it, and the trial each process runs before keeping one (docs/fleet.md).

`jit` and `install` record and apply (jitted.py, recorder.py, trial.py); `tune_recorded` tunes one
recorded program (recorded.py) and `fleet_tune` a fleet within one budget, divided as one of
the `ALLOCATIONS` says (tune.py, allocation.py); `fleet_status` and `fleet_savings` read what
the field measured (status.py, savings.py).
"""

from __future__ import annotations

from hlotune.lazy import lazy_attributes

_API = {
    "jit": ("hlotune.fleet.jitted", "jit"),
    "install": ("hlotune.fleet.jitted", "install"),
    "uninstall": ("hlotune.fleet.jitted", "uninstall"),
    "ProcessTrial": ("hlotune.fleet.trial", "ProcessTrial"),
    "find_recording": ("hlotune.fleet.recorded", "find_recording"),
    "tune_recorded": ("hlotune.fleet.recorded", "tune_recorded"),
    "fleet_tune": ("hlotune.fleet.tune", "fleet_tune"),
    "ALLOCATIONS": ("hlotune.fleet.allocation", "ALLOCATIONS"),
    "fleet_status": ("hlotune.fleet.status", "fleet_status"),
    "fleet_savings": ("hlotune.fleet.savings", "fleet_savings"),
}

__all__ = list(_API)


__getattr__ = lazy_attributes(__name__, _API, renamed={"Trial": "ProcessTrial"})
