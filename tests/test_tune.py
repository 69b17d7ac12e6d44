"""Autotuning with the real compiler: budget, resume, failures, noise, database and exports."""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import jax
import numpy as np
import pytest
from conftest import need

from hlotune.compiler.spaces import space
from hlotune.compiler.configs.config import DEFAULT_CONFIG, CompileConfig
from hlotune.compiler.configs.flags import FlagConfig
from hlotune.compiler.configs.layouts import LayoutConfig, LayoutSpace
from hlotune.compiler.measurement.machine import Machine, this_machine
from hlotune.compiler.measurement.measure import FAILED, Measurement, MeasureSettings, measure
from hlotune.compiler.spaces.space import SearchSpace
from hlotune.errors import HlotuneError
from hlotune.evaluation.scorers import load_scorer
from hlotune.programs import load_program
from hlotune.tuning import commands, db_commands, storage
from hlotune.tuning.autotune import autotune
from hlotune.tuning.callbacks import Callback
from hlotune.tuning.compiled import compile_program
from hlotune.tuning.fingerprint import program_fingerprint
from hlotune.tuning.loop import Tuner
from hlotune.tuning.models.base import CostModel
from hlotune.tuning.models.scorer import ScorerCostModel
from hlotune.tuning.options import TuneOptions
from hlotune.tuning.recipes.registry import SPACES
from hlotune.tuning.storage import Decision, TuningDatabase, exists
from hlotune.tuning.strategies.base import Trial
from hlotune.tuning.strategies.evolutionary import Evolutionary
from hlotune.tuning.strategies.exhaustive import Exhaustive
from hlotune.tuning.strategies.registry import STRATEGIES, make_strategy
from hlotune.tuning.tuner import tune

MLP = "zoo:mlp@tiny"
FAST = MeasureSettings(rounds=2, repeats=2, default_replicas=1)
# Aborts XLA:CPU on a program with a gather (test_compiler.py), such as zoo:lstm's.
CRASH = CompileConfig(FlagConfig.from_dict({"xla_disable_hlo_passes": ["gather_simplifier"]}))


@pytest.fixture(scope="module")
def mlp_layouts():
    return LayoutSpace(load_program(MLP))


def _tune(db_path, **overrides):
    arguments = dict(space="all", budget=6, batch=3, db=db_path, settings=FAST, progress=False)
    return tune(MLP, **arguments | overrides)


def _assert_not_slower_than_the_default(result, db_path) -> None:
    """The kept config against measurements the decision did not come from: the database's
    record of it from the search beat its batch's default, and measured again here beside the
    default, in more rounds than the tune's, it is not slower beyond twice that batch's noise
    floor. A kept default is XLA's own config, with no speedup claimed."""
    if result.kept_default:
        assert result.best_config.is_default and result.speedup == 1.0
        return
    with TuningDatabase(db_path) as db:
        searched = db.lookup(result.fingerprint, result.best_config.key)
    assert searched is not None and searched.cost < 1.0  # inf when it failed
    again = measure(MLP, [result.best_config], MeasureSettings(rounds=6, repeats=3))
    (kept,) = again.measurements
    assert kept.ok and kept.median_ns <= again.default_ns * (1 + 2 * again.noise_floor)


def test_tune_stays_within_budget_and_a_rerun_measures_nothing_again(tmp_path):
    path = tmp_path / "tuning.sqlite"
    first = _tune(path)
    assert 1 <= first.measurements <= 6 and first.resumed == 0
    assert len(first.history) == 6 and first.history[0] == 1.0
    assert all(a <= b for a, b in zip(first.history, first.history[1:]))
    _assert_not_slower_than_the_default(first, path)
    assert math.isfinite(first.noise) and first.default_ms > 0

    with TuningDatabase(path) as db:
        records = db.records(first.fingerprint)
        assert len(records) == first.measurements
        assert db.lookup(first.fingerprint, DEFAULT_CONFIG.key).ok
        assert db.best(first.fingerprint).chosen == first.best_config
        assert [entry.name for entry in db.programs()] == [MLP]
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"

    again = _tune(path)
    assert again.measurements == 0 and again.resumed == 6
    assert (again.best_config, again.history) == (first.best_config, first.history)
    with TuningDatabase(path) as db:
        assert len(db.records(first.fingerprint)) == len(records)


def test_a_tune_killed_with_sigkill_resumes_without_repeating_finished_batches(db_location):
    """The random search: the same draws after a restart, without the cost model's start-up;
    on SQLite and on PostgreSQL."""
    path = db_location
    script = (
        "from hlotune.tuning.tuner import tune\n"
        "from hlotune.compiler.measurement.measure import MeasureSettings\n"
        f"tune({MLP!r}, strategy='random', budget=9, batch=2, db={str(path)!r}, "
        "settings=MeasureSettings(rounds=2, repeats=2), progress=False)\n"
    )
    process = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120  # ample on a loaded machine beside another test worker
        while _rows(path) < 3 and time.monotonic() < deadline:  # the default and one batch
            time.sleep(0.2)
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    stored = _rows(path)
    assert stored >= 3

    result = tune(MLP, strategy="random", budget=9, batch=2, db=path, settings=FAST, progress=False)
    assert result.resumed >= stored  # PostgreSQL may still commit a batch the killed tune sent
    assert result.resumed + result.measurements == 9
    assert _rows(path) == 9  # every draw stored once: none repeated, none lost


def _rows(location: str) -> int:
    if not exists(location):
        return 0
    try:
        with TuningDatabase(location) as db:
            return db._sql.execute("SELECT COUNT(*) FROM measurements").fetchone()[0]
    except HlotuneError:  # the child is creating the tables
        return 0


def test_a_config_that_crashes_xla_is_recorded_failed_and_the_search_goes_on(tmp_path):
    healthy = CompileConfig(FlagConfig.from_dict({"xla_cpu_use_xnnpack": False}))
    result = tune(
        "zoo:lstm@tiny", strategy=Exhaustive([CRASH, healthy]), budget=3,
        db=tmp_path / "t.sqlite", settings=FAST, progress=False,
    )
    assert result.measurements == 3 and result.failed == 1
    assert result.best_config in (DEFAULT_CONFIG, healthy) and result.candidate != CRASH
    with TuningDatabase(tmp_path / "t.sqlite") as db:
        crashed = db.lookup(result.fingerprint, CRASH.key)
        assert crashed.status == FAILED and "SIG" in crashed.reason and math.isinf(crashed.cost)
        assert db.lookup(result.fingerprint, healthy.key).ok


def test_records_of_another_machine_or_compiler_are_never_returned(tmp_path):
    path = tmp_path / "t.sqlite"
    here = this_machine()
    elsewhere = [Machine("Some Other CPU", here.cores, here.system, here.jax, here.jaxlib),
                 Machine(here.cpu, here.cores, here.system, here.jax, "0.0.1")]
    config = CompileConfig(FlagConfig.from_dict({"xla_cpu_use_xnnpack": False}))
    for machine in elsewhere:
        with TuningDatabase(path, machine=machine) as other:
            other.register("f" * 64, MLP)
            stored = other.record("f" * 64, Measurement(config, samples_ns=[100, 110]),
                                  default_ns=200.0, noise_floor=0.01)
            assert stored.cost == pytest.approx(0.525)
    with TuningDatabase(path) as db:
        assert db.lookup("f" * 64, config.key) is None
        assert db.records("f" * 64) == [] and db.programs() == []


def test_exports_round_trip_and_say_that_layouts_are_not_flags(tmp_path):
    chosen = CompileConfig(
        FlagConfig.from_dict({"xla_cpu_use_xnnpack": False, "xla_backend_optimization_level": 2,
                              "xla_cpu_max_isa": "AVX2", "xla_disable_hlo_passes": ["cse", "fusion"]}),
        LayoutConfig.from_dict({"e0": [0, 1]}),
    )
    with TuningDatabase(tmp_path / "t.sqlite") as db:
        with pytest.raises(HlotuneError, match="not tuned"):
            db.export("f" * 64, "json")
        db.register("f" * 64, MLP)
        db.decide(Decision("f" * 64, chosen, chosen, 200.0, 150.0, 0.02, "random", "all", 0.0))
        options = db.export("f" * 64, "compiler_options")
        flags = db.export("f" * 64, "xla_flags")
        exported = json.loads(db.export("f" * 64, "json").text)
    assert FlagConfig.from_dict(json.loads(options.text)) == chosen.flags
    assert "layout" in options.note and "layout" in flags.note
    assert "--xla_disable_hlo_passes=cse,fusion" in flags.text and "--xla_cpu_use_xnnpack=false" in flags.text
    assert CompileConfig.from_dict(exported["config"]) == chosen
    assert exported["speedup"] == pytest.approx(200 / 150) and exported["program"] == MLP


def test_a_corrupt_database_file_is_a_clean_error(tmp_path):
    path = tmp_path / "t.sqlite"
    path.write_bytes(b"not a database at all" * 100)
    with pytest.raises(HlotuneError, match="not a tuning database"):
        TuningDatabase(path)


def _fake_cost(config: CompileConfig) -> float:
    """A deterministic landscape: fewer disabled passes and no options is better."""
    flags, layouts = config.flags, config.layout.layouts
    return 1.0 + len(flags.disabled_passes) - 0.1 * len(flags.options) + 0.05 * len(layouts)


@pytest.mark.parametrize("name", STRATEGIES)
def test_strategies_are_deterministic_for_a_seed_and_never_repeat(name, mlp_layouts):
    if name in ("optuna", "optuna-gp", "bandit"):  # the bandit's arms include TPE
        need("optuna", install="pip install 'hlotune[optuna]'")

    # the flags space and fewer batches where the all space would be slow for no more checked:
    # the GP fits itself again for every config past its 10 random ones (seconds each on all),
    # exhaustive enumerates
    kind = "flags" if name in ("exhaustive", "optuna-gp") else "all"
    batches = 3 if name == "optuna-gp" else 5

    def run(seed):
        strategy = make_strategy(name, SearchSpace(kind, mlp_layouts), seed)
        strategy.tell([Trial(DEFAULT_CONFIG, 1.0)])
        asked = []
        for _ in range(batches):
            batch = strategy.ask(4)
            strategy.tell([Trial(c, _fake_cost(c)) for c in batch])
            asked += batch
        return asked

    asked = run(0)
    assert len(asked) == 4 * batches and len(set(asked)) == 4 * batches and DEFAULT_CONFIG not in asked
    assert asked == run(0) and asked != run(1)


def test_exhaustive_enumerates_single_changes_and_refuses_big_spaces(mlp_layouts):
    flags = SearchSpace("flags")
    singles = Exhaustive.around_default(flags).ask(1000)
    assert len(singles) == flags.count_within(1) == 29  # 33 with the numerics-changing options
    everything = SearchSpace("flags", allow_numerics_change=True)
    assert len(Exhaustive.around_default(everything).ask(1000)) == everything.count_within(1) == 33
    with pytest.raises(HlotuneError, match="evolutionary"):
        Exhaustive.around_default(SearchSpace("all", mlp_layouts), depth=3)


def test_the_search_space_repairs_combinations_xla_cannot_run(mlp_layouts):
    genes = SearchSpace("all", mlp_layouts, allow_numerics_change=True)
    honor = genes.config({"xla_cpu_fast_math_honor_division": False})
    assert dict(honor.flags.options)["xla_cpu_enable_fast_math"] is True
    constrained = genes.config({"pass:algsimp": True, "layout:e0": (0, 1)})
    assert "algsimp" not in constrained.flags.disabled_passes
    for config in (honor, constrained):
        assert genes.config(genes.genome(config)) == config


def test_a_cost_model_picks_which_candidates_are_measured(mlp_layouts):
    genes = SearchSpace("flags")
    ranked = Evolutionary(genes, 0, cost_model=_FakeCostModel(), explore_first=0.0)
    blind = Evolutionary(genes, 0)
    for strategy in (ranked, blind):
        strategy.tell([Trial(DEFAULT_CONFIG, 1.0)])
    assert np.mean([_fake_cost(c) for c in ranked.ask(4)]) < np.mean([_fake_cost(c) for c in blind.ask(4)])

    for kind in ("flags", "layout"):
        model = ScorerCostModel({kind: load_scorer("baseline:analytical")}, mlp_layouts)
        configs = [SearchSpace(kind, mlp_layouts).random_config(random.Random(i)) for i in range(5)]
        assert model.predict(configs).shape == (5,)
    with pytest.raises(HlotuneError, match="evolutionary"):
        make_strategy("random", genes, cost_model=model)


class _FakeCostModel(CostModel):
    def predict(self, configs):
        return np.array([_fake_cost(c) for c in configs])


def test_the_compiled_result_computes_what_the_program_does():
    program = load_program(MLP)
    config = CompileConfig(FlagConfig.from_dict({"xla_cpu_use_xnnpack": False}),
                           LayoutConfig.from_dict({"e0": [0, 1], "p1": [0, 1]}))
    outputs = compile_program(program, config)(*program.args)
    expected = jax.jit(program.fn)(*program.args)
    assert jax.tree_util.tree_structure(outputs) == jax.tree_util.tree_structure(expected)
    for got, want in zip(jax.tree_util.tree_leaves(outputs), jax.tree_util.tree_leaves(expected)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)


def test_the_fingerprint_is_stable_and_tells_programs_apart():
    mlp = load_program(MLP)
    assert program_fingerprint(mlp) == program_fingerprint(load_program(MLP))
    assert program_fingerprint(mlp) != program_fingerprint(load_program("zoo:mlp@tiny-b2"))


def _cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="hlotune")
    commands.add_commands(parser.add_subparsers(required=True))
    args = parser.parse_args(list(argv))
    return args.run(args)


def test_the_commands_tune_list_show_and_export(tmp_path, capsys):
    db = str(tmp_path / "t.sqlite")
    assert _cli("tune", MLP, "--budget", "3", "--batch", "2", "--db", db, "--json") == 0
    result = json.loads(capsys.readouterr().out)
    for key in ("program", "default_ms", "best_ms", "speedup", "noise", "measurements", "resumed",
                "best_config", "strategy", "found_speedup", "confirmed_speedup", "confirm_rounds"):
        assert key in result
    assert result["measurements"] == 3 and result["strategy"] == "evolutionary"

    assert _cli("db", "list", "--db", db) == 0
    assert MLP in capsys.readouterr().out
    assert _cli("db", "show", result["fingerprint"][:8], "--db", db) == 0
    assert "configs measured here" in capsys.readouterr().out
    assert _cli("db", "list", "--db", db, "--json") == 0
    (listed,) = map(json.loads, capsys.readouterr().out.splitlines())
    assert listed["program"] == MLP and listed["fingerprint"] == result["fingerprint"]
    assert listed["records"] >= 3 and listed["tuned"]["chosen"] == result["best_config"]
    assert _cli("db", "show", MLP, "--db", db, "--json") == 0
    shown = json.loads(capsys.readouterr().out)
    assert len(shown["records"]) == listed["records"] and shown["tuned"] == listed["tuned"]
    speedups = [r["speedup"] for r in shown["records"] if r["status"] == "ok"]
    assert speedups == sorted(speedups, reverse=True)  # fastest first, as in the text
    assert all(r["numerics"] == "preserving" and r["max_rel_error"] is not None for r in shown["records"])
    assert _cli("db", "export", MLP, "--format", "compiler_options", "--db", db) == 0
    exported = json.loads(capsys.readouterr().out)
    assert FlagConfig.from_dict(exported) == CompileConfig.from_dict(result["best_config"]).flags

    with pytest.raises(HlotuneError, match="no program"):
        _cli("db", "show", "0123", "--db", db)
    with pytest.raises(HlotuneError, match="no tuning database"):
        _cli("db", "list", "--db", str(tmp_path / "missing.sqlite"))
    with pytest.raises(HlotuneError, match="budget"):
        _cli("tune", MLP, "--budget", "0", "--db", db)


def test_every_space_has_a_recipe_and_the_formats_are_the_databases():
    assert tuple(SPACES) == tuple(space.GENES)
    assert db_commands.FORMATS == storage.EXPORT_FORMATS


def test_the_default_search_starts_from_the_portfolio_in_flags():
    """The Tuner v4 benchmark's choice: the evolutionary search, its first generation the shipped
    portfolio in the flags space (the only one with a portfolio); any first generation named is
    the one asked, and other strategies keep their own draws. Each space's recipe says so."""
    def recipe(**options):
        options = TuneOptions(**options)
        return SPACES[options.space](SimpleNamespace(options=options))

    assert (TuneOptions().strategy, recipe().first_generation()) == ("evolutionary", "portfolio")
    assert TuneOptions().ranking_model == "pretrained" and recipe().learns_online()
    assert recipe(space="layout").first_generation() == recipe(space="all").first_generation() == "random"
    assert recipe(first_generation="random").first_generation() == "random"
    assert recipe(first_generation="covering").first_generation() == "covering"
    assert recipe(strategy="optuna").first_generation() == recipe(strategy="random").first_generation() == "random"
    assert not recipe(space="tile").learns_online()  # kernelwise: the model's favourites, measured once
    assert recipe(space="tile", strategy="optuna").learns_online() is False  # no ranked search


def test_tune_options_are_built_by_keyword_and_a_bad_value_names_its_field(tmp_path):
    with pytest.raises(TypeError, match="budgte"):
        TuneOptions(budgte=8)
    with pytest.raises(TypeError):
        TuneOptions("flags")  # no position for a reordered field to swap
    bad = {"space": "tiles", "budget": 0, "time_s": -1.0, "batch": 0, "fine_tune_every": 0,
           "warm_start": -1, "strategy": "annealing", "optimism": -0.5,
           "first_generation": "latin", "immigrants": 1.5}
    for field, value in bad.items():
        with pytest.raises(HlotuneError, match=rf"^{field} "):
            TuneOptions(**{field: value})
    with pytest.raises(HlotuneError, match="^budget or time_s "):
        TuneOptions(budget=None)
    with pytest.raises(HlotuneError, match="^rounds "):
        TuneOptions(settings=MeasureSettings(rounds=0))
    with pytest.raises(HlotuneError, match="^model "):
        TuneOptions(strategy="random", model="baseline:analytical")
    with pytest.raises(HlotuneError, match="^immigrants are drawn by the evolutionary"):
        TuneOptions(strategy="optuna", immigrants=0.25)
    assert TuneOptions(strategy="random").ranking_model is None  # the default ranks evolutionary only
    assert TuneOptions(strategy="bandit").ranking_model == "pretrained"  # as its evolutionary arm
    # tune() and @autotune check their keywords before anything is exported, loaded or measured
    with pytest.raises(HlotuneError, match="unknown option 'budgte' for hlotune.tune: did you mean 'budget'"):
        tune("zoo:no-such-program", budgte=8, db=tmp_path / "t.sqlite")
    with pytest.raises(HlotuneError, match="^batch "):
        tune("zoo:no-such-program", options=TuneOptions(budget=8), batch=0)
    with pytest.raises(HlotuneError, match="^budget "):
        autotune(budget=0)
    assert not (tmp_path / "t.sqlite").exists()


def test_a_replay_runner_tunes_from_recorded_measurements(tmp_path):
    from hlotune.data.builtin import ROOT
    from hlotune.tuning.runners.replay import ReplayRunner

    runner = ReplayRunner.from_collection(ROOT / "flags" / "test" / "vit@tiny.npz")
    recorded = [config for config in runner.recorded if not config.is_default]
    assert len(recorded) >= 48
    path = tmp_path / "replay.sqlite"
    result = tune("zoo:vit@tiny", strategy=Exhaustive(recorded[:12]), runner=runner, budget=13,
                  db=path, progress=False)
    medians = {c: np.median(runner.recorded[c]) for c in recorded[:12]}
    assert result.candidate == min(medians, key=medians.get)
    assert result.measurements == 13 and result.failed == 0
    (missing,) = runner.measure("zoo:vit@tiny", [SearchSpace("flags").config({"pass:cse": True, "pass:fusion": True, "xla_cpu_use_xnnpack": False})], FAST)[0].measurements
    assert missing.status == "failed" and "not in the recorded data" in missing.reason
    with TuningDatabase(path) as db:  # this machine's view: replayed records stay apart
        assert db.records(result.fingerprint) == []


class _LuckyOnce:
    """Scripted runtimes (ns): every config runs as `truth` says, except that `lucky`'s first
    measurement comes out at `lucky_ns`, as a noisy search batch can."""

    def __init__(self, truth: dict, lucky: CompileConfig, lucky_ns: int) -> None:
        from hlotune.tuning.runners.replay import ReplayRunner

        self.lucky, self.lucky_ns = lucky, lucky_ns
        recorded = {config: [ns + d for d in (-2, -1, 0, 1, 2, 0)] for config, ns in truth.items()}
        self.replay = ReplayRunner(recorded, "a script")
        self.machine = self.replay.machine

    def measure(self, program, configs, settings):
        (batch,) = self.replay.measure(program, configs, settings)
        for measurement in batch.measurements:
            if measurement.config == self.lucky:
                measurement.samples_ns = [self.lucky_ns] * 6
                self.lucky = None
        return [batch]

    def close(self) -> None:
        pass


@pytest.mark.parametrize("truly_faster", [True, False])
def test_the_decision_keeps_what_is_faster_when_measured_again(tmp_path, truly_faster):
    """A config that looked 30% faster in its search batch but runs 30% slower is never kept:
    the truly 10% faster one is when there is one, the default otherwise."""
    lucky, faster, slower = (CompileConfig(FlagConfig.from_dict(o)) for o in (
        {"xla_cpu_use_xnnpack": False}, {"xla_backend_optimization_level": 1},
        {"xla_disable_hlo_passes": ["cse"]}))
    truth = {DEFAULT_CONFIG: 1000, lucky: 1300, faster: 900, slower: 1200}
    pool = [lucky, faster, slower] if truly_faster else [lucky, slower]
    result = tune(MLP, strategy=Exhaustive(pool), runner=_LuckyOnce(truth, lucky, 700),
                  budget=len(pool) + 1, batch=3, db=tmp_path / "t.sqlite", progress=False)
    kept = faster if truly_faster else DEFAULT_CONFIG
    assert result.best_config == kept and truth[kept] <= truth[DEFAULT_CONFIG]
    assert result.history[-1] == pytest.approx(1000 / 700)  # the search did see the lucky batch


def test_replayed_configs_have_their_recorded_drift_corrected_medians():
    """A collection's batches ran minutes apart, and one batch can drift while it samples to its
    noise target: each replayed config's median must be the one its JSON record gives, scaled by
    its batch's drift, whatever stretch of samples the npz kept."""
    from hlotune.data.builtin import ROOT
    from hlotune.tuning.runners.replay import ReplayRunner

    npz = ROOT / "flags" / "test" / "vit@small.npz"  # its batches' defaults differ by 65%
    summary = json.loads(npz.with_suffix(".json").read_text())
    batch_ns = [batch["default_ns"] for batch in summary["batches"]]
    recorded = ReplayRunner.from_collection(npz).recorded
    for record in (r for r in summary["configs"] if r["status"] == "ok"):
        expected = record["median_ns"] * np.median(batch_ns) / batch_ns[record["batch"]]
        replayed = recorded[CompileConfig.from_dict(record["config"])]
        assert np.median(replayed) == pytest.approx(expected, rel=1e-3)
    assert np.median(recorded[DEFAULT_CONFIG]) == pytest.approx(np.median(batch_ns), rel=1e-3)


class _SlowCountingRunner:
    """A replay that takes a while per batch and remembers every config it measured."""

    def __init__(self, replay) -> None:
        self.replay, self.machine, self.measured = replay, replay.machine, []

    def measure(self, program, configs, settings):
        time.sleep(0.2)
        self.measured += list(configs)
        return self.replay.measure(program, configs, settings)

    def close(self) -> None:
        pass


def _replay_of_vit():
    from hlotune.data.builtin import ROOT
    from hlotune.tuning.runners.replay import ReplayRunner

    replay = ReplayRunner.from_collection(ROOT / "flags" / "test" / "vit@tiny.npz")
    return replay, [config for config in replay.recorded if not config.is_default][:12]


def test_two_tuners_on_one_database_measure_nothing_twice(tmp_path, db_location):
    replay, recorded = _replay_of_vit()
    program, space, path = load_program("zoo:vit@tiny"), SearchSpace("flags"), db_location
    runners = [_SlowCountingRunner(replay) for _ in range(2)]

    def run(runner, order):
        with TuningDatabase(path, machine=runner.machine) as db:
            Tuner(program, space, Exhaustive(order), runner, db, fingerprint="f" * 16).run(13, batch=4)

    orders = (recorded, recorded[::-1])  # they meet in the middle
    threads = [threading.Thread(target=run, args=pair) for pair in zip(runners, orders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    measured = [config for runner in runners for config in runner.measured]
    assert all(runner.measured for runner in runners)  # both took part
    candidates = [config for config in measured if config in recorded]
    alone = _SlowCountingRunner(replay)  # the final check, as one tuner takes it
    with TuningDatabase(tmp_path / "alone.sqlite", machine=replay.machine) as db:
        Tuner(program, space, Exhaustive(recorded), alone, db, fingerprint="f" * 16).run(13, batch=4)
    final_check = alone.measured[len(recorded):]
    assert final_check and set(final_check) <= set(recorded)
    assert sorted(c.key for c in candidates) == sorted(c.key for c in [*recorded, *final_check])
    with TuningDatabase(path, machine=replay.machine) as db:
        assert len(db.records("f" * 16)) == len(recorded) + 1


def test_a_failed_write_keeps_every_earlier_batch(tmp_path):
    replay, recorded = _replay_of_vit()
    path = tmp_path / "full.sqlite"

    class TurnReadOnly(Callback):
        """After the first batch the connection may no longer write, as on a read-only file
        (SQLite's own error; root ignores file permissions, so chmod cannot show it)."""

        def after_batch(self, tuner, trials):
            tuner.database._sql.execute("PRAGMA query_only = ON")

    with pytest.raises(HlotuneError, match="cannot write the tuning database .*readonly.*kept"):
        tune("zoo:vit@tiny", strategy=Exhaustive(recorded), runner=replay, budget=13, batch=4,
             db=path, progress=False, callbacks=[TurnReadOnly()])
    with TuningDatabase(path, machine=replay.machine) as db:
        assert db._sql.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        records = db.records(program_fingerprint(load_program("zoo:vit@tiny")))
        assert [r.config for r in records] == [DEFAULT_CONFIG, *recorded[:4]]  # the first batch


@pytest.mark.parametrize("allowed", [False, True])
def test_numerics_changing_options_are_searched_only_when_allowed(tmp_path, allowed):
    replay, _ = _replay_of_vit()
    space = SearchSpace("flags", allow_numerics_change=allowed)
    singles = Exhaustive.around_default(space).ask(1000)
    result = tune("zoo:vit@tiny", strategy=Exhaustive(singles), runner=replay, budget=len(singles) + 1,
                  db=tmp_path / "db.sqlite", progress=False, allow_numerics_change=allowed)
    with TuningDatabase(tmp_path / "db.sqlite", machine=replay.machine) as db:
        kinds = {record.config.numerics for record in db.records(result.fingerprint)}
    assert kinds == ({"preserving", "changing"} if allowed else {"preserving"})
    assert result.numerics == result.best_config.numerics
    assert allowed or result.numerics == "preserving"
    with pytest.raises(HlotuneError, match="changes numerics"):
        SearchSpace("flags").genome(CompileConfig(FlagConfig.from_dict({"xla_cpu_enable_fast_math": True})))


def test_a_relaxed_decision_is_never_handed_to_a_run_that_did_not_allow_it(tmp_path):
    safe = CompileConfig(FlagConfig.from_dict({"xla_cpu_use_xnnpack": False}))
    fast = CompileConfig(FlagConfig.from_dict({"xla_cpu_enable_fast_math": True}))
    with TuningDatabase(tmp_path / "db.sqlite") as db:
        for chosen in (safe, fast):
            db.decide(Decision("f" * 64, chosen, chosen, 200.0, 150.0, 0.02, "random", "flags", 0.0))
        assert db.best("f" * 64).chosen == safe
        assert db.best("f" * 64, allow_numerics_change=True).chosen == fast
        assert "changes numerics" in db.export("f" * 64, "xla_flags").note
