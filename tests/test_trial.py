"""The trial in every process: a decision is kept only where this process's own calls show it
faster than jax.jit's executable, and the field of trials retires what loses."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hlotune
from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.configs.flags import FlagConfig
from hlotune.fleet import trial as trials
from hlotune.fleet.jitted import TRIAL
from hlotune.fleet.recorder import recorder_for
from hlotune.fleet.trial import CONFIRMED_PAIRS, JIT_ARM, MAX_PAIRS, MIN_PAIRS, ProcessTrial
from hlotune.tuning.autotune import DATABASE, JIT
from hlotune.tuning.storage import Decision, TuningDatabase
from hlotune.tuning.storage.field import (APPLIED, CARRIED, KEPT, ON_TRIAL, REJECTED, RETIRE_AFTER, RETIRED,
                                          TIED, UNFINISHED, TrialOutcome)

UNFUSED = CompileConfig(FlagConfig.from_dict({"xla_disable_hlo_passes": ["fusion"]}))  # 1.8x slower here


def _run(jit_ms: float, tuned_ms: float, calls: int = 1000, jitter: float = 0.0, seed: int = 0,
         field_speedup: float | None = None) -> ProcessTrial:
    """A trial fed calls of the given times (each off by up to `jitter`, relative) until it decides."""
    rng, trial = np.random.default_rng(seed), ProcessTrial("{}", 0.0, field_speedup)
    for _ in range(calls):
        arm = trial.next_arm()
        trial.add(arm, (jit_ms if arm == JIT_ARM else tuned_ms) * (1 + jitter * rng.uniform(-1, 1)) / 1e3)
        if trial.verdict:
            break
    return trial


def test_the_rule_keeps_a_clear_gain_early_and_a_tie_or_a_loss_keeps_jax_jit():
    fast = _run(2.0, 1.5, jitter=0.05)
    assert fast.verdict == KEPT and fast.pairs == MIN_PAIRS and fast.speedup == pytest.approx(4 / 3, rel=0.05)
    slower = _run(1.5, 2.0, jitter=0.05)
    assert slower.verdict == REJECTED and slower.pairs == 5  # rejected sooner than kept
    tie = _run(2.0, 2.0, jitter=0.05)
    assert tie.verdict in (REJECTED, TIED)  # a tie keeps the default
    assert _run(2.0, 1.98, jitter=0.3).verdict in (REJECTED, TIED)  # 1.01x under 30% noise
    undecided = ProcessTrial("{}", 0.0)  # pairs won and lost in turn: undecided to the bound
    while undecided.verdict is None:
        arm = undecided.next_arm()
        undecided.add(arm, 2e-3 if arm != JIT_ARM else (2.2e-3 if undecided.pairs % 2 else 1.8e-3))
    assert undecided.verdict == TIED and undecided.pairs == MAX_PAIRS
    outlier = ProcessTrial("{}", 0.0)  # one of the decision's calls 5x long costs one pair, no more
    for call in range(30):
        if outlier.verdict:
            break
        arm = outlier.next_arm()
        outlier.add(arm, (2.0 if arm == JIT_ARM else 1.5) * (5 if call == 2 else 1) / 1e3)
    assert outlier.verdict == KEPT and outlier.pairs == 12 and outlier.wins == 11
    slow_calls = _run(1000.0, 990.0, jitter=0.3)  # a second a call: the time bound ends it first
    assert slow_calls.verdict == TIED and slow_calls.pairs < MIN_PAIRS
    arms, order = ProcessTrial("{}", 0.0), []
    for call in range(10):
        order.append(arms.next_arm())
        arms.add(order[-1], 1e-3, compiled=call == 4)
    assert order == ["jit", "tuned", "tuned", "jit", "jit", "tuned", "tuned", "jit", "jit", "tuned"]
    assert arms.pairs == 3  # neither the warm-up pair nor one in which jax.jit compiled counts


def test_a_tie_keeps_the_default_in_most_trials_whatever_the_noise():
    kept = sum(_run(2.0, 2.0, jitter=0.2, seed=seed).verdict == KEPT for seed in range(200))
    assert kept <= 4  # the rule's false keeps: at most 2% of ties


def test_a_decision_the_field_confirmed_is_kept_on_its_first_pairs_beyond_half_its_gain():
    quick = _run(4.0, 1.0, jitter=0.05, field_speedup=4.0)  # tv3d's kind of gain: a bar of 2x
    assert quick.verdict == KEPT and quick.pairs == CONFIRMED_PAIRS and quick.on_field_evidence
    losing = _run(1.5, 2.0, jitter=0.05, field_speedup=4.0)  # the field's gain does not hold here
    assert losing.verdict == REJECTED and not losing.on_field_evidence
    smaller = _run(2.6, 2.0, jitter=0.05, field_speedup=4.0)  # 1.3x here: the sign test keeps it
    assert smaller.verdict == KEPT and smaller.pairs == MIN_PAIRS and not smaller.on_field_evidence
    assert ProcessTrial("{}", 0.0, 1.02).bar is None and ProcessTrial("{}", 0.0, 4.0).bar == pytest.approx(2.0)
    assert sum(_run(2.0, 2.0, jitter=0.2, seed=seed, field_speedup=1.2).on_field_evidence
               for seed in range(200)) <= 4  # a tie passes a bar of 1.095x three times in a row: 2%


def test_a_confirmed_decision_still_loses_its_trial_in_a_process_where_it_is_slower(tmp_path):
    location = str(tmp_path / "fleet.sqlite")
    fingerprint = _plant(location)
    with TuningDatabase(location) as db:  # processes elsewhere kept it at 4x
        for process in range(RETIRE_AFTER):
            db.owner = f"elsewhere-{process}"
            db.record_trials([(fingerprint, TrialOutcome(UNFUSED.key, 16, 16, 4.0, 4e6, 1e6, KEPT, 0.1))])
        assert db.state(fingerprint).state == APPLIED
    step, u = hlotune.jit(stencil, db=location), jnp.ones((256, 256))
    for _ in range(200):
        u = step(u)
    trial = recorder_for(location).trials[fingerprint]
    assert trial.bar == pytest.approx(2.0) and trial.verdict != KEPT  # fusion off: slower here
    # rejected: jax.jit's executable; tied (the suite's load can bring fusion off near 0.99x):
    # a tie follows the field's pooled pairs, which the processes elsewhere show faster
    assert step.choice(u).source == (JIT if trial.verdict == REJECTED else DATABASE)


def stencil(u):
    for _ in range(10):
        u = 0.25 * (jnp.roll(u, 1, 0) + jnp.roll(u, -1, 0) + jnp.roll(u, 1, 1) + jnp.roll(u, -1, 1))
    return u


PROCESS = """
import sys, jax, jax.numpy as jnp, hlotune
from tests.test_trial import stencil
step = hlotune.jit(stencil, db=sys.argv[1])
u = jnp.ones((256, 256))
for _ in range(int(sys.argv[2])):
    u = step(u)
jax.block_until_ready(u)
print(step.choice(u).source)
"""


def _process(location: str, calls: int = 200) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", PROCESS, location, str(calls)], capture_output=True, text=True,
                          check=True, cwd=str(__import__("pathlib").Path(__file__).parents[1]))


def _plant(location: str, config: CompileConfig = UNFUSED) -> str:
    fingerprint = hlotune.jit(stencil, db=location).choice(jnp.ones((256, 256))).fingerprint
    with TuningDatabase(location) as db:  # as `db import` stores one: a claimed 1.5x
        db.decide(Decision(fingerprint, config, config, 150.0, 100.0, 0.01, "import", "flags", 1.0))
    return fingerprint


def test_a_planted_slow_decision_is_rejected_in_every_process_then_retired(tmp_path):
    location = str(tmp_path / "fleet.sqlite")
    fingerprint = _plant(location)
    for _ in range(RETIRE_AFTER):
        done = _process(location)
        assert done.stdout.split()[-1] == JIT, done.stderr
        assert "keeps jax.jit's executable" in done.stderr  # rejected, or a tie on a loaded machine
    with TuningDatabase(location) as db:
        state = db.state(fingerprint)
        assert state.state == RETIRED and state.field.kept == 0 and len(state.field.finished) == RETIRE_AFTER
        assert state.field.median < 0.99, state.field  # fusion off: slower (the suite's load may bring it near 0.98x)
    done = _process(location, calls=3)
    assert done.stdout.split()[-1] == JIT and "hlotune:" not in done.stderr  # retired: no trial


def test_a_decision_kept_by_its_trial_runs_from_then_on(tmp_path, monkeypatch, capfd):
    """The keeping half of the plumbing, with the rule told to keep (no real config is faster
    here by a margin a test can rely on)."""
    location = str(tmp_path / "fleet.sqlite")
    fingerprint = _plant(location, CompileConfig(FlagConfig.from_dict({"xla_cpu_use_xnnpack": False})))
    monkeypatch.setattr(trials.ProcessTrial, "_decide", lambda self: KEPT if self.pairs >= 2 else None)
    step, u = hlotune.jit(stencil, db=location), jnp.ones((256, 256))
    assert step.choice(u).source == TRIAL
    for _ in range(6):  # the warm-up pair, then two counted ones (jax.jit compiled in neither)
        np.testing.assert_allclose(step(u), jax.jit(stencil)(u), rtol=1e-6)
    assert step.choice(u).source == DATABASE
    assert "keeps the config tuned for it" in capfd.readouterr().err
    step(u)
    with TuningDatabase(location) as db:
        (outcome,) = db.field(fingerprint, step.choice(u).config.key).trials
        assert (outcome.verdict, outcome.pairs) == (KEPT, 2)
        assert db.state(fingerprint).state == ON_TRIAL  # two pairs confirm nothing in the field
    recorder_for(location).flush()
    with TuningDatabase(location) as db:
        (recording,) = db.recordings()
    assert recording.calls == 7  # trial calls count as the program's calls


def test_a_near_tie_kept_is_tried_again_later_and_loses_its_place_if_it_lost_its_lead(tmp_path, monkeypatch, capfd):
    """Two executables' relative speed drifts within a process: a decision kept by a small
    margin gets a second trial, whose loss puts jax.jit's executable back (the rule is told
    to keep, then to reject, as no config here drifts on cue)."""
    from hlotune.fleet import jitted

    location, planted = str(tmp_path / "fleet.sqlite"), CompileConfig(FlagConfig.from_dict({"xla_cpu_use_xnnpack": False}))
    fingerprint = _plant(location, planted)
    monkeypatch.setattr(trials.ProcessTrial, "_decide",
                        lambda self: (REJECTED if self.recheck else KEPT) if self.pairs >= 2 else None)
    monkeypatch.setattr(trials, "RECHECK_BELOW", math.inf)  # whatever this run's margin
    monkeypatch.setattr(jitted, "RECHECK_S", 0.0)
    step, u = hlotune.jit(stencil, db=location), jnp.ones((256, 256))
    for _ in range(6):
        step(u)
    assert step.choice(u).source == DATABASE and "to be tried again in 0 s" in capfd.readouterr().err
    for _ in range(16):  # the next sampled call opens the second trial, which rejects
        np.testing.assert_allclose(step(u), jax.jit(stencil)(u), rtol=1e-6)
    assert step.choice(u).source == JIT
    assert "keeps jax.jit's executable" in capfd.readouterr().err
    recorder_for(location).flush()
    with TuningDatabase(location) as db:  # the process's last word
        (outcome,) = db.field(fingerprint, planted.key).trials
        assert outcome.verdict == REJECTED


def test_only_a_near_tie_kept_on_its_own_pairs_is_tried_again():
    assert _run(2.0, 1.9, jitter=0.01).rechecks  # 1.05x
    assert not _run(2.0, 1.0, jitter=0.01).rechecks  # 2x: drift does not turn it
    assert not _run(1.9, 2.0, jitter=0.01).rechecks  # rejected
    assert not _run(2.0, 1.0, field_speedup=2.0).rechecks  # kept at the field's bar
    second = ProcessTrial("{}", 0.0, recheck=True)
    while second.verdict is None:
        arm = second.next_arm()
        second.add(arm, 2e-3 if arm == JIT_ARM else 1.9e-3)
    assert second.verdict == KEPT and not second.rechecks  # tried twice at most


def test_a_tied_trial_keeps_the_decision_the_fields_pairs_show_faster(tmp_path, monkeypatch, capfd):
    location = str(tmp_path / "fleet.sqlite")
    _plant(location)
    fingerprint = hlotune.jit(stencil, db=location).choice(jnp.ones((256, 256))).fingerprint
    monkeypatch.setattr(trials.ProcessTrial, "_decide", lambda self: TIED if self.pairs >= 2 else None)
    u = jnp.ones((256, 256))
    alone = hlotune.jit(stencil, db=location)
    for _ in range(6):
        alone(u)
    assert alone.choice(u).source == JIT and "a tie by the trial's bound" in capfd.readouterr().err
    with TuningDatabase(location) as db:  # another process's pairs: 16 won of 16
        db.record_trials([(fingerprint, TrialOutcome(UNFUSED.key, 16, 16, 1.3, 2e6, 1.5e6, TIED, 0.1))])
    recorder_for(location)._announced.clear()  # as a new process would say it again
    helped = hlotune.jit(stencil, db=location)
    for _ in range(6):
        helped(u)
    assert helped.choice(u).source == DATABASE and "faster in the field's" in capfd.readouterr().err


def test_a_process_that_ends_mid_trial_leaves_its_pairs_to_the_field(tmp_path):
    location = str(tmp_path / "fleet.sqlite")
    fingerprint = _plant(location)
    _process(location, calls=10)  # the warm-up pair and up to four counted pairs: too few to decide
    with TuningDatabase(location) as db:
        (outcome,) = db.field(fingerprint, UNFUSED.key).trials
        state = db.state(fingerprint)
    assert outcome.verdict == UNFINISHED and 2 <= outcome.pairs <= 4
    assert state.state == ON_TRIAL and state.field.median is None  # no finished trial yet


def test_a_database_that_breaks_mid_trial_leaves_jax_jit_running_with_one_warning(tmp_path):
    location = str(tmp_path / "fleet.sqlite")
    _plant(location)
    step, u = hlotune.jit(stencil, db=location), jnp.ones((256, 256))
    step(u)
    recorder = recorder_for(location)
    recorder._db.close()  # as a server going away would leave it
    recorder._flushed = float("-inf")  # the next call writes
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            np.testing.assert_allclose(step(u), jax.jit(stencil)(u), rtol=1e-6)
    assert step.choice(u).source == JIT
    assert sum("cannot be used" in str(w.message) for w in caught) == 1


def test_trial_false_applies_the_decision_without_a_trial(tmp_path, monkeypatch):
    location = str(tmp_path / "fleet.sqlite")
    _plant(location)
    u = jnp.ones((256, 256))
    assert hlotune.jit(stencil, db=location, trial=False).choice(u).source == DATABASE
    monkeypatch.setenv("HLOTUNE_TRIAL", "0")
    assert hlotune.jit(stencil, db=location).choice(u).source == DATABASE
    assert hlotune.jit(stencil, db=location, trial=True).choice(u).source == TRIAL


def test_the_field_pools_trials_from_processes_on_either_database(db_location):
    key = UNFUSED.key
    writers = [TuningDatabase(db_location) for _ in range(3)]  # three processes, as it were
    try:
        for db, verdict in zip(writers, (KEPT, REJECTED, KEPT)):
            db.record_trials([("p", TrialOutcome(key, 4, 2, 1.2, 2e6, 1e6, UNFINISHED, 0.1))])
            db.record_trials([("p", TrialOutcome(key, 10, 9, 1.5, 2e6, 1e6, verdict, 0.1))])  # rewritten
        field = writers[0].field("p", key)
        writers[0].decide(Decision("p", UNFUSED, UNFUSED, 150.0, 100.0, 0.01, "import", "flags", 1.0))
        state = writers[0].state("p")
    finally:
        for db in writers:
            db.close()
    assert len(field.trials) == 3 and (field.kept, field.rejected) == (2, 1)
    assert (field.pairs, field.wins) == (30, 27) and field.confirmed  # the pairs pool
    assert state.state == APPLIED
    assert field.median == pytest.approx(1.5) and not field.retired


def test_a_config_the_field_retired_is_one_a_tune_of_its_program_does_not_keep(db_location):
    slower = CompileConfig(FlagConfig.from_dict({"xla_cpu_use_xnnpack": False}))
    writers = [TuningDatabase(db_location) for _ in range(RETIRE_AFTER)]
    try:
        for db in writers:
            db.record_trials([("p", TrialOutcome(slower.key, 16, 1, 0.9, 1e6, 1.1e6, REJECTED, 0.1)),
                              ("p", TrialOutcome(UNFUSED.key, 16, 15, 1.4, 1.4e6, 1e6, KEPT, 0.1))])
        assert writers[0].retired("p") == {slower.key} and writers[0].retired("q") == set()
    finally:
        for db in writers:
            db.close()


def test_db_import_stores_a_decision_that_goes_on_trial_and_refuses_bad_files(tmp_path, cli):
    location = str(tmp_path / "fleet.sqlite")
    step, u = hlotune.jit(stencil, db=location), jnp.ones((256, 256))
    step(u)
    recorder_for(location).flush()
    by_hand = tmp_path / "by_hand.json"
    by_hand.write_text(json.dumps({"program": f"{__name__}.stencil", "config": UNFUSED.to_dict()}))
    done = cli("db", "import", str(by_hand), "--db", location)
    assert done.returncode == 0, done.stderr
    assert "stencil" in done.stdout and "trials it" in done.stdout
    assert hlotune.jit(stencil, db=location).choice(u).source == TRIAL
    exported = cli("db", "export", step.choice(u).fingerprint[:12], "--format", "json", "--db", location).stdout
    (tmp_path / "exported.json").write_text(exported)  # what export prints imports as it is
    assert cli("db", "import", str(tmp_path / "exported.json"), "--db", location).returncode == 0
    foreign = json.loads(exported)
    foreign["machine"]["cores"] += 1
    (tmp_path / "foreign.json").write_text(json.dumps(foreign))
    (tmp_path / "corrupt.json").write_text("{not json")
    (tmp_path / "unknown.json").write_text(json.dumps({"program": "nobody", "config": UNFUSED.to_dict()}))
    (tmp_path / "bad_flag.json").write_text(json.dumps({"program": f"{__name__}.stencil",
                                                         "config": {"flags": {"xla_no_such_flag": True}}}))
    for name, message in (("missing.json", "no such file"), ("corrupt.json", "not a decision file"),
                          ("foreign.json", "another kind of machine"), ("unknown.json", "no program"),
                          ("bad_flag.json", "unknown XLA option")):
        done = cli("db", "import", str(tmp_path / name), "--db", location)
        assert done.returncode == 1 and message in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr


def test_after_a_jax_upgrade_the_previous_releases_decision_is_carried_over_on_trial(tmp_path):
    """An upgrade simulated by the database's compiler key: the decision stored under another
    jaxlib is a candidate here, trialled even where trials are off."""
    from hlotune.compiler.measurement.machine import this_machine

    location = str(tmp_path / "fleet.sqlite")
    u = jnp.ones((256, 256))
    fingerprint = hlotune.jit(stencil, db=location).choice(u).fingerprint
    older = dataclasses.replace(this_machine(), jax="0.0.1", jaxlib="0.0.1")
    with TuningDatabase(location, machine=older) as db:
        db.decide(Decision(fingerprint, UNFUSED, UNFUSED, 150.0, 100.0, 0.01, "random", "flags", 1.0))
    with TuningDatabase(location) as db:
        state = db.state(fingerprint)
    assert (state.state, state.decision.chosen) == (CARRIED, UNFUSED)
    assert hlotune.jit(stencil, db=location, trial=False).choice(u).source == TRIAL


def test_donated_arguments_are_donated_under_a_decision_as_under_jax_jit(tmp_path):
    location = str(tmp_path / "fleet.sqlite")

    def scaled(u, factor, v):
        return stencil(u) * factor + v

    u, v = jnp.ones((256, 256)), jnp.zeros((256, 256))
    recorded = hlotune.jit(scaled, static_argnums=1, db=location)
    fingerprint = recorded.choice(u, 2.0, v).fingerprint
    with TuningDatabase(location) as db:
        db.decide(Decision(fingerprint, UNFUSED, UNFUSED, 150.0, 100.0, 0.01, "import", "flags", 1.0))
    for options in (dict(donate_argnums=0), dict(donate_argnames="u"), dict(donate_argnums=2)):
        donating = hlotune.jit(scaled, static_argnums=1, db=location, trial=False, **options)
        first, second = jnp.ones((256, 256)), jnp.zeros((256, 256))
        assert donating.choice(first, 2.0, second).source == DATABASE
        np.testing.assert_allclose(donating(first, 2.0, second), jax.jit(scaled, static_argnums=1)(u, 2.0, v),
                                   rtol=1e-6)
        donated = second if options.get("donate_argnums") == 2 else first
        kept = first if donated is second else second
        assert donated.is_deleted() and not kept.is_deleted()


def test_the_report_scales_a_window_to_a_day_only_where_it_spans_an_hour_and_the_hosts_could_run_it(tmp_path):
    import time

    from hlotune.fleet.savings import fleet_savings
    from hlotune.tuning.storage import CallCount

    def savings(calls: int, window_s: float, name: str):
        location = str(tmp_path / name)
        fingerprint = hlotune.jit(stencil, db=location).choice(jnp.ones((256, 256))).fingerprint
        with TuningDatabase(location) as db:
            db.record_calls(fingerprint, CallCount(calls, 10, 1.0, time.time() - window_s))
            return fleet_savings(db), db.machine.cores

    short, _ = savings(100, 600, "short.sqlite")  # 10 s in 10 minutes
    long, cores = savings(10**6, 3600, "long.sqlite")  # 1e5 s in an hour
    assert short.recorded_s == pytest.approx(10.0) and short.seconds_per_day is None
    assert long.recorded_s == pytest.approx(1e5)  # more than one host could run in the hour:
    assert long.seconds_per_day == pytest.approx(cores * 86400)  # capped at its cores all day
    assert long.to_json()["programs"][0]["seconds_per_day"] == pytest.approx(cores * 86400)
