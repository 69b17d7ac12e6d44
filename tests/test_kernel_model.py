"""Cost model v3 on XLA:CPU: every profiled thunk as a module of its own, kernel labels of a
collected program, the kernel program model built on them, and the compile-and-predict screen."""

from __future__ import annotations

import json
import sqlite3

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hlotune.collect.collector import CollectSettings, collect
from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.configs.flags import FlagConfig
from hlotune.compiler.xla.thunks import thunks_of
from hlotune.data.npz import read_sample, write_sample
from hlotune.errors import HlotuneError
from hlotune.hlo.text_parser import texts_to_protos
from hlotune.kernels.label_collection import LabelSettings, label_program
from hlotune.kernels.labels import KernelGraphs, ProgramKernels, collected_configs, kernel_samples, labels_of
from hlotune.kernels.program_model import KernelProgramModel, KernelScorer, Overhead, fit_overhead
from hlotune.kernels.sample import CODEGEN_COLUMNS, OPTIONS_AT, codegen_options
from hlotune.models.settings import ModelSettings


def _compiled_text(fn, *args, options=None) -> str:
    return jax.jit(fn).lower(*args).compile(compiler_options=options or {}).as_text()


def test_unfused_instructions_and_loop_bodies_are_thunks_with_their_trip_counts():
    def step(i, x):
        return jnp.tanh(x @ x) + i

    def program(x):
        y = jax.lax.fori_loop(0, 5, step, x)
        return jax.lax.reduce_window(y, 0.0, jax.lax.add, (1, 4), (1, 4))

    legacy = {"xla_cpu_use_fusion_emitters": False}  # leaves the reduce-window unfused
    thunks = thunks_of(_compiled_text(program, jnp.ones((8, 8)), options=legacy))
    assert {t.opcode for t in thunks.values()} >= {"reduce-window", "fusion"}
    assert "while" not in {t.opcode for t in thunks.values()}  # bookkeeping, not a kernel
    assert {t.calls for t in thunks.values() if t.kind == "kCustom"} == {5}  # the dot, in the loop
    assert {t.calls for t in thunks.values() if t.opcode == "reduce-window"} == {1}
    protos = texts_to_protos([t.module for t in thunks.values()] + ["HloModule broken\nENTRY %x {"])
    assert all(isinstance(p, bytes) for p in protos[:-1]) and isinstance(protos[-1], HlotuneError)
    again = thunks_of(_compiled_text(program, jnp.ones((8, 8)), options=legacy))
    assert {t.fingerprint for t in again.values()} == {t.fingerprint for t in thunks.values()}


def test_codegen_options_are_zero_at_xla_defaults_and_fill_their_columns():
    assert not codegen_options(FlagConfig()).any()
    options = codegen_options(FlagConfig.from_dict({"xla_cpu_prefer_vector_width": 128}))
    assert options.tolist().count(0) == len(CODEGEN_COLUMNS) - 1 and -128 in options
    assert OPTIONS_AT + len(CODEGEN_COLUMNS) <= 24  # inside the TpuGraphs tile config width


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """zoo:mlp@tiny collected in the flags space (3 configs), then its kernel labels, laid out
    as the built-in dataset is: ROOT/flags/test and ROOT/kernels/flags/test."""
    root = tmp_path_factory.mktemp("builtin")
    collect("zoo:mlp@tiny", CollectSettings(space="flags", configs=3, samples=2, batch=4, repeats=1),
            root / "flags" / "test", progress=False)
    summary = root / "flags" / "test" / "mlp@tiny.json"
    result = label_program(summary, root / "kernels" / "flags" / "test", LabelSettings(profile_runs=2, profile_rounds=1))
    return root, summary, result


def test_every_collected_config_gets_its_thunks_timed_and_a_rerun_is_skipped(labelled):
    root, summary, result = labelled
    assert result.configs == 4 and result.failed == 0  # the default and 3 configs
    labels = ProgramKernels.load(labels_of(root / "flags" / "test" / "mlp@tiny.npz"))
    assert labels.rows.tolist() == [0, 1, 2, 3]
    present = labels.calls > 0
    assert present.any(axis=1).all() and np.isfinite(labels.ns[present]).all() and (labels.ns[present] > 0).all()
    assert np.isnan(labels.ns[~present]).all()
    assert (labels.static_calls == labels.calls).all()  # no loops: each thunk once
    assert all((labels.modules / f"{f}.hlo").exists() for f in labels.fingerprints)
    assert label_program(summary, root / "kernels" / "flags" / "test") is None


def test_kernel_samples_are_valid_tile_files_with_absolute_runtimes(labelled, tmp_path):
    root, summary, _ = labelled
    labels = ProgramKernels.load(labels_of(root / "flags" / "test" / "mlp@tiny.npz"))
    samples = kernel_samples([(labels, collected_configs(summary))], KernelGraphs())
    assert {s.name for s in samples} == set(labels.fingerprints.tolist())
    for sample in samples:
        write_sample(tmp_path / f"{sample.name}.npz", sample)  # validated as it is written
        assert (sample.configs.config_runtime_normalizers == 1).all() and (sample.configs.config_runtime > 0).all()
        assert read_sample(tmp_path / f"{sample.name}.npz").configs.config_feat.shape[1] == 24


def test_the_program_model_scores_collected_configs_from_their_compiled_kernels(labelled, tmp_path):
    from hlotune.models.gnn import GraphCostModel

    root, summary, _ = labelled
    config = ModelSettings(collection="tile", node_feat_dim=140, config_dim=24, hidden_dim=8, opcode_dim=4, num_layers=1)
    model = KernelProgramModel(GraphCostModel(config), Overhead(per_call_ns=100.0))
    model.save(tmp_path / "model")
    scorer = KernelScorer(KernelProgramModel.load(tmp_path / "model"))
    sample = read_sample(root / "flags" / "test" / "mlp@tiny.npz")
    scores = scorer(sample)
    assert scores.shape == (sample.num_configs,) and np.isfinite(scores).all()
    labels = ProgramKernels.load(labels_of(root / "flags" / "test" / "mlp@tiny.npz"))
    compiled = model.from_labels(labels, collected_configs(summary))
    calls = np.array([sum(t.calls for t in c.thunks) for c in compiled])
    assert np.allclose(model.program_ns(compiled) - model.kernels_ns(compiled), 100.0 * calls)
    elsewhere = tmp_path / "other" / "flags" / "test"
    elsewhere.mkdir(parents=True)
    write_sample(elsewhere / "mlp@tiny.npz", sample)
    with pytest.raises(HlotuneError, match="rebuild kernel-labels"):
        scorer(read_sample(elsewhere / "mlp@tiny.npz"))  # no labels kept for it


def test_overhead_is_the_least_squares_ns_per_call_and_never_negative():
    calls = [np.array([10.0, 20.0, 30.0])]
    measured = [np.array([1000.0, 1500.0, 2000.0])]  # 50 ns per call beyond the kernels
    assert fit_overhead([np.array([500.0, 500.0, 500.0])], calls, measured).per_call_ns == pytest.approx(50.0)
    assert fit_overhead([np.array([1000.0, 2000.0, 3000.0])], calls, measured).per_call_ns == 0.0


def test_the_screen_compiles_each_config_once_across_tunes(tmp_path):
    from hlotune.models.gnn import GraphCostModel
    from hlotune.tuning.models.kernel_screen import KernelScreen

    config = ModelSettings(collection="tile", node_feat_dim=140, config_dim=24, hidden_dim=8, opcode_dim=4, num_layers=1)
    configs = [CompileConfig(), CompileConfig(FlagConfig.from_dict({"xla_cpu_use_fusion_emitters": False})),
               CompileConfig(FlagConfig.from_dict({"xla_disable_hlo_passes": ["gather_simplifier"]}))]
    db = tmp_path / "tune.sqlite"
    first = KernelScreen("zoo:mlp@tiny", KernelProgramModel(GraphCostModel(config)), db, "mlp")
    try:
        scores = first.predict(configs)
    finally:
        first.close()
    assert first.compiled == 3 and np.isfinite(scores[:2]).all()
    assert first.statistics() == {"screened": 3, "screen_s": first.compile_s} and first.compile_s > 0
    # the same weights, but no thunk graphs known: they come from the database too
    second = KernelScreen("zoo:mlp@tiny", KernelProgramModel(first.model.kernel_model), db, "mlp")
    try:
        again = second.predict(configs)
    finally:
        second.close()
    assert second.compiled == 0 and np.allclose(again[np.isfinite(again)], scores[np.isfinite(scores)])
    assert np.isinf(again).tolist() == np.isinf(scores).tolist()
    stored = sqlite3.connect(db).execute("SELECT thunks FROM compiles").fetchall()
    assert len(stored) == 3 and all(row[0] is None or json.loads(row[0]) for row in stored)
