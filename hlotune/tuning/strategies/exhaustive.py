"""Exhaustive search: every config of a fixed list, e.g. every single change of the default."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.spaces.space import SearchSpace
from hlotune.errors import HlotuneError
from hlotune.tuning.strategies.base import Strategy
from hlotune.tuning.strategies.parts import StrategyParts

if TYPE_CHECKING:
    from hlotune.tuning.models.base import CostModel


class Exhaustive(Strategy):
    """Every config of a fixed list: in order, or, with a `cost_model`, the model's favourites
    first, ranked again at every ask (so a model that learns reorders what is left: a pool of
    candidates screened by a model, and strategies compared offline on recorded configs)."""

    name = "exhaustive"

    def __init__(self, configs: Sequence[CompileConfig], cost_model: CostModel | None = None) -> None:
        super().__init__()
        self._pending = list(dict.fromkeys(configs))
        self._cost_model = cost_model

    @classmethod
    def around_default(
        cls, space: SearchSpace, *, depth: int = 1, limit: int = 4096, seed: int = 0
    ) -> Exhaustive:
        """Every config within `depth` changes of the default, nearest first (shuffled by the
        seed within a distance, so a budget that ends early samples each distance fairly)."""
        count = space.count_within(depth)
        if count > limit:
            raise HlotuneError(
                f"the {space.kind} space has {count} configs within {depth} change(s) of the "
                f"default, more than {limit} to enumerate: use the evolutionary, random or optuna strategy"
            )
        rng = random.Random(seed)
        configs = []
        for level in space.levels(depth):
            rng.shuffle(level)
            configs += level
        return cls(configs)

    @classmethod
    def from_parts(cls, parts: StrategyParts) -> Exhaustive:
        """`--strategy exhaustive`: every single change of the default."""
        return cls.around_default(parts.space, seed=parts.seed)

    def ask(self, n: int) -> list[CompileConfig]:
        if self._cost_model is not None and self._pending:
            scores = np.asarray(self._cost_model.predict(self._pending), dtype=np.float64)
            self._pending = [self._pending[i] for i in np.argsort(scores, kind="stable")]
        configs = []
        while self._pending and len(configs) < n:
            config = self._pending.pop(0)
            if self._fresh(config):
                configs.append(config)
        return configs
