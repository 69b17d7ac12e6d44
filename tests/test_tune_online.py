"""The tuner that learns while it measures: the per-program model, its blend with a prior,
exploration, model-screened pools, and what it carries over from other programs (their winners
first, their measurements as a transfer model)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from hlotune.compiler.configs.config import DEFAULT_CONFIG, CompileConfig
from hlotune.compiler.configs.flags import FlagConfig
from hlotune.compiler.configs.layouts import LayoutConfig
from hlotune.compiler.spaces.space import SearchSpace
from hlotune.data.builtin import ROOT
from hlotune.data.metrics import kendall_tau
from hlotune.errors import HlotuneError
from hlotune.programs import load_program
from hlotune.tuning.callbacks import UpdateCostModel
from hlotune.tuning.loop import Tuner
from hlotune.tuning.models.base import CostModel
from hlotune.tuning.models.online import ChoiceModel, OnlineCostModel, choices, ridge
from hlotune.tuning.models.rank_sum import RankSum
from hlotune.tuning.models.transfer import TransferCostModel, collection_examples, load_transfer
from hlotune.tuning.runners.replay import ReplayRunner
from hlotune.tuning.storage import Decision, TuningDatabase
from hlotune.tuning.strategies.base import Trial
from hlotune.tuning.strategies.evolutionary import Evolutionary
from hlotune.tuning.strategies.exhaustive import Exhaustive
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


def test_the_choice_model_is_least_sure_of_what_it_never_saw_and_optimism_tries_it():
    """Bayesian ridge: a choice never measured has its prior spread, one measured less; ranked
    optimistically (LinUCB), the unseen fusion goes ahead of a measured choice that saved
    little, and behind one that saved much."""
    trials = [Trial(c, cost) for c, cost in zip([DEFAULT_CONFIG, NO_XNNPACK, NO_FUSION, O1], [1.0, 1.0, 1.5, 0.9])]
    dot = CompileConfig(FlagConfig.from_dict({"xla_cpu_experimental_ynn_fusion_type": "LIBRARY_FUSION_TYPE_DOT"}))
    model = ChoiceModel()
    model.fit([t.config for t in trials], [t.cost for t in trials])
    assert model.spread([dot])[0] > model.spread([NO_XNNPACK])[0] > model.spread([DEFAULT_CONFIG])[0] == 0
    assert model.spread([BOTH])[0] > model.spread([NO_FUSION])[0]  # two uncertain effects, not one
    ranks = {}
    for optimism in (0.0, 1.0):
        online = OnlineCostModel(optimism=optimism)
        online.update(trials, 1.0)
        ranks[optimism] = list(online.predict([NO_XNNPACK, dot, O1]))
    assert ranks[0.0] == [2, 3, 1] and ranks[1.0] == [3, 2, 1]


def test_ridge_gives_one_answer_in_either_form():
    """Few configs of many choices (a layout space) are solved in the dual form, many configs of
    few choices in the primal: both must give the ridge (and, unpenalised, the minimum-norm
    least-squares) coefficients, duplicated columns sharing their effect."""
    rng = np.random.default_rng(0)
    for configs, columns in ((12, 40), (40, 12)):
        x = (rng.random((configs, columns)) < 0.3).astype(float)
        x[:, 1] = x[:, 0]
        y = rng.normal(size=configs)
        xc, yc = x - x.mean(axis=0), y - y.mean()
        for penalty in (0.0, 2.0):
            expected = np.linalg.pinv(xc.T @ xc + penalty * np.eye(columns)) @ xc.T @ yc
            assert np.allclose(ridge(x, y, penalty), expected, atol=1e-8)
        assert np.isclose(ridge(x, y, 0.0)[0], ridge(x, y, 0.0)[1])


def test_the_program_outvotes_a_wrong_prior_as_measurements_accumulate():
    truth = {NO_XNNPACK: 1.0, NO_FUSION: 1.5, O1: 0.9, BOTH: 1.5}
    model = OnlineCostModel(_Backwards(truth), prior_trials=2)
    assert np.argmin(model.predict([O1, NO_FUSION])) == 1  # the prior alone: wrong
    trials = [Trial(c, truth.get(c, 1.0)) for c in (DEFAULT_CONFIG, NO_XNNPACK, NO_FUSION, O1, BOTH)]
    model.update(trials, 1e6)
    assert model.measured == 5
    assert np.argmin(model.predict([O1, NO_FUSION])) == 0  # five measurements against a weight of 2


class _Truthful(CostModel):
    """A prior that knows the truth."""

    def __init__(self, truth) -> None:
        self.truth = truth

    def predict(self, configs):
        return np.array([self.truth(c) for c in configs])


def _weight_after(prior_of, n: int = 24) -> tuple[float, float]:
    """The prior's weight once `n` random flag draws were measured, and what the count rule
    alone would leave it. A config's cost is a product of per-choice effects (what
    ChoiceModel can learn) with 1% noise; `prior_of(truth)` is the prior."""
    space, rng = SearchSpace("flags"), random.Random(0)
    configs = list(dict.fromkeys(space.random_config(rng) for _ in range(n)))
    effect = {name: rng.uniform(-0.2, 0.2) for c in configs for name in choices(c)}
    truth = lambda c: float(np.exp(sum(effect.get(name, 0.0) for name in choices(c))))
    model = OnlineCostModel(prior_of(truth), prior_trials=16)
    model.update([Trial(c, truth(c) * (1 + rng.gauss(0, 0.01))) for c in configs], 1e6)
    return model.prior_weight, 16 / (16 + model.measured)


def test_the_prior_weighs_what_its_agreement_with_the_program_earns():
    assert _weight_after(lambda truth: _Truthful(lambda c: -truth(c)))[0] == 0.0  # exactly wrong
    right, by_count = _weight_after(lambda truth: _Truthful(truth))
    assert right == by_count  # a right prior: the count rule
    noise = lambda c: random.Random(c.key).gauss(0, 0.3)
    noisy, by_count = _weight_after(lambda truth: _Truthful(lambda c: truth(c) + noise(c)))
    assert 0 < noisy < by_count  # a noisy one: less than the count rule leaves it
    few = OnlineCostModel(_Truthful(lambda c: 1.0), prior_trials=16)
    few.update([Trial(DEFAULT_CONFIG, 1.0), Trial(O1, 0.9)], 1e6)
    assert few.prior_weight == 16 / 18  # too few measurements to judge: the count rule


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


def test_exploration_lets_a_share_of_each_later_batch_escape_the_model():
    space = SearchSpace("flags")
    drawn = [Trial(space.random_config(random.Random(i)), 1.0 + i / 10) for i in range(8)]
    generation = [Trial(DEFAULT_CONFIG, 1.0), *drawn]  # the population is known: evolution starts
    greedy, exploring = (Evolutionary(space, 0, cost_model=_Backwards({}), explore=e) for e in (0.0, 0.5))
    for strategy in (greedy, exploring):
        strategy.tell(generation)
    assert greedy.ask(8) != exploring.ask(8)
    assert len(set(exploring.ask(8))) == 8


class _HatesDotFusion(CostModel):
    """A prior sure that XNNPACK's dot fusion is slow, as edition 2's training families are."""

    def __init__(self) -> None:
        self.ranked = 0  # configs it was asked about

    def predict(self, configs):
        self.ranked += len(configs)
        return np.array([float(_dot_fusion(config)) for config in configs])


def _dot_fusion(config: CompileConfig) -> bool:
    return dict(config.flags.options).get("xla_cpu_experimental_ynn_fusion_type") == "LIBRARY_FUSION_TYPE_DOT"


def test_the_first_generation_is_drawn_as_it_comes_so_the_program_can_contradict_its_prior():
    """Ranked by the prior, no config of the first generation has the option the prior hates
    (random configs carry it one time in 13); drawn unranked, as by default, some have, and
    the online model and evolution can learn what it does to this program. A batch drawn wholly
    at random is not ranked at all: the ranking would be thrown away."""
    space = SearchSpace("flags")
    firsts, models = {}, {}
    for share in (0.0, 1.0):
        firsts[share], models[share] = [], _HatesDotFusion()
        for seed in range(10):
            strategy = Evolutionary(space, seed, cost_model=models[share], explore_first=share)
            strategy.tell([Trial(DEFAULT_CONFIG, 1.0)])
            firsts[share] += strategy.ask(8)
    assert not any(map(_dot_fusion, firsts[0.0]))
    assert any(map(_dot_fusion, firsts[1.0]))
    assert (models[0.0].ranked, models[1.0].ranked) == (10 * 8 * 8, 0)  # 8x candidates, or none


def test_immigrants_meet_a_move_that_the_prior_and_the_first_generation_kept_out():
    """Children of a first generation without XNNPACK's dot fusion, ranked by a prior that
    hates it, never try it; a quarter of each later batch drawn from the whole space does."""
    space = SearchSpace("flags")
    tried = {}
    for immigrants in (0.0, 0.25):
        tried[immigrants] = []
        for seed in range(10):
            strategy = Evolutionary(space, seed, cost_model=_HatesDotFusion(), explore=0.0, immigrants=immigrants)
            drawn = [space.random_config(random.Random(100 * seed + i)) for i in range(40)]
            first = [config for config in drawn if not _dot_fusion(config)][:8]
            strategy.tell([Trial(DEFAULT_CONFIG, 1.0)] + [Trial(c, 1.0 + i / 10) for i, c in enumerate(first)])
            for _ in range(3):
                batch = strategy.ask(8)
                assert len(set(batch)) == 8
                tried[immigrants] += batch
                strategy.tell([Trial(c, 2.0) for c in batch])
    assert not any(map(_dot_fusion, tried[0.0]))
    assert any(map(_dot_fusion, tried[0.25]))


def test_a_covering_first_generation_measures_every_choice_whatever_the_seed():
    """Random draws left XNNPACK's dot fusion out of seed 2's first generation, and the prior
    kept it out after (docs/tuning.md); a covering design holds every value of every gene."""
    space = SearchSpace("flags")
    moves = {(gene.name, value) for gene in space.genes for value in gene.values[1:]}
    for seed in range(10):
        strategy = Evolutionary(space, seed, cost_model=_HatesDotFusion(), cover_first=True)
        strategy.tell([Trial(DEFAULT_CONFIG, 1.0)])
        first = strategy.ask(8)
        genomes = [space.genome(config) for config in first]
        assert len(set(first)) == 8 and any(map(_dot_fusion, first))
        assert {(name, value) for genome in genomes for name, value in genome.items()} >= moves
        assert max(map(len, genomes)) <= 5  # 26 moves spread over 8 configs, repairs aside
    assert space.covering(random.Random(0), 6) is None  # 26 moves need more than 4 a config


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
    tune("zoo:vit@tiny", strategy="random", budget=3, batch=2, runner=runner, db=path,
         progress=False)
    assert measured[0] == winner


def test_the_transfer_model_ranks_flags_by_their_effect_on_other_programs():
    examples = [(NO_FUSION, 1.6), (O1, 0.8), (NO_XNNPACK, 1.0), (NO_FUSION, 1.4), (O1, 0.9)]
    model = TransferCostModel(examples)
    with_layout = CompileConfig(O1.flags, LayoutConfig((("p0", (0, 1)),)))
    predicted = model.predict([BOTH, NO_XNNPACK, O1, with_layout])
    assert predicted[0] > predicted[1] > predicted[2] == predicted[3]  # layouts do not transfer


def test_the_transfer_model_ranks_a_held_out_program_better_than_chance(tmp_path):
    """`--model transfer`: fitted on the built-in training families, it orders a test family's
    recorded configs; `transfer@DIR` fits on DIR's collected programs."""
    model = load_transfer("transfer", "flags")
    held_out = dict(collection_examples([ROOT / "flags" / "test" / "vit@small.npz"]))
    tau = kendall_tau(list(held_out.values()), model.predict(list(held_out)))
    assert model.size > 1000 and tau > 0.3
    assert load_transfer(f"transfer@{ROOT / 'flags' / 'valid'}", "all").size < model.size
    with pytest.raises(HlotuneError, match="ranks flags"):
        load_transfer("transfer", "layout")
    with pytest.raises(HlotuneError, match="no collected programs"):
        load_transfer(f"transfer@{tmp_path}", "flags")
    with pytest.raises(HlotuneError, match="ranks flags"):  # tune() understood the name
        tune("zoo:mlp@tiny", space="layout", model="transfer", budget=2, db=tmp_path / "db.sqlite",
             progress=False)


def test_the_transfer_model_screens_a_held_out_program_and_the_program_refines_it(tmp_path):
    """As `tune --model transfer` runs it (the prior of an online model taught after every
    batch), screening a held-out program's recorded configs: the batch it picks before anything
    is measured runs faster on the recording than the pool does, and once measured, the
    program's own choices order the measured configs closer to their recorded runtimes than the
    transfer model alone."""
    replay = ReplayRunner.from_collection(ROOT / "flags" / "test" / "vit@tiny.npz")
    default_ns = np.median(replay.recorded[DEFAULT_CONFIG])
    truth = {c: np.median(s) / default_ns for c, s in replay.recorded.items() if not c.is_default}
    transfer = load_transfer("transfer", "flags")
    model = OnlineCostModel(transfer)
    pool = Exhaustive(sorted(truth, key=lambda config: config.key), cost_model=model)
    with TuningDatabase(tmp_path / "db.sqlite", machine=replay.machine) as db:
        tuner = Tuner(load_program("zoo:vit@tiny"), SearchSpace("flags"), pool, replay, db,
                      cost_model=model, callbacks=[UpdateCostModel(1)])
        tuner.run(budget=17, batch=8)
    first, measured = tuner.trials[1:9], tuner.trials[1:]
    assert np.median([truth[t.config] for t in first]) < np.median(list(truth.values()))
    assert model.measured == 17  # the default and two batches
    configs, costs = [t.config for t in measured], [truth[t.config] for t in measured]
    learned, prior = (kendall_tau(costs, m.predict(configs)) for m in (model, transfer))
    assert learned > prior + 0.1


def test_a_rank_sum_follows_the_models_agreement_and_teaches_each():
    truth = {NO_XNNPACK: 1.0, NO_FUSION: 1.5, O1: 0.9, BOTH: 1.6}
    learner = OnlineCostModel()
    blend = RankSum([_Backwards({c: -v for c, v in truth.items()}), learner])
    blend.update([Trial(c, v) for c, v in truth.items()], 1e6)
    assert learner.measured == 4
    assert list(np.argsort(blend.predict([BOTH, O1, NO_FUSION]))) == [1, 2, 0]
