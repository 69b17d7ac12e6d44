"""Several cost models as one: a candidate several models like comes first."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hlotune.compiler.configs.config import CompileConfig
from hlotune.data.metrics import average_ranks
from hlotune.tuning.models.base import CostModel
from hlotune.tuning.strategies.base import Trial


class RankSum(CostModel):
    """Several models' rankings summed (each model's scores are in units of its own). Every
    model learns from what is measured."""

    def __init__(self, models: Sequence[CostModel]) -> None:
        self.models = list(models)

    def predict(self, configs: Sequence[CompileConfig]) -> np.ndarray:
        return np.sum([average_ranks(model.predict(configs)) for model in self.models], axis=0)

    def update(self, trials: Sequence[Trial], default_ns: float) -> None:
        for model in self.models:
            model.update(trials, default_ns)
