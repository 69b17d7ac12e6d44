"""The evolutionary search: mutation and crossover of the best configs so far, its candidates
ranked by a cost model (the default search of `hlotune tune`)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.spaces.space import SearchSpace
from hlotune.tuning.strategies.base import Strategy
from hlotune.tuning.strategies.parts import StrategyParts

if TYPE_CHECKING:
    from hlotune.tuning.models.base import CostModel


class Evolutionary(Strategy):
    """Mutation and crossover of the best configs so far, optionally ranked by a cost model.

    Until `population` configs are known it draws configs at random. With a `cost_model`, each
    ask generates `pool` times more candidates than it returns and keeps those the model ranks
    fastest, as Ansor and MetaSchedule do: the model is cheap, measurements are not. A share
    `explore` of each batch is drawn from the other candidates at random (epsilon-greedy), so a
    model that is wrong about this program cannot keep the search from what it misjudges. In
    the first generation that share is `explore_first`, by default all of it, so the model is
    not asked there (a batch drawn wholly at random is `n` random configs): a prior can be
    wrong about the one option a program needs (XNNPACK's library fusions,
    `xla_cpu_experimental_ynn_fusion_type`, slowed edition 2's training programs by 3-20% on
    the median and sped several held-out ones up 1.2-1.4x), and a first generation ranked by
    it held no config with that option, so neither the online model nor evolution could learn
    it: random search beat the guided one live (docs/tuning.md). With `cover_first` the first
    generation is a covering design instead (SearchSpace.covering): every value of every gene in
    at least one config, where random draws leave a rare one (DOT, one config in 12) out of 8
    configs half the time. It did not keep more than random draws (docs/tuning.md). `first`
    configs (a portfolio, portfolio.py) are asked before any other, in order; the first
    generation's other configs are drawn as above. A share `immigrants` of each later batch is
    drawn at random from the whole space (a genetic algorithm's random immigrants), where the
    explored share above is still children of the best: a search whose first generation missed
    a program's move can still meet it.
    """

    name = "evolutionary"

    def __init__(
        self, space: SearchSpace, seed: int = 0, *, population: int = 8,
        cost_model: CostModel | None = None, pool: int = 8, explore: float = 0.1,
        explore_first: float = 1.0, cover_first: bool = False, first: Sequence[CompileConfig] = (),
        immigrants: float = 0.0,
    ) -> None:
        super().__init__()
        self._space, self._rng = space, random.Random(seed)
        self._population, self._cost_model, self._pool = population, cost_model, pool
        self._explore, self._explore_first, self._immigrants = explore, explore_first, immigrants
        self._cover_first, self._first = cover_first, list(first)

    @classmethod
    def from_parts(cls, parts: StrategyParts) -> Evolutionary:
        """`--strategy evolutionary`, ranked by the tune's cost model, from its first generation."""
        return cls(parts.space, parts.seed, cost_model=parts.cost_model,
                   cover_first=parts.first_generation == "covering", first=parts.first,
                   immigrants=parts.immigrants)

    def ask(self, n: int) -> list[CompileConfig]:
        firsts = []
        while self._first and len(firsts) < n:
            config = self._first.pop(0)
            if self._fresh(config):
                firsts.append(config)
        return firsts + self._generated(n - len(firsts))

    def _generated(self, n: int) -> list[CompileConfig]:
        """Up to `n` new configs: the first generation's, or children of the best so far."""
        parents = self._parents()
        evolve = len(parents) >= self._population
        if self._cover_first and len(self._asked) == 1:  # only the default: the first generation
            covering = self._space.covering(self._rng, n)
            if covering is not None:
                return [config for config in covering if self._fresh(config)]
        immigrants = round(n * self._immigrants) if evolve else 0
        share = self._explore if evolve else self._explore_first
        ranks = self._cost_model is not None and share < 1.0  # random() < 1.0: all explored
        bred = n - immigrants
        wanted = bred * self._pool if ranks else bred
        chosen = self._drawn(wanted, lambda: self._child(parents) if evolve else self._space.random_config(self._rng))
        if ranks and len(chosen) > bred:
            scores = np.asarray(self._cost_model.predict(chosen), dtype=np.float64)
            ranked = [chosen[i] for i in np.argsort(scores, kind="stable")]
            explored = sum(self._rng.random() < share for _ in range(bred))
            chosen = ranked[: bred - explored] + self._rng.sample(ranked[bred - explored:], explored)
        chosen += self._drawn(immigrants, lambda: self._space.random_config(self._rng), taken=chosen)
        return [config for config in chosen if self._fresh(config)]

    def _drawn(self, wanted: int, draw: Callable[[], CompileConfig],
               taken: Sequence[CompileConfig] = ()) -> list[CompileConfig]:
        """Up to `wanted` distinct configs from `draw`, none asked before or in `taken`."""
        candidates: dict[CompileConfig, None] = {}
        for _ in range(50 * wanted):
            if len(candidates) == wanted:
                break
            config = draw()
            if config not in self._asked and config not in taken:
                candidates[config] = None
        return list(candidates)

    def _parents(self) -> list[tuple[CompileConfig, float]]:
        """The `population` cheapest healthy configs told so far."""
        healthy = [(config, cost) for config, cost in self.costs.items() if math.isfinite(cost)]
        return sorted(healthy, key=lambda pair: pair[1])[: self._population]

    def _child(self, parents: list[tuple[CompileConfig, float]]) -> CompileConfig:
        first = self._tournament(parents)
        if self._rng.random() < 0.5:
            first = self._space.crossover(first, self._tournament(parents), self._rng)
        return self._space.mutate(first, self._rng)

    def _tournament(self, parents: list[tuple[CompileConfig, float]]) -> CompileConfig:
        """The better of two random parents: selection pressure without losing diversity."""
        a, b = self._rng.sample(parents, 2)
        return a[0] if a[1] <= b[1] else b[0]
