"""The fusion space: every fusion XLA made in the default compile, split or merged."""

from __future__ import annotations

from hlotune.compiler.spaces.fusion_space import fusion_choices
from hlotune.compiler.xla.kernels import kernels_of
from hlotune.compiler.spaces.space import SearchSpace
from hlotune.evaluation.scorers import Scorer
from hlotune.tuning.models.base import CostModel
from hlotune.tuning.models.roofline import ModuleRoofline
from hlotune.tuning.recipes.base import Recipe


class FusionRecipe(Recipe):
    """The default module's fusion decisions, ranked by the module roofline whatever model the
    options name (no learned fusion model ships), or by a CostModel given."""

    def space(self) -> SearchSpace:
        module = self.build.module
        return SearchSpace("fusion", self.build.layouts, allow_numerics_change=self.options.allow_numerics_change,
                           kernels=kernels_of(module), fusion=fusion_choices(module))

    def named_prior(self, model: str | Scorer) -> CostModel:
        return ModuleRoofline(self.build.module)
