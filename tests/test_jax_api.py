"""hlotune.tune, hlotune.compiled and @hlotune.autotune take what jax.jit takes, with the real
compiler: typed PRNG keys, static arguments, keywords; unknown options are clean errors."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import normals
import hlotune
from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.configs.flags import FlagConfig
from hlotune.compiler.measurement.measure import MeasureSettings
from hlotune.errors import HlotuneError
from hlotune.tuning import autotune
from hlotune.tuning.storage import Decision, TuningDatabase

FLAGS = CompileConfig(FlagConfig.from_dict({"xla_cpu_use_xnnpack": False}))
TINY = {"budget": 2, "batch": 2, "strategy": "random", "warm_start": 0,
        "settings": MeasureSettings(rounds=2, repeats=1, default_replicas=1), "progress": False}


def noisy(key, x):
    key, sub = jax.random.split(key)
    return key, x + jax.random.normal(sub, x.shape)


def scale(x, mode, *, flip=False):
    y = x * 2.0 if mode == "double" else x + 1.0
    return -y if flip else y


def mlp(params, x):
    hidden = jax.nn.relu(x @ params["w1"] + params["b1"])
    return {"y": hidden @ params["w2"], "energy": jnp.sum(hidden * hidden)}


def _params(dtype=jnp.float32):
    w1, w2, x = normals(1, (8, 16), (16, 4), (4, 8), dtype=dtype)
    return {"w1": w1, "b1": jnp.zeros(16, dtype), "w2": w2}, x


def _assert_same(got, want) -> None:
    """Equal pytrees; keys compared by their key data, floats to f32 rounding."""
    assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
    for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        assert a.dtype == b.dtype
        if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key):
            np.testing.assert_array_equal(jax.random.key_data(a), jax.random.key_data(b))
        else:
            np.testing.assert_allclose(np.asarray(a, np.float32), np.asarray(b, np.float32),
                                       rtol=1e-5, atol=1e-5)


def _decide(path, fingerprint: str, config: CompileConfig = FLAGS) -> None:
    with TuningDatabase(path) as db:
        db.register(fingerprint, "test")
        db.decide(Decision(fingerprint, config, config, 200.0, 150.0, 0.01, "random", "all", 0.0))


def test_typed_keys_in_and_out_of_tune_compiled_and_autotune(tmp_path):
    path, key, x = tmp_path / "t.sqlite", jax.random.key(0), jnp.arange(4.0)
    want = jax.jit(noisy)(key, x)
    result = hlotune.tune(noisy, key, x, db=path, **TINY)
    _assert_same(result.compiled()(key, x), want)
    _assert_same(hlotune.compiled(noisy, key, x, config=FLAGS)(key, x), want)

    _decide(path, result.fingerprint)
    decorated = hlotune.autotune(noisy, db=path)
    assert decorated.choice(key, x).source == autotune.DATABASE
    _assert_same(decorated(key, x), want)
    _assert_same(decorated(jax.random.key(5), x), jax.jit(noisy)(jax.random.key(5), x))


def test_static_argnums_makes_each_static_value_its_own_program(tmp_path):
    path, x = tmp_path / "t.sqlite", jnp.arange(4.0)
    jitted = jax.jit(scale, static_argnums=1)
    decorated = hlotune.autotune(db=path, static_argnums=1)(scale)
    double, add = decorated.choice(x, "double"), decorated.choice(x, "add")
    assert double.fingerprint != add.fingerprint
    _decide(path, double.fingerprint)

    fresh = hlotune.autotune(db=path, static_argnums=1)(scale)
    assert fresh.choice(x, "double").source == autotune.DATABASE
    assert fresh.choice(x, "add").source == autotune.JIT  # not tuned: its own program
    for mode in ("double", "add", "double"):
        _assert_same(fresh(x, mode), jitted(x, mode))
    _assert_same(fresh(x, mode="double"), jitted(x, mode="double"))  # static however passed
    with pytest.raises(HlotuneError, match="static argument 'mode' of scale must be hashable"):
        fresh(x, ["double"])
    with pytest.raises(HlotuneError, match="static_argnums: scale takes 2 positional"):
        hlotune.autotune(scale, static_argnums=2)


def test_static_argnames_are_baked_into_the_tuned_and_compiled_program(tmp_path):
    x = jnp.arange(4.0)
    jitted = jax.jit(scale, static_argnames=("mode", "flip"))
    result = hlotune.tune(scale, x, mode="double", flip=True, static_argnames=("mode", "flip"),
                          db=tmp_path / "t.sqlite", **TINY)
    tuned = result.compiled()
    _assert_same(tuned(x, mode="double", flip=True), jitted(x, mode="double", flip=True))
    _assert_same(tuned(x + 1, "double", flip=True), jitted(x + 1, "double", flip=True))
    with pytest.raises(HlotuneError, match="compiled for static arguments mode='double', flip=True"):
        tuned(x, mode="add", flip=True)

    compiled = hlotune.compiled(scale, x, "add", static_argnames="mode", config=FLAGS)
    _assert_same(compiled(x, mode="add"), jitted(x, mode="add"))
    with pytest.raises(HlotuneError, match="no parameter 'mod'"):
        hlotune.compiled(scale, x, "add", static_argnames="mod", config=FLAGS)


def test_keyword_arguments_bind_as_jax_jit_binds_them(tmp_path):
    path, (params, x) = tmp_path / "t.sqlite", _params()
    want = jax.jit(mlp)(params, x=x)
    decorated = hlotune.autotune(mlp, db=path)
    assert decorated.choice(params, x=x) == decorated.choice(x=x, params=params)
    _decide(path, decorated.choice(params, x).fingerprint)

    fresh = hlotune.autotune(mlp, db=path)
    assert fresh.choice(params, x=x).source == autotune.DATABASE
    for call in (lambda f: f(params, x=x), lambda f: f(x=x, params=params), lambda f: f(params, x)):
        _assert_same(call(fresh), want)
    compiled = hlotune.compiled(mlp, params=params, x=x, config=FLAGS)
    _assert_same(compiled(params, x=x), want)
    _assert_same(compiled(params, x), want)
    with pytest.raises(HlotuneError, match="mlp: missing a required argument: 'x'"):
        fresh(params, y=x)


def test_unknown_options_are_named_with_the_closest_one(tmp_path):
    x, path = jnp.arange(4.0), tmp_path / "t.sqlite"
    with pytest.raises(HlotuneError, match="^unknown option 'budgte' for hlotune.tune: did you mean 'budget'[?]$"):
        hlotune.tune(scale, x, "add", budgte=2, db=path)
    with pytest.raises(HlotuneError, match="unknown option 'static_argname' for hlotune.tune: "
                                           "did you mean 'static_argnames'"):
        hlotune.tune(scale, x, "add", static_argname="mode", db=path)
    with pytest.raises(HlotuneError, match="unknown option 'stratgy' for hlotune.autotune: did you mean 'strategy'"):
        hlotune.autotune(stratgy="random")
    with pytest.raises(HlotuneError, match="unknown option 'confg' for hlotune.compiled: did you mean 'config'"):
        hlotune.compiled(scale, x, "add", static_argnums=1, confg=FLAGS)
    with pytest.raises(HlotuneError, match="hlotune.tune does not take jax.jit's option 'donate_argnums'"):
        hlotune.tune(scale, x, "add", donate_argnums=0, db=path)
    with pytest.raises(HlotuneError, match="^unknown option 'zzz' for hlotune.tune$"):
        hlotune.tune("zoo:mlp@tiny", zzz=1, db=path)
    # a keyword the function takes goes to it
    statics = {"static_argnums": 1, "static_argnames": "flip"}
    _assert_same(hlotune.compiled(scale, x, "add", flip=True, config=FLAGS, **statics)(x, "add", flip=True),
                 jax.jit(scale, **statics)(x, "add", flip=True))


def test_bf16_pytrees_dict_outputs_and_python_scalars_still_work(tmp_path):
    path, (params, x) = tmp_path / "t.sqlite", _params(jnp.bfloat16)

    def shifted(params, x, shift):
        return mlp(params, x + shift)

    want = jax.jit(shifted)(params, x, 0.5)
    _assert_same(hlotune.compiled(shifted, params, x, 0.5, config=FLAGS)(params, x, 0.5), want)
    decorated = hlotune.autotune(shifted, db=path)
    _decide(path, decorated.choice(params, x, 0.5).fingerprint)
    fresh = hlotune.autotune(shifted, db=path)
    assert fresh.choice(params, x, 0.5).source == autotune.DATABASE
    for _ in range(2):  # the second call goes straight to the executable
        _assert_same(fresh(params, x, 0.5), want)


def test_jitted_functions_partials_and_uint32_keys_still_work(tmp_path):
    path, key, x = tmp_path / "t.sqlite", jax.random.PRNGKey(0), jnp.arange(4.0)
    jitted = jax.jit(noisy)
    partial = functools.partial(noisy, key)
    _assert_same(hlotune.compiled(jitted, key, x, config=FLAGS)(key, x), jitted(key, x))
    _assert_same(hlotune.compiled(partial, x, config=FLAGS)(x), jitted(key, x))
    decorated = hlotune.autotune(partial, db=path)
    _decide(path, decorated.choice(x).fingerprint)
    fresh = hlotune.autotune(partial, db=path)
    assert fresh.choice(x=x).source == autotune.DATABASE
    _assert_same(fresh(x), jitted(key, x))
    _assert_same(fresh(x=x), jitted(key, x))
