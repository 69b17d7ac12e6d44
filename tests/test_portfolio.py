"""The greedy portfolio (tuning/portfolio.py): its choice, its leave-one-family-out evaluation,
the shipped file, and the searches that ask its configs first."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from conftest import need
from hlotune.compiler.configs.config import DEFAULT_CONFIG, CompileConfig, load_config
from hlotune.compiler.configs.flags import FlagConfig
from hlotune.compiler.configs.layouts import LayoutSpace
from hlotune.compiler.measurement.measure import MeasureSettings
from hlotune.compiler.spaces.space import SearchSpace
from hlotune.errors import HlotuneError
from hlotune.programs import load_program
from hlotune.tuning.options import TuneOptions
from hlotune.tuning.portfolio import (
    REBUILD,
    SHIPPED,
    SOURCE,
    Gains,
    build,
    greedy,
    kept,
    leave_one_family_out,
    load_portfolio,
)
from hlotune.tuning.runners.local import LocalRunner
from hlotune.tuning.strategies.base import Trial
from hlotune.tuning.strategies.evolutionary import Evolutionary
from hlotune.tuning.strategies.optuna_search import OptunaTPE
from hlotune.tuning.strategies.registry import make_strategy
from hlotune.tuning.tuner import tune

MLP = "zoo:mlp@tiny"
CHEAP = MeasureSettings(rounds=2, repeats=1, default_replicas=1)
# Synthetic log speedups (programs x configs), not measurements: c0 helps programs 0-1 most,
# c1 nearly as much and a little on 2, c2 helps 2-3, c3 hurts everywhere and failed on 3.
SYNTHETIC = np.array([[0.5, 0.4, 0.0, -0.2],
                      [0.5, 0.4, 0.0, -0.2],
                      [0.0, 0.1, 0.3, -0.2],
                      [0.0, 0.0, 0.3, -np.inf]])


def test_the_greedy_portfolio_is_the_best_pair_not_the_two_best_configs_on_synthetic_gains():
    pairs = {pair: kept(SYNTHETIC, pair).mean() for pair in itertools.combinations(range(4), 2)}
    assert max(pairs, key=pairs.get) == (0, 2) and pairs[(0, 2)] == pytest.approx(0.4)
    assert list(np.argsort(-SYNTHETIC.mean(axis=0))[:2]) == [0, 1]  # the best two on their own
    # nothing raises the mean after c0 and c2: the portfolio stops short of the size asked
    assert greedy(SYNTHETIC, 2) == greedy(SYNTHETIC, 4) == [0, 2]
    assert list(kept(SYNTHETIC, [3])) == [0.0] * 4  # a program keeps its default


def test_a_held_out_family_is_scored_by_a_portfolio_fitted_without_it_on_synthetic_gains():
    """Synthetic: c0 helps families a and b, c1 only c. With c held out, c1 gains nothing on the
    training programs and is not chosen, so family c keeps nothing of its gain."""
    gains = Gains(("a@1", "a@2", "b@1", "b@2", "c@1", "c@2"),
                  (DEFAULT_CONFIG, DEFAULT_CONFIG),  # unused by the evaluation
                  np.array([[0.2, 0.0]] * 4 + [[0.0, 0.3]] * 2))
    evaluation = leave_one_family_out(gains, size=2, draws=200, seed=0)
    # a and b held out: c1 first (0.15 a training program against c0's 0.1), then c0: 0 then 1
    assert evaluation.greedy == (0.0, 1.0)
    assert evaluation.random[1] == 1.0 and evaluation.random[0] == pytest.approx(0.5, abs=0.1)
    assert (evaluation.programs, evaluation.families) == (6, 3)


def test_the_shipped_portfolio_decodes_into_a_zoo_programs_flags_space():
    portfolio = load_portfolio()
    provenance = portfolio.provenance
    assert provenance["source"] == SOURCE and provenance["rebuild"].startswith(REBUILD)
    assert (len(portfolio.configs), len(portfolio.preserving)) == (provenance["k"]["configs"],
                                                                   provenance["k"]["numerics_preserving"])
    assert all(len(evaluation["greedy"]) == 8 for evaluation in provenance["leave_one_family_out"].values())
    layouts = LayoutSpace(load_program(MLP))
    for allowed, configs in ((True, portfolio.configs), (False, portfolio.preserving)):
        space = SearchSpace("flags", layouts, allow_numerics_change=allowed)
        assert len(set(configs)) == len(configs) > 0 and DEFAULT_CONFIG not in configs
        for config in configs:
            assert space.config(space.genome(config)) == config
            assert load_config({"config": json.loads(config.key)}) == config  # as `db export` writes it
        assert portfolio.within(space) == list(configs)
    assert all(config.numerics == "preserving" for config in portfolio.preserving)
    assert any(config.numerics == "changing" for config in portfolio.configs)
    assert portfolio.within(SearchSpace("layout", layouts)) == []  # flags a layout space lacks


def test_the_shipped_portfolio_is_what_the_builder_makes_of_the_built_in_training_programs(tmp_path):
    build(path=tmp_path / "flags.json")
    assert json.loads((tmp_path / "flags.json").read_text()) == json.loads(SHIPPED.read_text())


def test_a_bad_portfolio_file_is_a_one_line_error(tmp_path):
    for text, match in (("{", "not a portfolio file"), ('{"configs": []}', "not a portfolio file")):
        (tmp_path / "p.json").write_text(text)
        with pytest.raises(HlotuneError, match=match):
            load_portfolio(tmp_path / "p.json")
    with pytest.raises(HlotuneError, match="cannot read"):
        load_portfolio(tmp_path / "missing.json")


FIRSTS = [CompileConfig(FlagConfig.from_dict(flags)) for flags in (
    {"xla_backend_optimization_level": 2}, {"xla_cpu_use_xnnpack": False}, {"xla_cpu_prefer_vector_width": 512})]


@pytest.mark.parametrize("strategy", ["evolutionary", "optuna"])
def test_first_configs_are_asked_first_in_order_then_the_search_goes_on(strategy):
    if strategy == "optuna":
        need("optuna", install="pip install 'hlotune[optuna]'")
        search = OptunaTPE(SearchSpace("flags"), 0, first=FIRSTS)
    else:
        search = Evolutionary(SearchSpace("flags"), 0, first=FIRSTS)
    search.tell([Trial(DEFAULT_CONFIG, 1.0)])
    first, second = search.ask(2), search.ask(2)
    assert first == FIRSTS[:2] and second[0] == FIRSTS[2] and second[1] not in FIRSTS
    assert len(second) == 2


def test_a_first_generation_goes_only_to_the_strategies_that_take_it():
    TuneOptions(strategy="optuna", first_generation="portfolio")
    for strategy, first_generation in (("random", "portfolio"), ("optuna", "covering"), ("exhaustive", "covering")):
        why = rf"^first_generation '{first_generation}' is for the .* not {strategy}$"
        with pytest.raises(HlotuneError, match=why):
            TuneOptions(strategy=strategy, first_generation=first_generation)
        with pytest.raises(HlotuneError, match="^first_generation "):
            make_strategy(strategy, SearchSpace("flags"), first_generation=first_generation)


def _portfolio_in(space: SearchSpace) -> list[CompileConfig]:
    return load_portfolio().within(space)


def test_an_evolutionary_tune_measures_the_portfolio_first(tmp_path):
    measured = []

    class Recording(LocalRunner):
        def measure(self, program, configs, settings):
            measured.append(list(configs))
            return super().measure(program, configs, settings)

    tune(MLP, strategy="evolutionary", first_generation="portfolio", model=None, budget=4, batch=3,
         runner=Recording(), db=tmp_path / "db.sqlite", settings=CHEAP, progress=False)
    assert measured[0] == _portfolio_in(SearchSpace("flags"))[:3]


def test_hlotune_tune_with_optuna_enqueues_the_portfolio_first(tmp_path, cli):
    optuna = need("optuna", install="pip install 'hlotune[optuna]'")
    path = tmp_path / "db.sqlite"
    done = cli("tune", MLP, "--strategy", "optuna", "--first-generation", "portfolio", "--budget", 4,
               "--batch", 3, "--db", path, "--json", "-q")
    assert done.returncode == 0, done.stderr
    fingerprint = json.loads(done.stdout)["fingerprint"]
    study = optuna.load_study(storage=f"sqlite:///{tmp_path / 'db.optuna.sqlite'}", study_name=fingerprint)
    told = [CompileConfig.from_dict(json.loads(trial.user_attrs["config"])) for trial in study.trials]
    assert told[0] == DEFAULT_CONFIG and told[1:4] == _portfolio_in(SearchSpace("flags"))[:3]


def test_the_fleet_portfolio_orders_the_winners_by_what_they_kept_on_the_fleet(tmp_path):
    """Two other programs decided: the older winner gained on both, the newer on its own program
    alone, so the fleet's greedy order puts the older first, where newest-first does not."""
    from hlotune.compiler.measurement.measure import BatchResult, Measurement
    from hlotune.tuning.fleet_portfolio import fleet_portfolio
    from hlotune.tuning.storage import Decision, TuningDatabase

    older = CompileConfig(FlagConfig.from_dict({"xla_cpu_use_xnnpack": False}))
    newer = CompileConfig(FlagConfig.from_dict({"xla_backend_optimization_level": 1}))
    defaults = [Measurement(DEFAULT_CONFIG, samples_ns=[200, 202, 198])] * 2

    def measured(db, program, runs):
        db.register(program, program[:4])
        db.record_batch(program, BatchResult([Measurement(c, samples_ns=[ns, ns + 1, ns - 1]) for c, ns in runs],
                                             defaults), with_default=True)

    with TuningDatabase(str(tmp_path / "fleet.sqlite")) as db:
        first, second, target = "a" * 64, "b" * 64, "c" * 64
        measured(db, first, [(older, 100)])  # 2x; never measured `newer`
        measured(db, second, [(older, 133), (newer, 125)])  # 1.5x and 1.6x
        db.decide(Decision(first, older, older, 200.0, 100.0, 0.02, "evolutionary", "flags", 1.0))
        db.decide(Decision(second, newer, newer, 200.0, 125.0, 0.02, "evolutionary", "flags", 2.0))
        assert db.winners(target) == [newer, older]
        assert fleet_portfolio(db, target, 4) == [older, newer]
        assert fleet_portfolio(db, target, 1) == [older]
        assert fleet_portfolio(db, first, 4) == [newer]  # a program's own decision is not its warm start
