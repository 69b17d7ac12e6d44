"""The tuning database on both backends, SQLite and PostgreSQL: what it keeps, who sees it,
claims between tuners, hlotune.jit's recordings, and bad locations as one-line errors."""

from __future__ import annotations

import json

import pytest

from hlotune.compiler.configs.config import DEFAULT_CONFIG, CompileConfig
from hlotune.compiler.configs.flags import FlagConfig
from hlotune.compiler.measurement.machine import Machine, this_machine
from hlotune.compiler.measurement.measure import BatchResult, Measurement
from hlotune.errors import HlotuneError
from hlotune.tuning.storage import CallCount, Decision, TuningDatabase

FP = "f" * 64
FAST = CompileConfig(FlagConfig.from_dict({"xla_cpu_use_xnnpack": False}))


@pytest.fixture
def location(db_location):
    return db_location


def _batch(config: CompileConfig, ns: int) -> BatchResult:
    defaults = [Measurement(DEFAULT_CONFIG, samples_ns=[200, 202, 198, 200])] * 2
    return BatchResult([Measurement(config, samples_ns=[ns, ns + 2, ns - 2])], defaults)


def test_batches_decisions_and_exports_round_trip(location):
    with TuningDatabase(location) as db:
        db.register(FP, "zoo:mlp@tiny")
        db.record_batch(FP, _batch(FAST, 150), with_default=True)
        db.record_batch(FP, _batch(FAST, 100), with_default=False)  # a second record is ignored
        db.decide(Decision(FP, FAST, FAST, 200.0, 150.0, 0.02, "random", "flags", 1.0))
    with TuningDatabase(location) as db:
        records = db.records(FP)
        assert [r.config for r in records] == [DEFAULT_CONFIG, FAST]
        assert db.lookup(FP, FAST.key).median_ns == 150 and db.lookup(FP, FAST.key).cost == pytest.approx(0.75)
        assert db.best(FP).chosen == FAST and db.best(FP).speedup == pytest.approx(200 / 150)
        assert [(e.name, e.records) for e in db.programs()] == [("zoo:mlp@tiny", 2)]
        assert db.resolve(FP[:8]) == FP
        assert "--xla_cpu_use_xnnpack=false" in db.export(FP, "xla_flags").text
        assert json.loads(db.export(FP, "json").text)["program"] == "zoo:mlp@tiny"


def test_rows_of_another_machine_or_compiler_stay_invisible(location):
    here = this_machine()
    elsewhere = Machine("Some Other CPU", here.cores, here.system, here.jax, here.jaxlib)
    with TuningDatabase(location, machine=elsewhere) as other:
        other.register(FP, "x")
        other.record_batch(FP, _batch(FAST, 150), with_default=True)
        other.record_program(FP, "m.f", "f32[8]", b"module")
        other.decide(Decision(FP, FAST, FAST, 200.0, 150.0, 0.02, "random", "flags", 1.0))
    with TuningDatabase(location) as db:
        assert db.records(FP) == [] and db.programs() == [] and db.recordings() == []
        assert db.best(FP) is None and db.winners("e" * 64) == []


def test_claims_keep_two_tuners_from_measuring_one_config(location):
    keys = [f"k{i}" for i in range(6)]
    with TuningDatabase(location) as first, TuningDatabase(location) as second:
        assert first.claim(FP, keys[:4]) == keys[:4]
        assert second.claim(FP, keys) == keys[4:]  # the others are held by a live tuner
        first.release(FP, keys[:2])
        assert second.claim(FP, keys[:2]) == keys[:2]


def test_recordings_sum_the_calls_of_every_process(location):
    with TuningDatabase(location) as one, TuningDatabase(location) as two:  # two owners
        one.record_program(FP, "model.step", "f32[8,8]", b"exported module")
        two.record_program(FP, "model.step", "f32[8,8]", b"a later export is not kept")
        one.record_program("e" * 64, "model.loss", "f32[8]", None, "host callbacks")
        one.record_calls(FP, CallCount(calls=10, sampled=2, sampled_s=0.02, since=0.0))
        one.record_calls(FP, CallCount(calls=100, sampled=4, sampled_s=0.04, since=0.0))  # replaces
        two.record_calls(FP, CallCount(calls=50, sampled=5, sampled_s=0.10, since=0.0))
        step, loss = one.recordings()
        assert (step.name, step.calls, step.tunable) == ("model.step", 150, True)
        assert step.seconds == pytest.approx(100 * 0.01 + 50 * 0.02)
        assert (loss.tunable, loss.reason, loss.calls, loss.seconds) == (False, "host callbacks", 0, 0.0)
        assert one.exported(FP) == b"exported module" and one.exported("e" * 64) is None
        assert one.recorded(FP) and two.recorded("e" * 64) and not one.recorded("d" * 64)


def test_a_bad_location_is_a_one_line_error(tmp_path):
    corrupt = tmp_path / "t.sqlite"
    corrupt.write_bytes(b"not a database at all" * 100)
    with pytest.raises(HlotuneError, match="not a tuning database"):
        TuningDatabase(corrupt)
    with pytest.raises(HlotuneError, match="unknown database URL scheme 'mysql'"):
        TuningDatabase("mysql://localhost/tuning")
    with pytest.raises(HlotuneError, match="cannot reach the tuning database") as error:
        TuningDatabase("postgresql://nobody:secret@127.0.0.1:1/tuning")
    assert "\n" not in str(error.value) and "secret" not in str(error.value)
