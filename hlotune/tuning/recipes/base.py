"""A recipe: how `tune()` builds one space's search from its options, in the order it asks: the
space's genes, the model that ranks candidates before the program's own measurements (the
prior), the strategy, and what wraps it once the database is open (a warm start, stages).

The base serves the flags, layout and all spaces as they are; each space's recipe overrides
what its space does differently. A strategy built here (a name's, a factory's, an Optuna
sampler's) gets every part; a Strategy given whole is used as it is.
"""

from __future__ import annotations

from hlotune.compiler.config import CompileConfig
from hlotune.compiler.space import SearchSpace
from hlotune.errors import HlotuneError
from hlotune.evaluation.scorers import Scorer
from hlotune.kernels.program_model import load_kernel_program_model
from hlotune.tuning.models.base import CostModel
from hlotune.tuning.models.kernel_screen import KernelScreen
from hlotune.tuning.models.scorer import ScorerCostModel, load_scorers
from hlotune.tuning.models.transfer import TRANSFER, load_transfer
from hlotune.tuning.recipes.build import Build
from hlotune.tuning.storage import Database, local_stem
from hlotune.tuning.strategies.base import Strategy
from hlotune.tuning.strategies.chain import Chain
from hlotune.tuning.strategies.exhaustive import Exhaustive
from hlotune.tuning.strategies.optuna_search import OptunaStudy
from hlotune.tuning.strategies.parts import StrategyParts


class Recipe:
    """The parts of one space's search."""

    warm_starts = True  # whether other programs' winning flags are tried first

    def __init__(self, build: Build) -> None:
        self.build, self.options = build, build.options

    def space(self) -> SearchSpace:
        return SearchSpace(self.options.space, self.build.layouts,
                           allow_numerics_change=self.options.allow_numerics_change)

    def prior(self) -> CostModel | None:
        """What ranks candidates before the program's own measurements: the options' CostModel,
        or the one their model names."""
        model = self.options.ranking_model
        if model is None or isinstance(model, CostModel):
            return model
        return self.named_prior(model)

    def named_prior(self, model: str | Scorer) -> CostModel:
        """Scorers (pretrained, a folder, a baseline), the transfer model, or a kernel program
        model screening compiled candidates."""
        if _is_transfer(model):
            return load_transfer(model, self.options.space)
        if isinstance(model, str) and (kernel_model := load_kernel_program_model(model)) is not None:
            build = self.build
            build.screen = KernelScreen(build.spec, kernel_model, build.db_location, build.fingerprint,
                                        self.options.settings)
            return build.screen
        return ScorerCostModel(load_scorers(model, self.options.space), self.build.layouts, self.options.seed)

    def search(self, space: SearchSpace, cost_model: CostModel | None) -> Strategy:
        """The strategy built over `space`, ranked by `cost_model`, or the one given whole."""
        kind, options = self.options.kind, self.options
        if kind is None:
            return options.strategy
        study = OptunaStudy.beside(local_stem(self.build.db_location), self.build.fingerprint)
        return kind.factory(StrategyParts(space, options.seed, cost_model, options.first, options.immigrants, study))

    def wrapped(self, search: Strategy, space: SearchSpace, database: Database) -> Strategy:
        """`search` after the flags of up to `warm_start` configs that won on other programs
        here, in the space's stages; a Strategy given whole as it is."""
        if self.options.kind is None:
            return search
        if self.options.warm_start and self.warm_starts:
            winners = database.winners(self.build.fingerprint)[:self.options.warm_start]
            search = _warm_started(search, space, winners)
        return self.staged(search)

    def staged(self, search: Strategy) -> Strategy:
        """`search` and the stages after it: none here (the all space's kernel stages)."""
        return search


def _is_transfer(model: str | Scorer) -> bool:
    return isinstance(model, str) and model.partition("@")[0] == TRANSFER


def _warm_started(search: Strategy, space: SearchSpace, winners: list[CompileConfig]) -> Strategy:
    """`search`, after the flags of configs that won elsewhere (layouts name another program's
    tensors) that this space can express."""
    firsts = []
    for winner in winners:
        try:
            firsts.append(space.config(space.genome(CompileConfig(flags=winner.flags))))
        except HlotuneError:  # an option outside this space (numerics-changing, not allowed)
            continue
    return Chain(Exhaustive(firsts), search, name=search.name) if firsts else search
