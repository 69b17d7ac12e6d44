"""The interface a strategy ranks with (`predict`) and the tuner teaches (`update`, after
measurements), as in MetaSchedule."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from hlotune.compiler.configs.config import CompileConfig
from hlotune.tuning.strategies.base import Trial


class CostModel(ABC):
    """Predicts which configs of one program run faster, and learns from measured ones."""

    @abstractmethod
    def predict(self, configs: Sequence[CompileConfig]) -> np.ndarray:
        """One score per config, lower = predicted faster (only the order matters)."""

    def update(self, trials: Sequence[Trial], default_ns: float) -> None:
        """Learn from `trials` (costs relative to the default, which ran in `default_ns`);
        a model that cannot learn ignores them."""

    def statistics(self) -> dict[str, int | float]:
        """What the model's own work cost, as fields of the tune's TuneResult (a kernel screen:
        the configs it compiled and the seconds it spent); none by default."""
        return {}

    def close(self) -> None:
        """Free what the model holds (a worker, a database); the tune that built it calls this
        when it ends, and a model that holds nothing ignores it."""
