"""Optuna interop: the optuna strategy's study in an RDB storage beside the tuning database,
loaded with Optuna's own API, and an Optuna sampler of the user's choosing."""

from __future__ import annotations

import math

import pytest

from conftest import need
from hlotune.compiler.configs.config import DEFAULT_CONFIG
from hlotune.compiler.configs.layouts import LayoutSpace
from hlotune.compiler.measurement.measure import MeasureSettings
from hlotune.compiler.spaces.space import SearchSpace
from hlotune.errors import HlotuneError
from hlotune.programs import load_program
from hlotune.tuning.storage import TuningDatabase
from hlotune.tuning.strategies.base import Trial
from hlotune.tuning.strategies.optuna_search import OptunaStudy, OptunaTPE
from hlotune.tuning.strategies.registry import make_strategy
from hlotune.tuning.tuner import tune

optuna = need("optuna", install="pip install 'hlotune[optuna]'")

MLP = "zoo:mlp@tiny"
FAST = MeasureSettings(rounds=2, repeats=2, default_replicas=1)


def _config_of(space: SearchSpace, trial):
    """The config a stored trial's parameters stand for (labels back to gene values)."""
    values = {gene.name: {str(v) if isinstance(v, tuple) else v: v for v in gene.values}
              for gene in space.genes}
    return space.config({name: values[name][label] for name, label in trial.params.items()})


def test_the_study_beside_the_database_holds_every_measured_config(tmp_path):
    path = tmp_path / "tuning.sqlite"
    result = tune(MLP, space="flags", strategy="optuna", budget=6, batch=3, db=path,
                  settings=FAST, progress=False)
    storage = f"sqlite:///{tmp_path / 'tuning.optuna.sqlite'}"
    assert OptunaStudy.beside(path, result.fingerprint) == OptunaStudy(storage, result.fingerprint)
    study = optuna.load_study(storage=storage, study_name=result.fingerprint)
    trials = {trial.user_attrs["config"]: trial for trial in study.trials}
    with TuningDatabase(path) as db:
        records = {record.config_key: record for record in db.records(result.fingerprint)}
    assert set(trials) == set(records) and len(study.trials) == len(records) == 6
    space = SearchSpace("flags")
    for key, trial in trials.items():
        record = records[key]
        assert _config_of(space, trial) == record.config
        # Costs are relative to the default, whose own cost is 1 by definition.
        cost = 1.0 if record.config.is_default else record.cost
        if record.ok:
            assert trial.state == optuna.trial.TrialState.COMPLETE and trial.value == cost
        else:
            assert trial.state == optuna.trial.TrialState.FAIL
    assert study.best_value == pytest.approx(1 / max(result.history))

    again = tune(MLP, space="flags", strategy="optuna", budget=6, batch=3, db=path,
                 settings=FAST, progress=False)
    assert again.measurements == 0 and again.history == result.history
    assert len(optuna.load_study(storage=storage, study_name=result.fingerprint).trials) == 6


def _fake_cost(config) -> float:
    flags = config.flags
    return math.inf if "cse" in flags.disabled_passes else 1.0 + 0.1 * len(flags.options)


def _search(space, seed, study, sampler=None) -> list:
    strategy = OptunaTPE(space, seed, study=study, sampler=sampler)
    strategy.tell([Trial(DEFAULT_CONFIG, 1.0)])
    asked = []
    for _ in range(3):
        batch = strategy.ask(4)
        strategy.tell([Trial(config, _fake_cost(config)) for config in batch])
        asked += batch
    return asked


def test_a_stored_study_never_changes_the_search_and_keeps_each_config_once(tmp_path):
    program = load_program(MLP)
    space = SearchSpace("all", LayoutSpace(program))
    study = OptunaStudy(f"sqlite:///{tmp_path / 'study.sqlite'}", "mlp")
    fresh = _search(space, 0, None)
    assert _search(space, 0, study) == fresh == _search(space, 0, study)
    other = _search(space, 1, study)
    stored = optuna.load_study(storage=study.storage, study_name="mlp").trials
    keys = [trial.user_attrs["config"] for trial in stored]
    assert len(keys) == len(set(keys)) == len({DEFAULT_CONFIG, *fresh, *other})
    assert any(t.state == optuna.trial.TrialState.FAIL for t in stored)
    layouts = {t.params[name] for t in stored for name in t.params if name.startswith("layout:")}
    assert None in layouts and any(isinstance(label, str) for label in layouts)


def test_the_user_may_bring_an_optuna_sampler(tmp_path):
    space = SearchSpace("flags")
    random_sampler = _search(space, 0, None, optuna.samplers.RandomSampler(seed=7))
    assert random_sampler == _search(space, 0, None, optuna.samplers.RandomSampler(seed=7))
    assert random_sampler != _search(space, 0, None)
    with pytest.raises(HlotuneError, match="not an Optuna sampler"):
        OptunaTPE(space, sampler="tpe")

    result = tune(MLP, space="flags", strategy=optuna.samplers.RandomSampler(seed=7), budget=3,
                  batch=2, db=tmp_path / "t.sqlite", settings=FAST, progress=False,
                  model=None)
    assert result.strategy == "optuna" and result.measurements == 3
    stored = optuna.load_study(storage=f"sqlite:///{tmp_path / 't.optuna.sqlite'}",
                               study_name=result.fingerprint)
    assert len(stored.trials) == 3


def test_optunas_gaussian_process_sampler_is_a_strategy_of_its_own():
    space = SearchSpace("flags")
    strategy = make_strategy("optuna-gp", space, seed=3)
    assert strategy.name == "optuna-gp"
    strategy.tell([Trial(DEFAULT_CONFIG, 1.0)])
    asked = []
    for _ in range(3):  # past the sampler's random start-up trials, so the GP itself proposes
        batch = strategy.ask(4)
        strategy.tell([Trial(config, _fake_cost(config)) for config in batch])
        asked += batch
    assert len(set(asked)) == 12 and DEFAULT_CONFIG not in asked
