"""Fusion decisions on XLA:CPU's own modules: split and merge rewrites, the fusion space."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.xla.fusion_rewrite import Module, split_points
from hlotune.compiler.spaces.fusion_space import fusion_choices
from hlotune.compiler.xla.hook import compile_config, compile_with_pass
from hlotune.compiler.configs.kernel_config import KernelConfig
from hlotune.compiler.xla.kernels import kernels_of
from hlotune.compiler.measurement.measure import MeasureSettings
from hlotune.compiler.spaces.space import SearchSpace
from hlotune.errors import HlotuneError
from hlotune.hlo.costs import module_seconds


def _probe(x):  # the probe: one loop fusion
    return jnp.exp(jnp.sin(x) * 2 + 1) / (1 + jnp.abs(jnp.cos(x)))


def _two_users(x, w):  # XLA keeps the tanh/sin producer apart from the softmax's kernels
    y = jnp.tanh(x @ w) * 2 + jnp.sin(x @ w)
    return jax.nn.softmax(y, axis=-1)


def _scatter(x, i):  # an in-place kernel: never split or merged
    return jnp.zeros(64).at[i].add(jnp.exp(x))


@pytest.fixture(scope="module")
def probe():
    x = jnp.linspace(0.0, 1.0, 256 * 256, dtype=jnp.float32).reshape(256, 256)
    lowered = jax.jit(_probe).lower(x)
    _, record = compile_with_pass(lowered)
    return lowered, record.texts[-1], (x,)


@pytest.fixture(scope="module")
def two_users():
    x = jnp.linspace(0.0, 1.0, 64 * 128, dtype=jnp.float32).reshape(64, 128)
    w = jnp.linspace(-1.0, 1.0, 128 * 128, dtype=jnp.float32).reshape(128, 128)
    lowered = jax.jit(_two_users).lower(x, w)
    _, record = compile_with_pass(lowered)
    return lowered, record.texts[-1], (x, w)


def _run(lowered, config: CompileConfig, args) -> np.ndarray:
    return np.asarray(compile_config(lowered, config)(*args))


def test_split_makes_two_kernels_with_the_same_outputs(probe):
    lowered, text, args = probe
    [kernel] = kernels_of(text)
    points = split_points(Module(text), kernel.name)
    assert points and "exp.0" in points  # the heaviest instruction below the root
    config = CompileConfig(kernels=KernelConfig(fusion=((kernel.key, "split:exp.0"),)))
    rewritten = config.kernels.apply(text)
    assert len(kernels_of(rewritten)) == 2
    assert module_seconds(rewritten) > module_seconds(text)  # the intermediate goes to memory
    np.testing.assert_array_equal(_run(lowered, config, args), _run(lowered, CompileConfig(), args))


def test_merge_inlines_a_producer_and_keeps_outputs(two_users):
    lowered, text, args = two_users
    choices = fusion_choices(text)
    merges = [key for key, values in choices.items() if "merge" in values]
    assert merges, f"no mergeable kernel among {list(choices)}"
    config = CompileConfig(kernels=KernelConfig(fusion=((merges[0], "merge"),)))
    rewritten = config.kernels.apply(text)
    assert len(kernels_of(rewritten)) == len(kernels_of(text)) - 1
    assert merges[0].split("#")[0] not in {k.name for k in kernels_of(rewritten)}
    np.testing.assert_allclose(_run(lowered, config, args), _run(lowered, CompileConfig(), args),
                               rtol=1e-6)


def test_in_place_kernels_are_never_rewritten():
    x = jnp.linspace(0.0, 1.0, 256, dtype=jnp.float32)
    i = jnp.arange(256, dtype=jnp.int32) % 64
    _, record = compile_with_pass(jax.jit(_scatter).lower(x, i))
    text = record.texts[-1]
    scatters = [k for k in kernels_of(text) if "scatter" in k.name]
    assert scatters
    assert not set(k.key for k in scatters) & set(fusion_choices(text))
    with pytest.raises(HlotuneError, match="cannot merge"):
        Module(text).merge(scatters[0].name)


def test_bad_decisions_are_named(probe):
    _, text, _ = probe
    [kernel] = kernels_of(text)
    with pytest.raises(HlotuneError, match="not an instruction to split at"):
        KernelConfig(fusion=((kernel.key, "split:nothing"),)).apply(text)
    with pytest.raises(HlotuneError, match="matches no kernel"):
        KernelConfig(fusion=(("gone#000000000000", "merge"),)).apply(text)
    with pytest.raises(HlotuneError, match="fusion is 'merge' or 'split:INSTRUCTION'"):
        KernelConfig.from_dict({kernel.key: {"fusion": "fuse"}})


def test_fusion_configs_round_trip_through_dicts_and_genomes(two_users):
    _, text, _ = two_users
    choices = fusion_choices(text)
    space = SearchSpace("fusion", fusion=choices)
    assert {gene.name.removeprefix("fusion:") for gene in space.genes} == set(choices)
    key, values = next(iter(choices.items()))
    config = space.config({f"fusion:{key}": values[-1]})
    assert config.kernels.fusion == ((key, values[-1]),)
    assert CompileConfig.from_dict(config.to_dict()) == config
    assert space.genome(config) == {f"fusion:{key}": values[-1]}
    with pytest.raises(HlotuneError, match="no loop or input fusion"):
        SearchSpace("fusion", fusion={})


@pytest.fixture(scope="module")
def problem():
    """The fusion problem of zoo:gnn@tiny, the measured tests' program: 9 fusions to split or
    merge, compiled in 0.4 s (transformer@tiny: 16, in 0.85 s; mlp@tiny: 2)."""
    from hlotune.opt.measured_fusion import FusionProblem

    return FusionProblem.load("zoo:gnn@tiny")


def test_fuse_bits_map_to_merges_and_splits(problem):
    ops = problem.graph.num_ops
    assert problem.kernel_of_op and set(problem.kernel_of_op.values()) <= set(problem.choices)
    merged = dict(problem.decisions(np.ones(ops, dtype=bool)).kernels.fusion)
    split = dict(problem.decisions(np.zeros(ops, dtype=bool)).kernels.fusion)
    mergeable = {k for k in problem.kernel_of_op.values() if "merge" in problem.choices[k]}
    assert mergeable and set(merged) == mergeable and set(merged.values()) == {"merge"}
    first_split = {k: next(v for v in values if v.startswith("split:"))
                   for k, values in problem.choices.items() if len(values) > ("merge" in values)}
    assert split and split == {k: v for k, v in first_split.items() if k in problem.kernel_of_op.values()}
    assert dict(problem.greedy().kernels.fusion) == {k: "merge" for k, v in problem.choices.items()
                                                     if "merge" in v}


def test_policy_proposals_are_ranked_by_the_module_roofline(problem):
    from hlotune.opt.commands import PRETRAINED_DIR
    from hlotune.opt.measured_fusion import policy_proposals, ranked
    from hlotune.opt.policy import GOPolicy

    policy, _ = GOPolicy.load(PRETRAINED_DIR)
    proposals = policy_proposals(problem, policy, samples=8, seed=0)
    assert proposals and len(set(proposals)) == len(proposals) and not any(c.is_default for c in proposals)
    order = [module_seconds(c.kernels.apply(problem.module)) for c in ranked(problem, proposals)]
    assert order == sorted(order)


def test_opt_fuse_measure_json(capsys):
    from hlotune.cli import main

    argv = ["opt", "fuse", "zoo:gnn@tiny", "--measure", "--per-method", "1", "--samples", "4",
            "--json", "--quiet"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["simulated"] is False and report["program"] == "zoo:gnn@tiny"
    assert set(report["results"]) == {"xla", "policy", "greedy", "random"}
    assert report["results"]["xla"]["ms"] > 0 and report["noise"] >= 0
    for method in ("policy", "greedy", "random"):
        result = report["results"][method]
        assert result["measured"] == 1 and result["failed"] + (result["ms"] is not None) == 1
        if result["ms"] is not None:
            assert result["speedup"] == pytest.approx(report["results"]["xla"]["ms"] / result["ms"])
            assert CompileConfig.from_dict(result["config"]).kernels.fusion
    assert main(["opt", "fuse", "zoo:gnn@tiny", "--measure", "--per-method", "0"]) == 1
    assert "--per-method must be at least 1" in capsys.readouterr().err


def test_tune_searches_the_fusion_space(tmp_path):
    import hlotune
    from hlotune.tuning.storage import TuningDatabase

    result = hlotune.tune("zoo:gnn@tiny", space="fusion", budget=4, db=tmp_path / "db.sqlite",
                          settings=MeasureSettings(rounds=2, repeats=2, default_replicas=1))
    assert result.space == "fusion" and result.measurements >= 4
    with TuningDatabase(tmp_path / "db.sqlite") as db:
        configs = [record.config for record in db.records(result.fingerprint)]
    tried = [c for c in configs if not c.is_default]
    assert tried and all(c.kernels.fusion and not c.kernels.partitions and c.flags.is_default for c in tried)
