"""The tile space: each kernel's partitions in the default compile."""

from __future__ import annotations

from hlotune.compiler.xla.kernels import kernels_of
from hlotune.compiler.spaces.space import SearchSpace
from hlotune.evaluation.scorers import Scorer
from hlotune.tuning.models.base import CostModel
from hlotune.tuning.models.registry import DEFAULT_MODEL
from hlotune.tuning.models.scorer import load_scorers
from hlotune.tuning.options import TuneOptions
from hlotune.tuning.recipes.base import Recipe
from hlotune.tuning.strategies.base import Strategy
from hlotune.tuning.strategies.kernelwise import Kernelwise, rank_candidates
from hlotune.tuning.strategies.registry import RANKED


class TileRecipe(Recipe):
    """A ranked strategy named searches XTAT's way, kernel by kernel (`kernelwise`); any other
    searches the kernels' genes as a space. No prior: what a model ranks here is each kernel's
    candidates, inside the kernelwise search."""

    def space(self) -> SearchSpace:
        return SearchSpace("tile", self.build.layouts, allow_numerics_change=self.options.allow_numerics_change,
                           kernels=kernels_of(self.build.module))

    def prior(self) -> CostModel | None:
        return None

    def search(self, space: SearchSpace, cost_model: CostModel | None) -> Strategy:
        if self.kernelwise():
            return kernelwise_search(self.options, space, self.build.module)
        return super().search(space, cost_model)

    def kernelwise(self) -> bool:
        return self.options.strategy in RANKED

    def learns_online(self) -> bool:
        """The kernelwise search measures the model's favourites once: nothing to re-rank."""
        return super().learns_online() and not self.kernelwise()


def tile_model(options: TuneOptions) -> str | Scorer | None:
    """What ranks the tile search's candidates (here and in the all space's tile stage): the
    model named, but none by default, as the shipped tile model keeps less of the kernel time
    saved than a random order (strategies/kernelwise.py), nor for a CostModel, which ranks
    whole configs."""
    model = options.model
    return None if model == DEFAULT_MODEL or isinstance(model, CostModel) else model


def kernelwise_search(options: TuneOptions, space: SearchSpace, module: str) -> Kernelwise:
    """XTAT's search on the kernels of `module`: `per_kernel` candidates of each, ranked by the
    tile model named, else in a random order (strategies/kernelwise.py)."""
    model = tile_model(options)
    scorer = None if model is None else load_scorers(model, "tile")["tile"]
    return Kernelwise(space, rank_candidates(module, kernels_of(module), scorer, options.seed), options.per_kernel)
