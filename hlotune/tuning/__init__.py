"""Autotuning XLA configurations of a program on this machine, with a database of measurements.

`tune("zoo:mlp@small", space="flags", budget=32)` searches, measures and returns a TuneResult;
heavy imports (jax) wait until first use, so `hlotune --help` stays fast.

The parts a tune is built from are public too, for plugging in your own (docs/extending.md):
a search `Strategy` (ask/tell, told `Trial`s) over a `SearchSpace` of `CompileConfig`s, built
from the tune's `StrategyParts` by a factory or given whole, a `Runner` that measures batches
(`LocalRunner` here, `ReplayRunner` from recorded samples, `open_runner` for a spec), a
`CostModel` that ranks candidates, a `Database` of measurements, `Callback`s that watch every
batch, and the `Tuner` loop joining them.
"""

from __future__ import annotations

from hlotune.lazy import lazy_attributes

_API = {
    "tune": ("hlotune.tuning.tuner", "tune"),
    "Tuner": ("hlotune.tuning.loop", "Tuner"),
    "TuneOptions": ("hlotune.tuning.options", "TuneOptions"),
    "TuneResult": ("hlotune.tuning.result", "TuneResult"),
    "TuningDatabase": ("hlotune.tuning.storage", "TuningDatabase"),
    "program_fingerprint": ("hlotune.tuning.fingerprint", "program_fingerprint"),
    # extension points (docs/extending.md)
    "Strategy": ("hlotune.tuning.strategies.base", "Strategy"),
    "StrategyParts": ("hlotune.tuning.strategies.parts", "StrategyParts"),
    "Trial": ("hlotune.tuning.strategies.base", "Trial"),
    "Runner": ("hlotune.tuning.runners.base", "Runner"),
    "LocalRunner": ("hlotune.tuning.runners.local", "LocalRunner"),
    "ReplayRunner": ("hlotune.tuning.runners.replay", "ReplayRunner"),
    "open_runner": ("hlotune.tuning.runners.registry", "open_runner"),
    "CostModel": ("hlotune.tuning.models.base", "CostModel"),
    "Database": ("hlotune.tuning.storage", "Database"),
    "Callback": ("hlotune.tuning.callbacks", "Callback"),
    "CompileConfig": ("hlotune.compiler.configs.config", "CompileConfig"),
    "SearchSpace": ("hlotune.compiler.spaces.space", "SearchSpace"),
    "MeasureSettings": ("hlotune.compiler.measurement.measure", "MeasureSettings"),
    "BatchResult": ("hlotune.compiler.measurement.measure", "BatchResult"),
}

__all__ = list(_API)


__getattr__ = lazy_attributes(__name__, _API)
