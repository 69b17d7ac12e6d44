"""The tuner that learns while it measures: the per-program model, its blend with a prior,
exploration, model-screened pools and the warm start from other programs' winners."""

from __future__ import annotations

import numpy as np

from hlotune.compiler.config import DEFAULT_CONFIG, CompileConfig
from hlotune.compiler.flags import FlagConfig
from hlotune.compiler.space import SearchSpace
from hlotune.data.builtin import ROOT
from hlotune.tuning.cost_model import CostModel
from hlotune.tuning.database import Decision, TuningDatabase
from hlotune.tuning.online import ChoiceModel, OnlineCostModel
from hlotune.tuning.replay import ReplayRunner
from hlotune.tuning.strategies import Evolutionary, Exhaustive, Trial
from hlotune.tuning.tuner import tune

NO_XNNPACK = CompileConfig(FlagConfig.from_dict({"xla_cpu_use_xnnpack": False}))
NO_FUSION = CompileConfig(FlagConfig.from_dict({"xla_disable_hlo_passes": ["fusion"]}))
BOTH = CompileConfig(FlagConfig.from_dict({"xla_cpu_use_xnnpack": False, "xla_disable_hlo_passes": ["fusion"]}))
O1 = CompileConfig(FlagConfig.from_dict({"xla_backend_optimization_level": 1}))


class _Backwards(CostModel):
    """A prior that is exactly wrong: it prefers what is slow."""

    def __init__(self, truth: dict) -> None:
        self.truth = truth

    def predict(self, configs):
        return -np.array([self.truth.get(c, 1.0) for c in configs])


def test_the_choice_model_learns_which_choices_cost_time():
    model = ChoiceModel()
    model.fit([DEFAULT_CONFIG, NO_XNNPACK, NO_FUSION, O1], [1.0, 1.0, 1.5, 0.9])
    assert model.effects["disable pass fusion"] > 0 > model.effects["xla_backend_optimization_level=1"]
    predicted = model.predict([BOTH, NO_XNNPACK, O1])
    assert predicted[0] > predicted[1] > predicted[2]  # an unseen combination of seen choices


def test_the_program_outvotes_a_wrong_prior_as_measurements_accumulate():
    truth = {NO_XNNPACK: 1.0, NO_FUSION: 1.5, O1: 0.9, BOTH: 1.5}
    model = OnlineCostModel(_Backwards(truth), prior_trials=2)
    assert np.argmin(model.predict([O1, NO_FUSION])) == 1  # the prior alone: wrong
    trials = [Trial(c, truth.get(c, 1.0)) for c in (DEFAULT_CONFIG, NO_XNNPACK, NO_FUSION, O1, BOTH)]
    model.update(trials, 1e6)
    assert model.measured == 5
    assert np.argmin(model.predict([O1, NO_FUSION])) == 0  # five measurements against a weight of 2


def test_a_pool_is_measured_in_the_order_a_learning_model_ranks_it():
    truth = {NO_XNNPACK: 1.2, NO_FUSION: 1.5, O1: 0.9, BOTH: 1.6}
    model = OnlineCostModel()
    pool = Exhaustive([NO_FUSION, BOTH, NO_XNNPACK, O1], cost_model=model)
    pool.tell([Trial(DEFAULT_CONFIG, 1.0)])
    first = pool.ask(2)
    trials = [Trial(DEFAULT_CONFIG, 1.0)] + [Trial(c, truth[c]) for c in first]
    model.update(trials, 1e6)
    assert first == [NO_FUSION, BOTH]  # nothing learnt yet: the list's order
    assert pool.ask(2) == [O1, NO_XNNPACK]  # then what was learnt: fusion costs time


def test_exploration_lets_a_share_of_each_batch_escape_the_model():
    truth = {}
    space = SearchSpace("flags")
    greedy, exploring = (Evolutionary(space, 0, cost_model=_Backwards(truth), explore=e) for e in (0.0, 0.5))
    for strategy in (greedy, exploring):
        strategy.tell([Trial(DEFAULT_CONFIG, 1.0)])
    assert greedy.ask(8) != exploring.ask(8)
    assert len(set(exploring.ask(8))) == 8


def test_configs_that_won_elsewhere_are_tried_first(tmp_path):
    replay = ReplayRunner.from_collection(ROOT / "flags" / "test" / "vit@tiny.npz")
    winner = next(c for c in replay.recorded if not c.is_default and c.numerics == "preserving")
    path = tmp_path / "db.sqlite"
    with TuningDatabase(path, machine=replay.machine) as db:
        db.decide(Decision("another program", winner, winner, 2.0, 1.0, 0.01, "random", "flags", 0.0))
    measured = []

    class Recording(ReplayRunner):
        def measure(self, program, configs, settings):
            measured.extend(configs)
            return super().measure(program, configs, settings)

    runner = Recording(replay.recorded, replay.source)
    tune("zoo:vit@tiny", strategy="random", budget=3, batch=2, runner=runner, db_path=path,
         progress=False)
    assert measured[0] == winner
