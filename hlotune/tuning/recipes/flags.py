"""The flags space: XLA's options and passes, the one space without the program's layouts."""

from __future__ import annotations

from hlotune.compiler.space import SearchSpace
from hlotune.tuning.recipes.base import Recipe


class FlagsRecipe(Recipe):
    """Flags need no layouts (a scorer's prior reads them: Recipe.prior)."""

    def space(self) -> SearchSpace:
        return SearchSpace("flags", allow_numerics_change=self.options.allow_numerics_change)
