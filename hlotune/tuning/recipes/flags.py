"""The flags space: XLA's options and passes, the one space without the program's layouts."""

from __future__ import annotations

from hlotune.compiler.spaces.space import SearchSpace
from hlotune.tuning.recipes.base import Recipe
from hlotune.tuning.strategies.registry import PORTFOLIO


class FlagsRecipe(Recipe):
    """Flags need no layouts (a scorer's prior reads them: Recipe.prior)."""

    def space(self) -> SearchSpace:
        return SearchSpace("flags", allow_numerics_change=self.options.allow_numerics_change)

    def first_generation(self) -> str:
        """The evolutionary search starts from the shipped portfolio, the only space's (the
        Tuner v4 benchmark: TPE from the portfolio kept less than from its own draws)."""
        if self.options.first_generation is None and self.options.strategy == "evolutionary":
            return PORTFOLIO
        return super().first_generation()
