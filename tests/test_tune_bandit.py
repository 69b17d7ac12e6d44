"""The bandit over search strategies: slots follow the arms that find new bests, every arm
learns from every trial, and an arm misled by a wrong model cannot hold the search back."""

from __future__ import annotations

import random

import numpy as np
import pytest

from conftest import need
from hlotune.compiler.configs.config import DEFAULT_CONFIG, CompileConfig
from hlotune.compiler.spaces.space import SearchSpace
from hlotune.tuning.models.base import CostModel
from hlotune.tuning.strategies.bandit import Bandit
from hlotune.tuning.strategies.base import Strategy, Trial
from hlotune.tuning.strategies.evolutionary import Evolutionary
from hlotune.tuning.strategies.random_search import RandomSearch
from hlotune.tuning.strategies.registry import make_strategy


class _Listed(Strategy):
    """Asks the configs of a list in order."""

    def __init__(self, configs: list[CompileConfig], name: str) -> None:
        super().__init__()
        self._configs, self.name = iter(configs), name

    def ask(self, n: int) -> list[CompileConfig]:
        return [config for _, config in zip(range(n), self._configs) if self._fresh(config)]


def _run(strategy: Strategy, cost, batches: int = 6, size: int = 4) -> list[CompileConfig]:
    strategy.tell([Trial(DEFAULT_CONFIG, 1.0)])
    asked = []
    for _ in range(batches):
        batch = strategy.ask(size)
        strategy.tell([Trial(config, cost(config)) for config in batch])
        asked += batch
    return asked


def test_slots_follow_the_arm_that_finds_new_bests_and_every_arm_hears_every_trial():
    space, rng = SearchSpace("flags"), random.Random(0)
    configs = list(dict.fromkeys(space.random_config(rng) for _ in range(80)))[:60]
    finder, idler = _Listed(configs[:30], "finder"), _Listed(configs[30:], "idler")
    costs = {config: 0.9 - 0.02 * i for i, config in enumerate(configs[:30])}  # each a new best
    bandit = Bandit(finder, idler)
    asked = _run(bandit, lambda config: costs.get(config, 2.0))
    shares = bandit.shares()
    assert len(asked) == len(set(asked)) == 24 and sum(shares.values()) == 24
    assert shares["finder"] > 2 * shares["idler"] and shares["idler"] >= 2  # explored, not starved
    assert set(idler.costs) == set(finder.costs) == set(bandit.costs)


class _Inverted(CostModel):
    """A prior wrong about this program: it ranks the fastest configs last."""

    def __init__(self, cost) -> None:
        self._cost = cost

    def predict(self, configs):
        return -np.array([self._cost(config) for config in configs])


def _cost(config: CompileConfig) -> float:
    """Options on help, each a little; disabling passes hurts."""
    return 1.0 - 0.05 * len(config.flags.options) + 0.3 * len(config.flags.disabled_passes)


def test_an_arm_ranked_by_a_wrong_prior_cannot_hold_the_search_back():
    space = SearchSpace("flags")
    misled = Evolutionary(space, 0, cost_model=_Inverted(_cost), explore=0.0)
    alone = min(map(_cost, _run(misled, _cost)))
    bandit = Bandit(Evolutionary(space, 0, cost_model=_Inverted(_cost), explore=0.0), RandomSearch(space, 1))
    assert min(map(_cost, _run(bandit, _cost))) < alone
    assert bandit.shares()["random"] > bandit.shares()["evolutionary"]


def test_the_named_bandit_ranks_its_evolutionary_arm_and_needs_two_arms():
    need("optuna", install="pip install 'hlotune[optuna]'")
    bandit = make_strategy("bandit", SearchSpace("flags"), 0, cost_model=_Inverted(_cost))
    assert [arm.name for arm in bandit.arms] == ["evolutionary", "optuna", "random"]
    with pytest.raises(ValueError, match="two arms"):
        Bandit(RandomSearch(SearchSpace("flags")))
