"""docs/extending.md's examples run as written, and the tune really uses their strategy, runner,
cost model, model name and callback, and the fleet their allocation; a strategy built from its
parts gets what a named one does."""

from __future__ import annotations

import re
import sys
from functools import partial
from pathlib import Path

import numpy as np
import pytest

import hlotune
from hlotune.compiler.configs.config import DEFAULT_CONFIG, CompileConfig
from hlotune.compiler.configs.flags import FlagConfig
from hlotune.compiler.measurement.measure import MeasureSettings
from hlotune.compiler.spaces.space import SearchSpace
from hlotune.errors import HlotuneError
from hlotune.evaluation.registry import MODELS
from hlotune.fleet import tune as fleet
from hlotune.fleet.allocation import ALLOCATIONS, FULL
from hlotune.tuning.callbacks import Callback
from hlotune.tuning.models.registry import tune_models
from hlotune.tuning.models.base import CostModel
from hlotune.tuning.options import TuneOptions
from hlotune.tuning.storage import Decision, Recording, TuningDatabase
from hlotune.tuning.strategies.base import Trial
from hlotune.tuning.strategies.parts import StrategyParts
from hlotune.tuning.strategies.random_search import RandomSearch
from hlotune.tuning.tuner import tune

DOC = Path(__file__).resolve().parent.parent / "docs" / "extending.md"
FAST = MeasureSettings(rounds=2, repeats=2, default_replicas=1)
WINNER = CompileConfig(FlagConfig.from_dict({"xla_cpu_use_xnnpack": False}))  # another program's


def _examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


def _run(code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **tune_keywords) -> dict:
    """The example executed as a script, its tunes in a fresh database, fast and quiet."""
    monkeypatch.setenv("HLOTUNE_DB", str(tmp_path / "tune.sqlite"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(hlotune, "tune", partial(tune, settings=FAST, progress=False, **tune_keywords),
                        raising=False)
    namespace: dict = {"__name__": "__main__"}
    exec(compile(code, str(DOC), "exec"), namespace)  # noqa: S102 (the doc's own example)
    return namespace


def test_the_doc_has_an_example_of_each_part_under_40_lines():
    strategy, runner, model, name, callback, allocation = _examples()
    assert "class NearBest(Strategy)" in strategy and "strategy=NearBest" in strategy
    assert "class CountingRunner" in runner and "runner=runner" in runner
    assert "class FewerChanges(CostModel)" in model and "model=model" in model
    assert 'MODELS["feature:"]' in name and 'model="feature:' in name
    assert "class BestSoFar(Callback)" in callback and "callbacks=[watch]" in callback
    assert 'ALLOCATIONS["busiest"]' in allocation and "main()" in allocation
    assert all(len(example.splitlines()) < 40 for example in _examples())


def test_the_custom_strategy_is_built_over_the_tunes_space_and_ranks_by_its_model(tmp_path, monkeypatch):
    namespace = _run(_examples()[0], tmp_path, monkeypatch)
    result = namespace["result"]
    assert result.strategy == "near-best"
    assert result.measurements == 3  # budget 3: the default and the two configs it asked
    assert (tmp_path / "tune.sqlite").is_file()

    strategy = namespace["NearBest"](StrategyParts(SearchSpace("flags"), cost_model=_FewerOptions()))
    strategy.tell([Trial(DEFAULT_CONFIG, 1.0)])
    asked = strategy.ask(3)
    assert len(asked) == 3 and asked == sorted(asked, key=_options)  # the model's favourites


def test_the_custom_runner_measures_every_batch(tmp_path, monkeypatch):
    namespace = _run(_examples()[1], tmp_path, monkeypatch)
    runner, result = namespace["runner"], namespace["result"]
    assert runner.batches >= 1 and runner.configs >= 2  # the two searched configs at least
    assert result.measurements == 3
    assert result.fingerprint and runner.inner._measurer is None  # closed by the example


def test_the_cost_model_ranks_the_candidates_and_learns(tmp_path, monkeypatch):
    namespace = _run(_examples()[2], tmp_path, monkeypatch)
    model, result = namespace["model"], namespace["result"]
    assert model.ranked > 0 and model.updates >= 2 and model.weight
    assert result.measurements == 12


def test_a_model_name_ranks_the_tune_and_is_listed(tmp_path, monkeypatch):
    class Prior(Callback):
        def on_end(self, tuner):
            self.scorers = tuner.cost_model.prior._scorers  # OnlineCostModel over ScorerCostModel

    prior = Prior()
    monkeypatch.setitem(MODELS, "feature:", None)  # the example's entry, removed afterwards
    result = _run(_examples()[3], tmp_path, monkeypatch, callbacks=[prior])["result"]
    assert result.measurements == 12
    assert prior.scorers["flags"].__qualname__ == "feature_scorer.<locals>.scores"
    assert tune_models()["feature:NAME"] == "flag configs scored by their feature NAME, lowest first"


def test_an_allocation_divides_the_fleet_budget_as_named(tmp_path, monkeypatch):
    """`--allocation busiest` reaches fleet_tune as the function (here a stand-in fleet of two)."""
    spent = []

    def fleet_tune(location, *, allocate, **rest):
        programs = [Recording(name * 8, name, "", True, "", 0.0, 10, 1.0, 86400.0) for name in "ab"]
        allocate(programs, lambda program, budget: spent.append((program.name, budget)))
        return fleet.FleetTuneResult([], {}, 0, 0.0)

    location = tmp_path / "fleet.sqlite"
    TuningDatabase(location).close()
    monkeypatch.setattr(fleet, "fleet_tune", fleet_tune)
    monkeypatch.setitem(ALLOCATIONS, "busiest", None)  # the example's entry, removed afterwards
    monkeypatch.setattr(sys, "argv", ["this.py", "fleet", "tune", "--allocation", "busiest", "--budget", "32",
                                      "--db", str(location), "--json"])
    with pytest.raises(SystemExit) as stopped:
        _run(_examples()[5], tmp_path, monkeypatch)
    assert stopped.value.code == 0 and spent == [("a", FULL)]


def test_the_callback_sees_every_batch(tmp_path, monkeypatch):
    namespace = _run(_examples()[4], tmp_path, monkeypatch)
    watch, result = namespace["watch"], namespace["result"]
    assert len(watch.best) == 2 and watch.best == sorted(watch.best)  # budget 5: the default, 2 and 2
    assert watch.best[-1] == result.history[-1] and watch.failed == result.failed


def test_a_strategy_built_from_its_parts_is_warm_started_staged_and_ranked(tmp_path):
    """As a named one: over the tune's all space, with its cost model, after the winners of
    other programs, and before the kernel stages (none measured on this budget)."""
    path, built = tmp_path / "t.sqlite", []
    with TuningDatabase(path) as db:
        db.register("another", "another program")
        db.decide(Decision("another", WINNER, WINNER, 200.0, 150.0, 0.01, "random", "flags", 0.0))

    def factory(parts: StrategyParts) -> RandomSearch:
        built.append(parts)
        return RandomSearch(parts.space, parts.seed)

    class FirstAsked(Callback):
        def on_end(self, tuner):
            self.config = tuner.trials[1].config  # after the default

    first = FirstAsked()
    result = tune("zoo:mlp@tiny", space="all", budget=4, batch=3, strategy=factory, db=path,
                  settings=FAST, progress=False, callbacks=[first])
    (parts,) = built
    assert parts.space.kind == "all" and parts.cost_model is not None
    assert first.config == WINNER and result.strategy == "random+tile+fusion"
    assert TuneOptions(strategy=factory, model="baseline:analytical").ranked
    with pytest.raises(HlotuneError, match="give its factory"):
        TuneOptions(strategy=RandomSearch(SearchSpace("flags")), model="baseline:analytical")


class _FewerOptions(CostModel):
    def predict(self, configs):
        return np.array([_options(config) for config in configs], dtype=float)


def _options(config: CompileConfig) -> int:
    return len(config.flags.options) + len(config.flags.disabled_passes)
