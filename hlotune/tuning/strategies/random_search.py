"""Random search: the baseline every other strategy must beat."""

from __future__ import annotations

import random

from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.spaces.space import SearchSpace
from hlotune.tuning.strategies.base import Strategy
from hlotune.tuning.strategies.parts import StrategyParts


class RandomSearch(Strategy):
    """Independent random configs. Each gene moves with probability `rate`, or, with
    `near_default`, one to that many genes move."""

    name = "random"

    def __init__(
        self, space: SearchSpace, seed: int = 0, *, rate: float = 0.25, near_default: int | None = None
    ) -> None:
        super().__init__()
        self._space, self._rng = space, random.Random(seed)
        self._rate, self._near_default = rate, near_default

    @classmethod
    def from_parts(cls, parts: StrategyParts) -> RandomSearch:
        return cls(parts.space, parts.seed)

    def ask(self, n: int) -> list[CompileConfig]:
        configs: list[CompileConfig] = []
        for _ in range(100 * n):
            if len(configs) == n:
                break
            if self._near_default is None:
                config = self._space.random_config(self._rng, self._rate)
            else:
                config = self._space.near_default(self._rng, self._near_default)
            if self._fresh(config):
                configs.append(config)
        return configs
