"""Where measurement batches run: a `Runner` (base.py) on this machine, on a Ray cluster's
workers, or a replay of recorded measurements, made by name from the registry (registry.py).

The built-ins are exported here, each imported when first used.
"""

from __future__ import annotations

from hlotune.lazy import lazy_attributes

_API = {
    "Runner": ("hlotune.tuning.runners.base", "Runner"),
    "RUNNERS": ("hlotune.tuning.runners.registry", "RUNNERS"),
    "LocalRunner": ("hlotune.tuning.runners.local", "LocalRunner"),
    "InProcessRunner": ("hlotune.tuning.runners.in_process", "InProcessRunner"),
    "RayRunner": ("hlotune.tuning.runners.ray", "RayRunner"),
    "ReplayRunner": ("hlotune.tuning.runners.replay", "ReplayRunner"),
}

__all__ = list(_API)

__getattr__ = lazy_attributes(__name__, _API)
