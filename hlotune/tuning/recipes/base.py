"""A recipe: how `tune()` builds one space's search from its options, in the order it asks: the
space's genes, the model that ranks candidates before the program's own measurements (the
prior), the strategy, and what wraps it once the database is open (a warm start, stages).

The base serves the flags, layout and all spaces as they are; each space's recipe overrides
what its space does differently. A strategy built here (a name's, a factory's, an Optuna
sampler's) gets every part; a Strategy given whole is used as it is.
"""

from __future__ import annotations

from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.spaces.space import SearchSpace
from hlotune.errors import HlotuneError
from hlotune.evaluation.registry import model_kind
from hlotune.evaluation.scorers import Scorer
from hlotune.kernels.program_model import load_kernel_program_model
from hlotune.tuning.fleet_portfolio import fleet_portfolio
from hlotune.tuning.models.base import CostModel
from hlotune.tuning.models.kernel_screen import KernelScreen
from hlotune.tuning.models.registry import PRIORS
from hlotune.tuning.models.scorer import ScorerCostModel, load_scorers, shipped_scorers
from hlotune.tuning.models.transfer import TransferCostModel, load_transfer
from hlotune.tuning.recipes.build import Build
from hlotune.tuning.storage import Database, local_stem
from hlotune.tuning.strategies.base import Strategy
from hlotune.tuning.strategies.chain import Chain
from hlotune.tuning.strategies.exhaustive import Exhaustive
from hlotune.tuning.strategies.optuna_search import OptunaStudy
from hlotune.tuning.strategies.parts import StrategyParts
from hlotune.tuning.strategies.registry import RANDOM


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
        """The prior the tuner's own name builds (models/registry.py), else a scorer's."""
        kind = model_kind(PRIORS, model) if isinstance(model, str) else None
        return scored_prior(self.build, model) if kind is None else kind.load(self.build, model)

    def search(self, space: SearchSpace, cost_model: CostModel | None) -> Strategy:
        """The strategy built over `space`, ranked by `cost_model`, or the one given whole."""
        kind, options = self.options.kind, self.options
        if kind is None:
            return options.strategy
        study = OptunaStudy.beside(local_stem(self.build.db_location), self.build.fingerprint)
        parts = StrategyParts(space, options.seed, cost_model, self.first_generation(), options.immigrants, study)
        return kind.factory(parts)

    def first_generation(self) -> str:
        """The search's first configs: those the options name, else the strategy's own draws."""
        return self.options.first_generation or RANDOM

    def learns_online(self) -> bool:
        """Whether the ranking model learns this program's measurements after every batch."""
        return self.options.online and self.options.ranked

    def wrapped(self, search: Strategy, space: SearchSpace, database: Database) -> Strategy:
        """`search` after the flags of up to `warm_start` configs that won on other programs
        here, in the space's stages; a Strategy given whole as it is."""
        if self.options.kind is None:
            return search
        if self.options.warm_start and self.warm_starts:
            search = _warm_started(search, space, self._winners(database))
        return self.staged(search)

    def _winners(self, database: Database) -> list[CompileConfig]:
        """Up to `warm_start` winners of other programs: the fleet portfolio's order
        (fleet_portfolio.py), or newest first."""
        size, fingerprint = self.options.warm_start, self.build.fingerprint
        if self.options.fleet_portfolio:
            return fleet_portfolio(database, fingerprint, size)
        return database.winners(fingerprint)[:size]

    def staged(self, search: Strategy) -> Strategy:
        """`search` and the stages after it: none here (the all space's kernel stages)."""
        return search


def shipped_prior(build: Build, name: str) -> ScorerCostModel:
    """`pretrained`: the shipped model of each collection the space needs."""
    return ScorerCostModel(shipped_scorers(build.options.space), build.layouts, build.options.seed)


def transfer_prior(build: Build, name: str) -> TransferCostModel:
    """`transfer[@DIR]` (models/transfer.py)."""
    return load_transfer(name, build.options.space)


def scored_prior(build: Build, model: str | Scorer) -> CostModel:
    """A model `hlotune eval` scores (a folder, pretrained:NAME, a baseline) or a scorer: a kernel
    program model screens compiled candidates, any other ranks them."""
    if isinstance(model, str) and (kernel_model := load_kernel_program_model(model)) is not None:
        return KernelScreen(build.spec, kernel_model, build.db_location, build.fingerprint,
                            build.options.settings)
    return ScorerCostModel(load_scorers(model, build.options.space), build.layouts, build.options.seed)


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
