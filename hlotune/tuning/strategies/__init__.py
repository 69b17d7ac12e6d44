"""Search strategies behind one ask/tell interface (base.py), each in its own module, built by
name from the registry (registry.py) with what the tune hands them (parts.py).

The built-ins and their parts are exported here, each imported when first used
(`from hlotune.tuning.strategies import Evolutionary`), as optuna.samplers exports its samplers.
"""

from __future__ import annotations

from hlotune.lazy import lazy_attributes

_API = {
    "Strategy": ("hlotune.tuning.strategies.base", "Strategy"),
    "Trial": ("hlotune.tuning.strategies.base", "Trial"),
    "StrategyParts": ("hlotune.tuning.strategies.parts", "StrategyParts"),
    "STRATEGIES": ("hlotune.tuning.strategies.registry", "STRATEGIES"),
    "Evolutionary": ("hlotune.tuning.strategies.evolutionary", "Evolutionary"),
    "RandomSearch": ("hlotune.tuning.strategies.random_search", "RandomSearch"),
    "Exhaustive": ("hlotune.tuning.strategies.exhaustive", "Exhaustive"),
    "Chain": ("hlotune.tuning.strategies.chain", "Chain"),
    "Bandit": ("hlotune.tuning.strategies.bandit", "Bandit"),
    "OptunaTPE": ("hlotune.tuning.strategies.optuna_search", "OptunaTPE"),
    "OptunaGP": ("hlotune.tuning.strategies.optuna_search", "OptunaGP"),
    "Kernelwise": ("hlotune.tuning.strategies.kernelwise", "Kernelwise"),
    "Staged": ("hlotune.tuning.strategies.staged", "Staged"),
}

__all__ = list(_API)

__getattr__ = lazy_attributes(__name__, _API)
