"""Per-kernel control and timing on the real XLA:CPU: kernel identities, per-kernel options
applied by hlotune's pass inside XLA, and each kernel's time from a profile."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.xla.hook import compile_config, compile_with_pass
from hlotune.compiler.configs.kernel_config import KernelConfig
from hlotune.compiler.profiles.kernel_profile import _Event, exclusive, profile_kernels, run_spans, summarize
from hlotune.compiler.xla.kernels import kernels_of
from hlotune.compiler.measurement.measure import MeasureSettings, measure
from hlotune.errors import HlotuneError


def _looped(a, w):
    """A loop of 3 iterations (its body's kernels repeat) and two identical loop kernels."""
    y = jax.lax.fori_loop(0, 3, lambda i, c: jnp.tanh(c @ w) + jnp.sin(c), a)
    return jnp.exp(jnp.sin(y) * 2 + 1) / (1 + jnp.abs(jnp.cos(a))), jnp.maximum(a, 0) + 1, jnp.maximum(w, 0) + 1


ARGS = (jnp.linspace(0, 1, 256 * 256).reshape(256, 256), jnp.full((256, 256), 0.01))


def _lowered():
    return jax.jit(_looped).lower(*ARGS)


def _loop_kernels(text):
    return [k for k in kernels_of(text) if k.kind == "kLoop"]


def test_kernel_keys_are_stable_and_identical_kernels_share_a_fingerprint():
    first = compile_config(_lowered(), CompileConfig()).as_text()
    again = compile_config(_lowered(), CompileConfig()).as_text()
    kernels = kernels_of(first)
    assert {k.key for k in kernels} == {k.key for k in kernels_of(again)}
    assert len({k.key for k in kernels}) == len(kernels)  # a key names one kernel
    assert any(k.kind == "kCustom" for k in kernels)  # the dot went to a library fusion
    fingerprints = [k.fingerprint for k in _loop_kernels(first)]
    assert len(fingerprints) > len(set(fingerprints))  # maximum(a) + 1 and maximum(w) + 1


def test_partitions_are_applied_inside_xla_and_keep_outputs():
    # jax's persistent cache is on (conftest) and keys on the module before the pass: after the
    # plain compile it holds an executable that a hooked compile must not be handed
    assert jax.config.jax_compilation_cache_dir
    plain = jax.jit(_looped).lower(*ARGS).compile()
    reference = [np.asarray(x) for x in plain(*ARGS)]
    keys = [k.key for k in _loop_kernels(plain.as_text())]
    for parts in (1, 4):
        config = CompileConfig(kernels=KernelConfig.from_dict({k: {"outer_dimension_partitions": [parts]} for k in keys}))
        compiled = compile_config(_lowered(), config)
        chosen = {k.key: k.partitions for k in kernels_of(compiled.as_text())}
        assert all(chosen[k] == (parts,) for k in keys)
        assert all(np.array_equal(a, b) for a, b in zip(reference, compiled(*ARGS)))
    # the pass and its caches are gone: a plain compile gets XLA's own choices again
    after = {k.key: k.partitions for k in kernels_of(jax.jit(_looped).lower(*ARGS).compile().as_text())}
    assert after == {k.key: k.partitions for k in kernels_of(plain.as_text())}


def test_a_kernel_key_that_matches_nothing_is_an_error_naming_it():
    config = KernelConfig.from_dict({"nothing#0123456789ab": {"outer_dimension_partitions": [2]}})
    with pytest.raises(HlotuneError, match="nothing#0123456789ab matches no kernel"):
        compile_with_pass(_lowered(), config.apply)


def test_a_config_whose_kernel_key_matches_nothing_is_recorded_failed_and_the_batch_goes_on():
    from hlotune.compiler.spaces.kernel_space import program_kernels
    from hlotune.compiler.configs.layouts import LayoutSpace
    from hlotune.programs import load_program

    real = next(k.key for k in program_kernels(LayoutSpace(load_program("zoo:mlp@tiny", abstract=True))) if k.kind == "kLoop")
    configs = [CompileConfig(kernels=KernelConfig.from_dict({key: {"outer_dimension_partitions": [2]}}))
               for key in ("nothing#0123456789ab", real)]
    bad, good = measure("zoo:mlp@tiny", configs, MeasureSettings(rounds=2)).measurements
    assert bad.status == "failed" and "nothing#0123456789ab matches no kernel" in bad.reason
    assert good.ok and good.max_rel_error <= 1e-5 and good.samples_ns


@pytest.mark.parametrize("bad,message", [
    ({"k#1": {"unroll": 2}}, "unknown option 'unroll'"),
    ({"k#1": {"outer_dimension_partitions": [0]}}, "at least 1"),
    ({"k#1": {"outer_dimension_partitions": "two"}}, "list of integers"),
    ({"k": {"outer_dimension_partitions": [2]}}, "NAME#FINGERPRINT"),
])
def test_bad_kernel_options_are_named(bad, message):
    with pytest.raises(HlotuneError, match=message):
        CompileConfig.from_dict({"kernels": bad})


def test_configs_without_kernel_options_keep_their_keys():
    config = CompileConfig.from_dict({"flags": {"xla_cpu_use_xnnpack": False}})
    assert "kernels" not in config.to_dict()
    with_kernels = CompileConfig.from_dict({**config.to_dict(), "kernels": {"k#1": {"outer_dimension_partitions": [2]}}})
    assert CompileConfig.from_dict(with_kernels.to_dict()) == with_kernels and not with_kernels.is_default


def test_exclusive_time_takes_nested_kernels_out_of_their_parent():
    events = [_Event("while.1", 7, 0, 100), _Event("body", 7, 10, 40), _Event("body", 7, 50, 80),
              _Event("after", 7, 100, 110)]
    own = {(e.op, e.start): e.end - e.start for e in exclusive(events)}
    assert own == {("while.1", 0): 40, ("body", 10): 30, ("body", 50): 30, ("after", 100): 10}
    profile = summarize("m", exclusive(events) + [_Event("body", 8, 0, 50), _Event("while.1", 8, 0, 10)])
    assert profile.calls["body"] == 1 and profile.runs == 2  # median of 2 and 1 events, rounded down
    assert profile.kernel_ns["body"] == pytest.approx((60 + 50) / 2)


def test_a_runs_span_is_its_first_kernels_start_to_its_last_kernels_end_on_any_thread():
    events = [_Event("while.1", 7, 0, 100), _Event("body", 7, 10, 40), _Event("after", 7, 105, 110),
              _Event("worker", 7, 20, 130), _Event("body", 8, 200, 250)]
    assert run_spans(events) == {7: 130, 8: 50}


def test_a_real_profile_counts_loop_iterations_and_sums_near_the_run():
    compiled = jax.jit(_looped).lower(*ARGS).compile()
    profile = profile_kernels(compiled, list(ARGS), runs=5)
    body = [k.name for k in kernels_of(compiled.as_text()) if "while/body" in " ".join(k.op_names)]
    assert body and all(profile.calls[name] == 3 for name in body)
    assert profile.runs == 5 and all(ns > 0 for ns in profile.kernel_ns.values())
    assert 0 < profile.sum_ns <= profile.span_ns * 2  # one thread's kernels fit in their run (2 cores)


def test_measure_profiles_apart_from_its_timed_rounds():
    settings = MeasureSettings(rounds=2, repeats=2, default_replicas=1, profile_runs=3)
    parts = CompileConfig.from_dict({"kernels": {}})
    result = measure("zoo:mlp@tiny", [parts], settings)
    default = result.defaults[0]
    assert len(default.samples_ns) == 4  # the profiled runs added no samples
    assert default.kernel_ns and set(default.kernel_ns) >= {k.name for k in kernels_of(default.hlo)}
    assert set(result.defaults[1].kernel_ns) == set(default.kernel_ns)  # a replica: the kernels' noise


def test_an_exported_config_applies_to_the_users_own_function(tmp_path):
    import json

    import hlotune

    keys = [k.key for k in _loop_kernels(jax.jit(_looped).lower(*ARGS).compile().as_text())]
    exported = tmp_path / "tuned.json"  # the shape of `hlotune db export --format json`
    exported.write_text(json.dumps({"config": {"kernels": {k: {"outer_dimension_partitions": [3]} for k in keys}}}))
    run = hlotune.compiled(_looped, *ARGS, config=exported)
    assert all(np.array_equal(a, b) for a, b in zip(run(*ARGS), jax.jit(_looped)(*ARGS)))
    with pytest.raises(HlotuneError, match="cannot read the config"):
        hlotune.compiled(_looped, *ARGS, config=tmp_path / "missing.json")


def test_hlotune_profile_prints_each_kernels_time_and_share(cli):
    result = cli("profile", "zoo:mlp@tiny", "--json", "--runs", "3")
    assert result.returncode == 0, result.stderr
    profile = json.loads(result.stdout)
    assert profile["wall_ms"] > 0 and profile["span_ms"] > 0 and profile["kernels"]
    assert {"name", "ms", "share", "key", "calls"} <= set(profile["kernels"][0])
    assert sum(k["share"] for k in profile["kernels"]) == pytest.approx(1.0)
    bad = cli("profile", "zoo:mlp@tiny", "--config", '{"kernels": {"x#1": {"outer_dimension_partitions": [2]}}}')
    assert bad.returncode == 1 and "x#1 matches no kernel" in bad.stderr


def test_an_edited_module_keeps_its_large_constants():
    """XLA prints large constants as `{...}` by default; parsed back, they would be garbage."""
    table = jnp.asarray(np.random.default_rng(0).normal(size=(256, 256)), dtype=jnp.float32)

    def rotate(x):
        return jnp.sin(x * table) + table

    lowered = jax.jit(rotate).lower(ARGS[0])
    keys = [k.key for k in _loop_kernels(lowered.compile().as_text())]
    config = CompileConfig(kernels=KernelConfig.from_dict({k: {"outer_dimension_partitions": [4]} for k in keys}))
    assert np.array_equal(compile_config(jax.jit(rotate).lower(ARGS[0]), config)(ARGS[0]), jax.jit(rotate)(ARGS[0]))
