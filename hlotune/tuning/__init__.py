"""Autotuning XLA configurations of a program on this machine, with a database of measurements.

`tune("zoo:mlp@small", space="flags", budget=32)` searches, measures and returns a TuneResult;
heavy imports (jax) wait until first use, so `hlotune --help` stays fast.
"""

from __future__ import annotations

from hlotune.lazy import lazy_attributes

_API = {
    "tune": ("hlotune.tuning.tuner", "tune"),
    "TuneOptions": ("hlotune.tuning.options", "TuneOptions"),
    "TuneResult": ("hlotune.tuning.tuner", "TuneResult"),
    "TuningDatabase": ("hlotune.tuning.database", "TuningDatabase"),
    "program_fingerprint": ("hlotune.tuning.fingerprint", "program_fingerprint"),
}

__all__ = list(_API)


__getattr__ = lazy_attributes(__name__, _API)
