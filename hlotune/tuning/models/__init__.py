"""The cost models of the tuning loop: what ranks a program's candidate configs before they are
measured (base.py), and learns from those measured.

The built-ins are exported here, each imported when first used.
"""

from __future__ import annotations

from hlotune.lazy import lazy_attributes

_API = {
    "CostModel": ("hlotune.tuning.models.base", "CostModel"),
    "PRIORS": ("hlotune.tuning.models.registry", "PRIORS"),
    "ScorerCostModel": ("hlotune.tuning.models.scorer", "ScorerCostModel"),
    "OnlineCostModel": ("hlotune.tuning.models.online", "OnlineCostModel"),
    "TransferCostModel": ("hlotune.tuning.models.transfer", "TransferCostModel"),
    "ModuleRoofline": ("hlotune.tuning.models.roofline", "ModuleRoofline"),
    "RankSum": ("hlotune.tuning.models.rank_sum", "RankSum"),
    "KernelScreen": ("hlotune.tuning.models.kernel_screen", "KernelScreen"),
}

__all__ = list(_API)

__getattr__ = lazy_attributes(__name__, _API)
