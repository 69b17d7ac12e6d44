"""The real compiler in the loop: flag and layout spaces, isolated measurement, collection."""

from __future__ import annotations

import json
import random
import re
import signal
import statistics
import subprocess
import sys
import time

import numpy as np
import pytest

from hlotune.collect.collector import CollectSettings, collect, draw_configs, stored_samples
from hlotune.compiler.configs.config import DEFAULT_CONFIG, CompileConfig
from hlotune.compiler.spaces.encode import ConfigEncoder
from hlotune.compiler.configs.flags import (
    FLAG_FEATURE_NAMES,
    FLAG_OPTIONS,
    FlagConfig,
)
from hlotune.compiler.configs.layouts import LayoutConfig, LayoutSpace
from hlotune.compiler.measurement.measure import FAILED, OK, MeasureSettings, Measurer, measure
from hlotune.compiler.measurement.output_check import check_outputs, rtol_for
from hlotune.compiler.spaces.space import SearchSpace
from hlotune.compiler.measurement.worker import HANG_ON
from hlotune.data.npz import read_sample
from hlotune.errors import HlotuneError
from hlotune.programs import load_program
from hlotune.programs.program import Program
from hlotune.tuning.strategies.exhaustive import Exhaustive

FAST = MeasureSettings(rounds=2, repeats=3, default_replicas=1)


@pytest.fixture(scope="module")
def mlp_space():
    return LayoutSpace(load_program("zoo:mlp@tiny"))


def test_every_curated_flag_value_compiles_with_the_installed_xla(mlp_space):
    lowered = mlp_space.build(LayoutConfig()).lower(*mlp_space.leaves)
    for option in FLAG_OPTIONS:
        for value in option.values[1:]:
            config = FlagConfig.from_dict(
                {option.name: value} | ({"xla_cpu_enable_fast_math": True} if "honor" in option.name else {})
            )
            lowered.compile(compiler_options=config.compiler_options())  # raises if XLA rejects it


@pytest.mark.parametrize(
    "values, message",
    [
        ({"xla_no_such_option": 1}, "unknown XLA option"),
        ({"xla_backend_optimization_level": 7}, "not one of"),
        ({"xla_cpu_use_xnnpack": 0}, "not one of"),
        ({"xla_disable_hlo_passes": "fusion,no-such-pass"}, "unknown HLO pass"),
        ({"xla_cpu_fast_math_honor_division": False}, "need xla_cpu_enable_fast_math=True"),
    ],
)
def test_bad_flag_configs_are_rejected_before_compiling(values, message):
    with pytest.raises(HlotuneError, match=message):
        FlagConfig.from_dict(values)


def test_flag_configs_are_values_with_named_features():
    config = FlagConfig.from_dict({"xla_disable_hlo_passes": "fusion,cse", "xla_cpu_max_isa": "AVX2"})
    assert config == FlagConfig.from_dict(json.loads(config.key))
    assert config.compiler_options()["xla_disable_hlo_passes"] == "cse,fusion"
    assert "--xla_cpu_max_isa=AVX2" in config.xla_flags()
    row = dict(zip(FLAG_FEATURE_NAMES, config.features()))
    assert row["xla_disable_hlo_passes=fusion"] == 1 and row["xla_cpu_max_isa=AVX2"] == 1
    assert row["xla_backend_optimization_level"] == 3 and row["xla_cpu_max_isa=AVX"] == 0
    assert FlagConfig.from_dict({"xla_backend_optimization_level": 3}).is_default


def test_requested_layouts_show_in_the_compiled_hlo(mlp_space):
    dot = next(site for site in mlp_space.sites if site.opcode == "dot")
    parameter = next(site for site in mlp_space.sites if site.opcode == "parameter")
    config = LayoutConfig.from_dict({dot.key: [0, 1], parameter.key: [0, 1]})
    compiled = mlp_space.build(config).lower(*mlp_space.placed_args(config)).compile().as_text()
    entry_layout = re.search(r"entry_computation_layout=\{\((.*?)\)->", compiled).group(1)
    shapes = re.findall(r"\w+\[[\d,]*\]\{[\d,]*\}", entry_layout)
    assert shapes[int(parameter.key[1:])].endswith("{0,1}")
    # The dot's result is materialised column-major (minor_to_major {0,1}) somewhere.
    dot_lines = [l for l in compiled.splitlines() if f"hlotune_site_{dot.key}/" in l]
    assert any("{0,1}" in l.split("=")[1].split("(")[0] for l in dot_lines)
    baseline = mlp_space.build(LayoutConfig()).lower(*mlp_space.leaves).compile().as_text()
    assert not any("{0,1}" in l.split("=")[1].split("(")[0]
                   for l in baseline.splitlines() if f"hlotune_site_{dot.key}/" in l and "=" in l)


def test_layout_space_matches_the_featurized_graph(mlp_space):
    graph = mlp_space.graph
    for site in mlp_space.sites:
        inst = graph.instructions[site.node]
        assert inst.opcode == site.opcode and len(inst.shape.dims) == site.rank
    assert list(mlp_space.node_config_ids) == sorted(mlp_space.node_config_ids)
    space, rng = SearchSpace("layout", mlp_space), random.Random(0)
    configs = [space.random_config(rng, 0.5).layout for _ in range(5)]
    configs += [space.near_default(rng).layout for _ in range(5)]
    feat = mlp_space.node_config_feat([LayoutConfig()] + configs)
    assert (feat[0] == -1).all() and (feat[1:, :, 6:] == -1).all()
    for config in configs:
        mlp_space.check(config)
    with pytest.raises(HlotuneError, match="not a permutation"):
        mlp_space.check(LayoutConfig.from_dict({mlp_space.sites[0].key: [0, 0]}))


def test_parameter_sites_are_the_arguments_they_name_when_one_is_unused():
    """jit drops unused arguments from the HLO, so parameter numbers skip them; a parameter
    site `p<i>` must still be argument i, or its layout lands on another argument (or fails)."""
    import jax.numpy as jnp

    program = Program("unused-argument", lambda a, unused, b: a @ b,
                      (jnp.ones((4, 8)), jnp.ones((3, 5, 7)), jnp.ones((8, 2))))
    space = LayoutSpace(program)
    parameters = {site.key: space.graph.instructions[site.node].shape.dims
                  for site in space.sites if site.opcode == "parameter"}
    assert parameters == {"p0": (4, 8), "p2": (8, 2)}  # the unused argument has no site
    config = LayoutConfig.from_dict({"p2": [0, 1], "p0": [0, 1]})
    executable = space.build(config).lower(*space.leaves).compile()
    (product,) = executable(*space.placed_args(config))  # the configured layouts are accepted
    np.testing.assert_array_equal(np.asarray(product), np.full((4, 2), 8.0))
    with pytest.raises(HlotuneError, match="no layout site 'p1'"):
        space.check(LayoutConfig.from_dict({"p1": [2, 0, 1]}))


def test_measurement_survives_a_config_that_crashes_xla():
    # Disabling gather_simplifier makes XLA:CPU abort (a failed CHECK) on a program with a
    # gather, such as the LSTM's embedding lookup: the worker dies, the batch goes on. (The
    # LSTM compiles in a fraction of the transformer's time.)
    crash = CompileConfig(FlagConfig.from_dict({"xla_disable_hlo_passes": ["gather_simplifier"]}))
    fine = CompileConfig(FlagConfig.from_dict({"xla_cpu_use_fusion_emitters": False}))
    result = measure("zoo:lstm@tiny", [crash, fine], FAST)
    crashed, measured = result.measurements
    assert crashed.status == FAILED and "SIGABRT" in crashed.reason
    assert measured.status == OK and len(measured.samples_ns) == FAST.rounds * FAST.repeats
    assert measured.max_rel_error < 1e-3
    assert all(len(d.samples_ns) == FAST.rounds * FAST.repeats for d in result.defaults)
    assert result.noise_floor >= 0 and result.default_ns > 0


def test_a_worker_runs_an_exported_program_that_calls_lapack(tmp_path):
    """A worker that never lowered a linalg op runs a loaded module's LAPACK calls (jax 0.8
    crashes on them unless the module's bytes, which name them, set LAPACK up); a module
    without such calls does not pay for scipy's LAPACK."""
    import jax.numpy as jnp

    from hlotune.programs.exported import _LAPACK_CALL, export_function

    def least_squares(a, b):
        return jnp.linalg.lstsq(a, b)[0]

    a, b = jnp.array([[2.0, 1.0], [1.0, 3.0], [1.0, 0.0]]), jnp.arange(3.0)
    exported = export_function(least_squares, (a, b))
    assert _LAPACK_CALL in exported.module
    assert _LAPACK_CALL not in export_function(lambda a, b: a.T @ b, (a, b)).module
    (measured,) = measure(exported.save(tmp_path), [DEFAULT_CONFIG], FAST).measurements
    assert measured.status == OK, measured.reason


def test_a_measurer_measures_batch_after_batch_in_one_worker():
    """A collection's or a tuning run's batches share the worker that loaded the program; a
    batch starts with nothing compiled, and a crash in one leaves the next whole."""
    crash = CompileConfig(FlagConfig.from_dict({"xla_disable_hlo_passes": ["gather_simplifier"]}))
    fine = CompileConfig(FlagConfig.from_dict({"xla_cpu_use_fusion_emitters": False}))
    with Measurer("zoo:lstm@tiny", FAST) as measurer:
        first = measurer.measure([fine])
        worker = measurer._session._process.pid
        second = measurer.measure([fine, DEFAULT_CONFIG])
        assert measurer._session._process.pid == worker
        crashed = measurer.measure([crash])
        third = measurer.measure([fine])
    assert measurer._session is None  # the worker is gone
    assert crashed.measurements[0].status == FAILED
    for batch, configs in ((first, 1), (second, 2), (third, 1)):
        assert len(batch.measurements) == configs and all(m.ok for m in batch.measurements)
        assert all(len(m.samples_ns) == FAST.rounds * FAST.repeats for m in batch.measurements + batch.defaults)


def test_a_config_that_hangs_is_recorded_as_failed_and_the_batch_goes_on(monkeypatch):
    hang = CompileConfig(FlagConfig.from_dict({"xla_cpu_prefer_vector_width": 512}))
    fine = CompileConfig(FlagConfig.from_dict({"xla_cpu_use_xnnpack": False}))
    monkeypatch.setenv(HANG_ON, '"xla_cpu_prefer_vector_width": 512')
    result = measure("zoo:mlp@tiny", [hang, fine], MeasureSettings(rounds=2, repeats=2, run_timeout_s=1))
    hung, measured = result.measurements
    assert hung.status == FAILED and "timed out after 1 s" in hung.reason
    assert measured.status == OK and len(measured.samples_ns) == 4  # the restarted worker ran it
    assert all(len(d.samples_ns) == 4 for d in result.defaults)


def test_collect_writes_valid_flag_and_layout_files(tmp_path):
    for space in ("flags", "layout"):
        settings = CollectSettings(space=space, configs=3, samples=6, batch=4)
        result = collect("zoo:cnn@tiny", settings, tmp_path / space, progress=False)
        sample = read_sample(result.path)
        summary = json.loads((tmp_path / space / "cnn@tiny.json").read_text())
        assert sample.collection == space and sample.num_configs == result.configs
        # the default, 3 drawn configs and a replacement for each that failed
        assert result.configs + result.failed == 4 + summary["replacements"]
        assert sample.configs.config_runtime_samples.shape == (result.configs, 6)
        assert (sample.configs.config_runtime > 0).all()
        assert summary["machine"]["jax"] == "0.10.2" and summary["batches"][0]["noise_floor"] >= 0
    layout = read_sample(tmp_path / "layout" / "cnn@tiny.npz").configs
    assert (layout.node_config_feat[0] == -1).all() and (layout.node_config_feat[1:] != -1).any()


def test_stored_samples_span_a_drifting_configs_rounds_not_its_first_ones():
    """A config sampled for 40 rounds whose machine ran 12.8 ms for 16 of them, then 7.8 ms
    (edition 2's vit@small), stored beside one of 10 rounds: its 10 stored samples keep its
    median, as its first 10 would not."""
    drifting = [12_800_000] * 16 + [7_800_000] * 24
    stored = stored_samples([drifting, list(range(10))])
    assert stored.shape == (2, 10) and stored.dtype == np.int64
    assert np.median(stored[0]) == np.median(drifting) == 7_800_000
    assert stored[0][0] == drifting[0] and stored[0][-1] == drifting[-1]
    assert stored[1].tolist() == list(range(10))


def test_collection_replaces_configs_that_fail_by_further_draws(tmp_path, monkeypatch):
    """A config that crashes XLA stays recorded as failed, and the next config of the stream
    is measured in its place, so the file holds as many healthy configs as asked for."""
    from hlotune.collect import collector

    crash = CompileConfig(FlagConfig.from_dict({"xla_disable_hlo_passes": ["gather_simplifier"]}))
    stream = [crash] + [CompileConfig(FlagConfig.from_dict({"xla_cpu_use_xnnpack": False})),
                        CompileConfig(FlagConfig.from_dict({"xla_cpu_use_fusion_emitters": False}))]
    monkeypatch.setattr(collector, "draw_configs", lambda encoder, settings, count=None:
                        stream[: settings.configs if count is None else count])
    settings = CollectSettings(space="flags", configs=2, samples=2, batch=2, repeats=1)
    result = collect("zoo:lstm@tiny", settings, tmp_path, progress=False)
    summary = json.loads((tmp_path / "lstm@tiny.json").read_text())
    assert (result.configs, result.failed, summary["replacements"]) == (3, 1, 1)
    assert [r["status"] for r in summary["configs"]] == [FAILED, OK, OK]
    assert [r["batch"] for r in summary["configs"]] == [0, 0, 1]  # the replacement: its own batch
    monkeypatch.setattr(collector, "load_program", lambda spec: pytest.fail(f"{spec} was built again"))
    assert collect("zoo:lstm@tiny", settings, tmp_path, progress=False).resumed  # read off its summary


def test_a_short_collection_is_topped_up_until_the_replacement_cap():
    from hlotune.collect.collector import REPLACEMENTS, _complete

    settings = CollectSettings(space="flags", configs=48)

    def summary(healthy, replacements=None):
        return {"result": {"configs": healthy + 1}} | ({} if replacements is None else {"replacements": replacements})

    assert _complete(summary(48), settings) and _complete(summary(50, 3), settings)
    assert not _complete(summary(46), settings)  # written before failures were replaced
    assert not _complete(summary(46, 48), settings)  # under a lower cap
    assert _complete(summary(46, REPLACEMENTS * 48), settings)


def test_interrupted_collection_resumes_without_repeating_work(tmp_path):
    journal = tmp_path / ".journal" / "mlp@tiny.jsonl"
    command = [sys.executable, "-m", "hlotune.cli", "collect", "--space", "flags", "--program",
               "zoo:mlp@tiny", "--configs", "4", "--batch", "2", "--samples", "6", "--out", str(tmp_path)]
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and '"done"' not in (journal.read_text() if journal.exists() else ""):
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait()
    before = [json.loads(l) for l in journal.read_text().splitlines()]
    assert any("done" in r for r in before), "the first batch never finished"
    result = collect("zoo:mlp@tiny", CollectSettings(space="flags", configs=4, batch=2, samples=6),
                     tmp_path, progress=False)
    assert result.resumed
    after = [json.loads(l) for l in journal.read_text().splitlines()]
    rounds = [(r["batch"], r["round"]) for r in after if "round" in r]
    assert len(rounds) == len(set(rounds)) == 2 * 2  # 2 batches x 2 rounds, none measured twice
    assert after[: len(before)] == before
    assert read_sample(result.path).num_configs == result.configs


def test_output_check_catches_a_real_miscompilation():
    # On jax/jaxlib 0.10.2, XLA:CPU's legacy emitters without the fusion pass compute the
    # transformer wrongly (relative error ~1.2); each option alone is fine.
    both = FlagConfig.from_dict({"xla_cpu_use_fusion_emitters": False, "xla_disable_hlo_passes": "fusion"})
    alone = FlagConfig.from_dict({"xla_cpu_use_fusion_emitters": False})
    result = measure("zoo:transformer@tiny", [CompileConfig(both), CompileConfig(alone)],
                     MeasureSettings(rounds=1, repeats=1, default_replicas=1))
    wrong, fine = result.measurements
    assert wrong.status == "wrong_output" and wrong.max_rel_error > 0.5 and not wrong.samples_ns
    assert fine.status == OK and fine.max_rel_error < 1e-5


def test_output_check_scales_tiny_leaves_by_the_whole_output():
    f32 = np.float32
    reference = [np.array([1.0, -2.0], f32), np.array([1e-9, -2e-9], f32)]  # a gradient, 0 in theory
    noise = [np.array([1.0, -2.0], f32), np.array([-1e-9, 3e-9], f32)]
    assert check_outputs(noise, reference).ok and check_outputs(noise, reference).max_rel_error < 1e-5
    wrong = check_outputs([np.array([1.0, -2.5], f32), np.array([1e-9, -2e-9], f32)], reference)
    assert not wrong.ok and wrong.max_rel_error == pytest.approx(0.25) and "allowed" in wrong.reason


def test_output_check_keeps_nan_and_inf_where_the_default_has_them():
    reference = [np.array([np.nan, 1.0, np.inf], np.float32)]
    assert check_outputs([reference[0].copy()], reference).ok
    for changed in ([0.0, 1.0, np.inf], [np.nan, np.nan, np.inf], [np.nan, 1.0, -np.inf]):
        check = check_outputs([np.array(changed, np.float32)], reference)
        assert not check.ok and "NaN or Inf" in check.reason


def test_output_check_tolerances_suit_each_dtype():
    import ml_dtypes

    assert rtol_for(np.dtype(np.float64)) < rtol_for(np.dtype(np.float32)) < rtol_for(np.dtype(ml_dtypes.bfloat16))
    reference = np.array([1.0, 2.0, 4.0])
    off = reference * (1 + 2e-3)  # 0.2 %: rounding in bfloat16, a real change in float32
    for dtype, passes in ((np.float32, False), (ml_dtypes.bfloat16, True), (np.float16, True)):
        check = check_outputs([off.astype(dtype)], [reference.astype(dtype)])
        assert check.ok is passes, dtype
    assert check_outputs([off.astype(np.float32)], [reference.astype(np.float32)], rtol=1e-2).ok
    assert not check_outputs([np.array([1, 2, 4])], [np.array([1, 2, 3])]).ok  # integers: exact
    assert not check_outputs([np.array([True, False])], [np.array([True, True])]).ok


def test_collection_draws_its_configs_through_the_tuning_space(mlp_space):
    settings, encoder = CollectSettings(space="flags", configs=40, seed=1), ConfigEncoder(mlp_space)
    drawn = draw_configs(encoder, settings)
    assert drawn == draw_configs(encoder, settings)
    assert draw_configs(encoder, settings, 50)[:40] == drawn  # failures' replacements come next
    assert drawn != draw_configs(encoder, CollectSettings(space="flags", configs=40, seed=2))
    assert len(set(drawn)) == 40 and not any(config.is_default for config in drawn)
    singles = Exhaustive.around_default(SearchSpace("flags", allow_numerics_change=True)).ask(1000)
    assert set(drawn[: len(singles)]) == set(singles)  # every single change first, all options
    assert any(config.numerics == "changing" for config in drawn)
    for search in ("random", "default"):
        layouts = draw_configs(encoder, CollectSettings(space="layout", configs=6, search=search))
        assert len(set(layouts)) == 6 and all(config.flags.is_default for config in layouts)
    with pytest.raises(HlotuneError, match="layout search"):
        CollectSettings(space="layout", search="sideways")


def test_long_runs_take_fewer_rounds_down_to_the_minimum_and_short_ones_every_round():
    from hlotune.compiler.measurement.measure import MIN_ROUNDS, _rounds

    settings = MeasureSettings()  # 10 rounds of 3 repeats, 2 s of timed runs an executable
    assert _rounds(settings, 5e6) == _rounds(settings, 66e6) == 10  # 30 samples of 66 ms: 2 s
    assert _rounds(settings, 100e6) == 7 and _rounds(settings, 200e6) == 4  # 2.1 s and 2.4 s
    assert _rounds(settings, 10e9) == MIN_ROUNDS == 3
    assert _rounds(MeasureSettings(rounds=2), 10e9) == 2  # never more rounds than asked
    assert _rounds(MeasureSettings(timed_s=None), 10e9) == 10
    with pytest.raises(HlotuneError, match="timed_s must be positive"):
        MeasureSettings(timed_s=0)
    # in a batch: the default's warm-up call sizes it, for every executable alike
    batch = measure("zoo:mlp@tiny", [DEFAULT_CONFIG], MeasureSettings(repeats=2, timed_s=1e-9))
    assert {len(m.samples_ns) for m in batch.measurements + batch.defaults} == {2 * MIN_ROUNDS}


def test_a_noise_target_takes_rounds_until_medians_are_certain_and_short_runs_loop():
    fine = CompileConfig(FlagConfig.from_dict({"xla_cpu_use_xnnpack": False}))
    loose = measure("zoo:mlp@tiny", [fine], MeasureSettings(rounds=2, repeats=3, noise_target=0.5))
    assert len(loose.measurements[0].samples_ns) >= 6 and loose.measurements[0].converged
    tight = MeasureSettings(rounds=2, repeats=3, noise_target=1e-9, max_rounds=4)
    batch = measure("zoo:mlp@tiny", [fine], tight)
    capped = batch.measurements[0]
    assert len(capped.samples_ns) == 12 and capped.converged is False  # stopped at the cap
    assert 0 < capped.median_halfwidth < float("inf")
    # mlp@tiny runs in microseconds, far below min_sample_s: a sample times a loop of calls,
    # sized on the fastest of the default's warm-up calls (2 ms of them), so a timed sample
    # lasts about min_sample_s; the other pytest worker's load may stretch a sample, never
    # shorten it below a fifth. One call alone would be a twentieth.
    assert batch.loop > 1 and batch.loop * batch.defaults[0].call_ns >= tight.min_sample_s * 1e9
    assert batch.loop * statistics.median(capped.samples_ns) >= 0.2 * tight.min_sample_s * 1e9
