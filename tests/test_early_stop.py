"""Early stopping in measurement (compiler/measurement/measure.py): a config slower than the default beyond
doubt is timed no more, keeps its median as its cost, and the database says it was cut short."""

from __future__ import annotations

import sqlite3

from hlotune.collect.collector import CollectSettings
from hlotune.compiler.configs.config import DEFAULT_CONFIG, CompileConfig
from hlotune.compiler.configs.flags import FlagConfig
from hlotune.compiler.measurement.machine import this_machine
from hlotune.compiler.measurement.measure import (
    EARLY_STOP_RATIO,
    EARLY_STOP_ROUNDS,
    BatchResult,
    Measurement,
    MeasureSettings,
    _stop_slow,
    measure,
    median_interval,
)
from hlotune.tuning.storage import TuningDatabase

RESNET = "zoo:resnet@tiny"
# Its convolutions left to XLA's own loops (no library rewrite), compiled by LLVM at -O0: 2.5-3x
# the default's time on this 2-core machine, past its noise (the default's samples spread 0.84-1.29).
SLOW = CompileConfig(FlagConfig.from_dict({"xla_disable_hlo_passes": ["dot-library-rewriter"],
                                           "xla_backend_optimization_level": 0}))
O1 = CompileConfig(FlagConfig.from_dict({"xla_backend_optimization_level": 1}))
ROUNDS = 8


def _batch(early_stop: bool) -> BatchResult:
    settings = MeasureSettings(rounds=ROUNDS, repeats=3, default_replicas=2, early_stop=early_stop)
    return measure(RESNET, [SLOW, DEFAULT_CONFIG], settings)


def test_a_much_slower_config_stops_early_and_keeps_its_median():
    """The slow config stops after 3 rounds of 3 samples (or a few more, should the machine
    be busy then), the default's copy among the candidates is timed in full, and the stop met
    the rule on the samples seen then: every config runs every round until it stops, so the
    defaults' first samples, as many as the stopped config has, are what the rule compared.
    (Not a fixed ratio: under the suite's other worker, SLOW measured 1.5x the default, not 2.5x.)"""
    batch = _batch(early_stop=True)
    slow, same = batch.measurements
    assert slow.ok and slow.stopped and EARLY_STOP_ROUNDS * 3 <= len(slow.samples_ns) < ROUNDS * 3
    assert not same.stopped and len(same.samples_ns) == ROUNDS * 3
    assert all(len(d.samples_ns) == ROUNDS * 3 for d in batch.defaults)
    seen = [s for d in batch.defaults for s in d.samples_ns[: len(slow.samples_ns)]]
    assert slow.median_interval[0] > EARLY_STOP_RATIO * median_interval(seen)[1]
    assert slow.median_ns > batch.default_ns


def test_without_early_stop_every_config_gets_every_sample():
    batch = _batch(early_stop=False)
    assert [len(m.samples_ns) for m in batch.measurements] == [ROUNDS * 3] * 2
    assert not any(m.stopped for m in batch.measurements)


def test_collections_time_every_config_in_full():
    assert MeasureSettings().early_stop
    assert not CollectSettings("flags").measure_settings().early_stop


def _given(ns: list[int]) -> Measurement:
    return Measurement(DEFAULT_CONFIG, samples_ns=ns)


def test_the_rule_needs_the_config_beyond_1_1_times_the_high_end_of_the_defaults_interval():
    """The default's three executables give 27 samples, a spike in each: the high end of their
    median's interval is the 20th smallest, 1000. A config of 9 samples (its interval from the
    2nd smallest) stops only when that sample exceeds 1100."""
    results = {f"d{i}": _given([1000] * 8 + [2000]) for i in range(3)} | {
        "c0": _given([900, 1101, 1150, 1150, 1150, 1150, 1150, 1150, 1150]),  # stops
        "c1": _given([900, 1099, 1150, 1150, 1150, 1150, 1150, 1150, 1150]),  # just inside
        "c2": _given([2000] * 5),  # 5 samples: too few to bound its median
    }
    _stop_slow(results)
    assert [results[id].stopped for id in ("c0", "c1", "c2")] == [True, False, False]


def test_the_database_stores_a_stopped_config_and_reads_older_files(tmp_path):
    stopped = Measurement(SLOW, samples_ns=[5000] * 9, stopped=True)
    batch = BatchResult([stopped], [_given([1000] * 18), _given([1000] * 18), _given([1010] * 18)])
    with TuningDatabase(tmp_path / "new.sqlite") as db:
        db.record_batch("f" * 16, batch, with_default=True)
        assert db.lookup("f" * 16, SLOW.key).stopped
        assert not db.lookup("f" * 16, DEFAULT_CONFIG.key).stopped

    path = tmp_path / "v5.sqlite"  # measurements as version 5 stored them, without `stopped`
    old = sqlite3.connect(path)
    old.execute("CREATE TABLE measurements (program TEXT NOT NULL, config TEXT NOT NULL, machine TEXT "
                "NOT NULL, jax TEXT NOT NULL, jaxlib TEXT NOT NULL, status TEXT NOT NULL, reason TEXT NOT "
                "NULL, median_ns REAL, default_ns REAL NOT NULL, noise_floor REAL, samples TEXT NOT NULL, "
                "compile_s REAL NOT NULL, timestamp REAL NOT NULL, max_rel_error REAL, kernel_costs TEXT, "
                "UNIQUE (program, config, machine, jax, jaxlib))")
    here = this_machine()
    old.execute("INSERT INTO measurements VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                ("f" * 16, SLOW.key, here.fingerprint, here.jax, here.jaxlib, "ok", "", 5000.0, 1000.0,
                 0.01, "[5000, 5000]", 0.1, 0.0, 0.0, None))
    old.execute("PRAGMA user_version = 5")
    old.commit()
    old.close()
    with TuningDatabase(path) as db:
        record = db.lookup("f" * 16, SLOW.key)
        assert record.median_ns == 5000.0 and not record.stopped
        later = Measurement(O1, samples_ns=[4000] * 9, stopped=True)
        db.record_batch("f" * 16, BatchResult([later], batch.defaults), with_default=False)
        assert db.lookup("f" * 16, O1.key).stopped
