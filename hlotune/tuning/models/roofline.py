"""The fusion space's prior, as no learned fusion model ships: the rewritten module's roofline."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hlotune.compiler.configs.config import CompileConfig
from hlotune.errors import HlotuneError
from hlotune.tuning.models.base import CostModel


class ModuleRoofline(CostModel):
    """Scores fusion configs by the analytical roofline of the module each makes
    (hlo/costs.module_seconds). A config whose rewrite is invalid scores last."""

    def __init__(self, module: str) -> None:
        self._module = module

    def predict(self, configs: Sequence[CompileConfig]) -> np.ndarray:
        from hlotune.hlo.costs import module_seconds

        scores = []
        for config in configs:
            try:
                scores.append(module_seconds(config.kernels.apply(self._module)))
            except HlotuneError:
                scores.append(np.inf)
        return np.asarray(scores)
