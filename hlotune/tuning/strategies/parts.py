"""What tune() hands a strategy it builds, so that a strategy named, an Optuna sampler's and
one given as a factory (docs/extending.md) are built alike: over the tune's own SearchSpace
(the layout, tile, fusion and all spaces need the program, which only the tune has), with its
cost model, seed and first configs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hlotune.compiler.configs.config import CompileConfig
    from hlotune.compiler.spaces.space import SearchSpace
    from hlotune.tuning.models.base import CostModel
    from hlotune.tuning.strategies.base import Strategy
    from hlotune.tuning.strategies.optuna_search import OptunaStudy


@dataclass(frozen=True)
class StrategyParts:
    """The space to search and what the tune says about searching it."""

    space: SearchSpace
    seed: int = 0
    cost_model: CostModel | None = None  # ranks candidates; None: nothing to rank with
    first_generation: str = "random"  # registry.FIRST_GENERATIONS
    immigrants: float = 0.0  # the share of each later batch drawn from the whole space
    study: OptunaStudy | None = None  # where an optuna strategy stores its study

    @property
    def first(self) -> list[CompileConfig]:
        """The configs to ask before any other: the shipped portfolio's that the space can
        express (portfolio.py) for the "portfolio" generation, none for one the strategy
        draws itself."""
        if self.first_generation != "portfolio":
            return []
        from hlotune.tuning.portfolio import load_portfolio  # heavy: the CLI imports this module

        return load_portfolio().within(self.space)


# What builds a strategy from the parts: a Strategy subclass whose __init__ takes them, a
# built-in's `from_parts`, or any function.
StrategyFactory = Callable[[StrategyParts], "Strategy"]
