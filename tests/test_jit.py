"""hlotune.jit: a drop-in for jax.jit that records what runs and applies stored decisions, and
never breaks the user's program."""

from __future__ import annotations

import os
import json
import subprocess
import sys
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hlotune
from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.configs.flags import FlagConfig
from hlotune.tuning.autotune import DATABASE, JIT
from hlotune.fleet.jitted import TRIAL
from hlotune.fleet.recorder import SAMPLE_EVERY, next_sample, recorder_for
from hlotune.tuning.storage import CallCount, Decision, TuningDatabase
from hlotune.tuning.storage.fleet_log import VERIFIED_FLOOR

CHOSEN = CompileConfig(FlagConfig.from_dict({"xla_cpu_use_xnnpack": False}))


def mlp(params, x, depth):
    for _ in range(depth):
        x = jnp.tanh(x @ params["w"] + params["b"])
    return x


def _args():
    params = {"w": jnp.full((16, 16), 0.1), "b": jnp.ones(16)}
    return params, jnp.linspace(0, 1, 64 * 16).reshape(64, 16)


@pytest.fixture
def location(request, tmp_path):
    return str(tmp_path / "fleet.sqlite")


def test_it_computes_what_jax_jit_does_for_every_way_of_calling(location):
    params, x = _args()
    plain = jax.jit(mlp, static_argnums=2)
    ours = hlotune.jit(mlp, static_argnums=2, db=location)
    np.testing.assert_array_equal(ours(params, x, 2), plain(params, x, 2))
    np.testing.assert_array_equal(ours(params, x=x, depth=3), plain(params, x=x, depth=3))
    by_name = hlotune.jit(mlp, static_argnames="depth", db=location)
    np.testing.assert_array_equal(by_name(params, x, depth=2), plain(params, x, 2))
    keyed = hlotune.jit(lambda key, x: x + jax.random.normal(key, x.shape), db=location)
    key = jax.random.key(0)
    np.testing.assert_array_equal(keyed(key, x), jax.jit(lambda key, x: x + jax.random.normal(key, x.shape))(key, x))
    donating = hlotune.jit(lambda a, b: a * b, donate_argnums=0, db=location)
    a = jnp.ones(8)
    np.testing.assert_array_equal(donating(a, jnp.full(8, 2.0)), jnp.full(8, 2.0))
    assert a.is_deleted()  # donated as jax.jit donates
    assert ours.lower(params, x, 2).as_text() == plain.lower(params, x, 2).as_text()
    assert jax.grad(lambda x: ours(params, x, 1).sum())(x).shape == x.shape  # traced inside grad


def test_each_program_is_recorded_once_and_its_calls_counted(location):
    params, x = _args()
    step = hlotune.jit(mlp, static_argnums=2, db=location)
    for _ in range(2 * SAMPLE_EVERY):
        step(params, x, 2)
    step(params, x[:8], 2)  # another signature: another program
    recorder_for(location).flush()
    with TuningDatabase(location) as db:
        big, small = db.recordings()
    assert big.name == f"{__name__}.mlp" and big.calls == 2 * SAMPLE_EVERY and big.tunable
    assert big.shapes == "float32[16] float32[16,16] float32[64,16]"
    assert big.seconds > 0 and small.calls == 1 and big.fingerprint != small.fingerprint


def test_a_stored_decision_is_on_trial_at_the_next_compile_or_applied_without_one(location):
    params, x = _args()
    recorded = hlotune.jit(mlp, static_argnums=2, db=location)
    assert recorded.choice(params, x, 2).source == JIT
    fingerprint = recorded.choice(params, x, 2).fingerprint
    with TuningDatabase(location) as db:
        db.decide(Decision(fingerprint, CHOSEN, CHOSEN, 200.0, 150.0, 0.01, "random", "flags", 1.0))
    trialled = hlotune.jit(mlp, static_argnums=2, db=location)  # a later process, as it were
    assert trialled.choice(params, x, 2).source == TRIAL
    np.testing.assert_allclose(trialled(params, x, 2), jax.jit(mlp, static_argnums=2)(params, x, 2), rtol=1e-6)
    applied = hlotune.jit(mlp, static_argnums=2, db=location, trial=False)
    assert applied.choice(params, x, 2).source == DATABASE
    assert applied.choice(params, x, 2).config == CHOSEN
    np.testing.assert_allclose(applied(params, x, 2), jax.jit(mlp, static_argnums=2)(params, x, 2), rtol=1e-6)


def test_two_signatures_take_jax_jits_dispatch_and_their_calls_are_counted(location, monkeypatch):
    """Not a Python lookup per call: the calls are counted to the program last looked up, and
    the programs' sampled calls look up again, so the split follows the calls."""
    params, x = _args()
    step = hlotune.jit(mlp, static_argnums=2, db=location)
    lookups, lookup = [], step._lookup
    monkeypatch.setattr(step, "_lookup", lambda *a: lookups.append(1) or lookup(*a))
    for _ in range(300):
        step(params, x, 2)
    for _ in range(600):
        step(params, x[:8], 2)
    recorder_for(location).flush()
    with TuningDatabase(location) as db:
        counts = {r.shapes.split()[-1]: r.calls for r in db.recordings()}
    assert sum(counts.values()) == 900 and len(lookups) < 40
    assert counts["float32[8,16]"] >= 600 - SAMPLE_EVERY and counts["float32[64,16]"] >= 300 - SAMPLE_EVERY


def test_the_sampling_schedule_times_calls_2_4_8_up_to_64_then_every_64th():
    timed, calls = [], 0
    while calls < 128:
        calls = next_sample(calls)
        timed.append(calls)
    assert timed == [2, 4, 8, 16, 32, 64, 128] and next_sample(128) == 192


def test_a_program_that_cannot_be_exported_is_recorded_as_tunable_only_in_its_process(location):
    def logged(x):
        jax.debug.callback(lambda v: None, x.sum())
        return x * 2

    x = jnp.arange(8.0)
    np.testing.assert_array_equal(hlotune.jit(logged, db=location)(x), x * 2)
    recorder_for(location).flush()
    with TuningDatabase(location) as db:
        (recording,) = db.recordings()
    if recording.tunable:
        pytest.skip("this jax exports host callbacks")
    assert "callback" in recording.reason and recording.calls == 1


def test_a_database_it_cannot_use_warns_once_and_the_program_runs_as_under_jax_jit(tmp_path):
    corrupt = tmp_path / "corrupt.sqlite"
    corrupt.write_bytes(b"not a database" * 100)
    params, x = _args()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        step = hlotune.jit(mlp, static_argnums=2, db=str(corrupt))
        for depth in (1, 2, 3):
            np.testing.assert_array_equal(step(params, x, depth), jax.jit(mlp, static_argnums=2)(params, x, depth))
    messages = [str(w.message) for w in caught if "tuning database" in str(w.message)]
    assert len(messages) == 1 and "compile as jax.jit would" in messages[0]
    unreachable = hlotune.jit(mlp, static_argnums=2, db="postgresql://nobody@127.0.0.1:1/none")
    with pytest.warns(RuntimeWarning, match="cannot reach"):
        np.testing.assert_array_equal(unreachable(params, x, 1), jax.jit(mlp, static_argnums=2)(params, x, 1))


def test_install_routes_jax_jit_and_hlotune_disable_turns_it_off(tmp_path):
    script = """
import jax, jax.numpy as jnp, hlotune
hlotune.install()
f = jax.jit(lambda x: x + 1)
print(type(f).__name__, float(f(jnp.ones(()))))
hlotune.uninstall()
print(type(jax.jit(lambda x: x)).__name__)
"""
    env = {key: value for key, value in os.environ.items() if key != "HLOTUNE_DISABLE"}
    routed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                            env=env | {"HLOTUNE_DB": str(tmp_path / "routed.sqlite")})
    assert routed.stdout.split() == ["Jitted", "2.0", "PjitFunction"]
    assert (tmp_path / "routed.sqlite").exists()
    disabled = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                              env=env | {"HLOTUNE_DB": str(tmp_path / "off.sqlite"), "HLOTUNE_DISABLE": "1"})
    assert disabled.stdout.split() == ["PjitFunction", "2.0", "PjitFunction"]
    assert not (tmp_path / "off.sqlite").exists()  # nothing recorded


RECORD = """
import sys, jax, jax.numpy as jnp, hlotune

def chain(x, w):
    for _ in range(4):
        x = jnp.tanh(x @ w)
    return x

step = hlotune.jit(chain, db=sys.argv[1])
x, w = jnp.ones((64, 64)), jnp.full((64, 64), 0.01)
for _ in range(int(sys.argv[2])):
    jax.block_until_ready(step(x, w))
print(step.choice(x, w).source)
"""


def _record(location: str, calls: int) -> str:
    done = subprocess.run([sys.executable, "-c", RECORD, location, str(calls)], capture_output=True,
                          text=True, check=True)
    return done.stdout.split()[-1]


def test_two_processes_record_one_tunes_and_a_third_applies(db_location, cli):
    """The AutoFDO loop across processes sharing one database, SQLite or PostgreSQL."""
    assert [_record(db_location, calls) for calls in (5, 7)] == [JIT, JIT]
    (status,) = [json.loads(line) for line in cli("fleet", "status", "--db", db_location, "--json").stdout.splitlines()]
    assert (status["name"], status["calls"], status["decision"]) == ("chain", 12, "not tuned")
    assert status["seconds"] >= 0 and status["share"] == 1.0
    tuned = cli("tune", "chain", "--db", db_location, "--budget", "3", "--batch", "2", "--quiet", "--json")
    assert tuned.returncode == 0, tuned.stderr
    assert json.loads(tuned.stdout)["fingerprint"] == status["fingerprint"]  # the same program
    (status,) = [json.loads(line) for line in cli("fleet", "status", "--db", db_location, "--json").stdout.splitlines()]
    result = json.loads(tuned.stdout)
    # a kept config is timed beside jax.jit, and goes on trial where that found it faster
    trialled = not result["kept_default"] and result["verified_speedup"] >= VERIFIED_FLOOR
    assert status["decision"] == ("on trial" if trialled else "default kept" if result["kept_default"] else "no verified gain")
    assert _record(db_location, 1) == (TRIAL if trialled else JIT)


def test_the_fleet_commands_answer_bad_input_in_one_line(tmp_path, cli):
    corrupt = tmp_path / "corrupt.sqlite"
    corrupt.write_bytes(b"not a database" * 100)
    for db, message in ((corrupt, "not a tuning database"), ("mysql://host/db", "unknown database URL scheme"),
                        ("postgresql://nobody@127.0.0.1:1/none", "cannot reach the tuning database"),
                        (tmp_path / "missing.sqlite", "no tuning database")):
        for command in (("fleet", "status"), ("tune", "some_function")):
            done = cli(*command, "--db", db)
            assert done.returncode == 1 and message in done.stderr and len(done.stderr.splitlines()) == 1
    TuningDatabase(tmp_path / "empty.sqlite").close()
    done = cli("tune", "some_function", "--db", tmp_path / "empty.sqlite")
    assert done.returncode == 1 and "no recorded program named 'some_function'" in done.stderr


def test_a_decision_not_verified_faster_than_jax_jit_is_not_applied(location):
    """Nor trialled or counted: fleet status says so, and fleet report gives it no saving."""
    from hlotune.fleet.savings import fleet_savings
    from hlotune.fleet.status import fleet_status
    from hlotune.tuning.storage import Verification

    params, x = _args()
    fingerprint = hlotune.jit(mlp, static_argnums=2, db=location).choice(params, x, 2).fingerprint
    with TuningDatabase(location) as db:
        db.decide(Decision(fingerprint, CHOSEN, CHOSEN, 200.0, 150.0, 0.01, "random", "flags", 1.0))
        db.record_verification(fingerprint, Verification(CHOSEN.key, jit_ns=100.0, tuned_ns=110.0, rounds=10, timestamp=2.0))
        db.record_calls(fingerprint, CallCount(100, 1, 1e-3, time.time() - 3600))
        (status,), (saving,) = fleet_status(db), fleet_savings(db).programs
    assert (status.decision, saving.verified, saving.saved_s) == ("no verified gain", pytest.approx(100 / 110), 0.0)
    assert hlotune.jit(mlp, static_argnums=2, db=location).choice(params, x, 2).source == JIT
    with TuningDatabase(location) as db:  # 1.01x: within the verification's spread
        db.record_verification(fingerprint, Verification(CHOSEN.key, jit_ns=101.0, tuned_ns=100.0, rounds=10, timestamp=2.5))
    assert hlotune.jit(mlp, static_argnums=2, db=location).choice(params, x, 2).source == JIT
    with TuningDatabase(location) as db:
        db.record_verification(fingerprint, Verification(CHOSEN.key, jit_ns=100.0, tuned_ns=90.0, rounds=10, timestamp=3.0))
        (status,), (saving,) = fleet_status(db), fleet_savings(db).programs
    assert (status.decision, saving.verified, saving.source) == ("on trial", pytest.approx(100 / 90), "verified")
    assert saving.saved_share == pytest.approx(0.1)
    assert hlotune.jit(mlp, static_argnums=2, db=location).choice(params, x, 2).source == TRIAL
