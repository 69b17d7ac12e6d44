"""What users write, exported and tuned with the real compiler: pytrees of library types
(optax, equinox, flax), LAPACK custom calls and host callbacks. Each runs as jax.jit runs it,
loaded from its file (or, with host callbacks, live in this process), and tunes."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hlotune
from conftest import need
from hlotune.compiler.measurement.measure import MeasureSettings
from hlotune.errors import HlotuneError
from hlotune.programs import load_program
from hlotune.programs.exported import HostCallbacks, export_function
from hlotune.tuning import autotune
from hlotune.tuning.fingerprint import program_fingerprint

DEV = 'pip install -c constraints.txt -e ".[dev]"'
TINY = {"budget": 2, "batch": 2, "strategy": "random", "warm_start": 0,
        "settings": MeasureSettings(rounds=2, repeats=1, default_replicas=1), "progress": False}


def optax_adam_step():
    optax = need("optax", install=DEV)
    adam = optax.adam(1e-2)
    params = {"w": jnp.linspace(-1.0, 1.0, 12).reshape(4, 3), "b": jnp.zeros(3)}
    x = jnp.linspace(0.0, 1.0, 8).reshape(2, 4)

    def train_step(params, state, x):
        loss, grads = jax.value_and_grad(lambda p: jnp.sum(jnp.tanh(x @ p["w"] + p["b"]) ** 2))(params)
        updates, state = adam.update(grads, state, params)
        return optax.apply_updates(params, updates), state, loss

    return train_step, (params, adam.init(params), x)


def equinox_cnn_step():
    eqx = need("equinox", install=DEV)

    class CNN(eqx.Module):
        conv: eqx.nn.Conv2d
        linear: eqx.nn.Linear

        def __call__(self, x):
            return self.linear(jax.nn.relu(self.conv(x)).reshape(-1))

    keys = jax.random.split(jax.random.key(0))
    model = CNN(eqx.nn.Conv2d(1, 2, 3, key=keys[0]), eqx.nn.Linear(2 * 4 * 4, 2, key=keys[1]))

    def train_step(model, x):
        loss, grads = jax.value_and_grad(lambda m: jnp.sum(m(x) ** 2))(model)
        return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, model, grads), loss

    return train_step, (model, jnp.linspace(0.0, 1.0, 36).reshape(1, 6, 6))


def flax_nnx_step():
    nnx = need("flax.nnx", install=DEV)
    graph, state = nnx.split(nnx.Linear(4, 2, rngs=nnx.Rngs(0)))

    def train_step(state, x):
        loss, grads = jax.value_and_grad(lambda s: jnp.sum(nnx.merge(graph, s)(x) ** 2))(state)
        return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, state, grads), loss

    return train_step, (state, jnp.linspace(0.0, 1.0, 8).reshape(2, 4))


def lapack_solve():
    # Q^T b without Q (LAPACK's ormqr, as a Levenberg-Marquardt step takes it): a custom call
    # without jax.export's compatibility guarantee, where jax has it (0.8 has not)
    multiply = getattr(jax.scipy.linalg, "qr_multiply", None)

    def solve(a, b):
        q_b = jnp.linalg.qr(a)[0].T @ b if multiply is None else multiply(a, b)
        return q_b, jnp.linalg.lstsq(a, b)[0]

    a = jnp.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0], [1.0, 0.0, 1.0]])
    lowered = jax.jit(solve).lower(a, jnp.ones(4)).as_text()
    assert "lapack_" in lowered and (multiply is None or "lapack_sormqr_ffi" in lowered)
    return solve, (a, jnp.arange(4.0))


def debug_callback():
    def noted(x):
        jax.debug.callback(lambda value: None, x)
        return jax.pure_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x) * 2.0

    return noted, (jnp.arange(6.0).reshape(2, 3),)


def equinox_check():
    eqx = need("equinox", install=DEV)

    def checked(x):
        return eqx.error_if(x, jnp.any(x < 0), "negative input") * 2.0

    return checked, (jnp.arange(6.0).reshape(2, 3),)


EXPORTED = [optax_adam_step, equinox_cnn_step, flax_nnx_step, lapack_solve]
LIVE = [debug_callback, equinox_check]


def _assert_same(got, want) -> None:
    assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
    for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", EXPORTED, ids=lambda case: case.__name__)
def test_a_library_pytree_exports_as_flat_leaves_and_loads_without_its_types(case, tmp_path):
    fn, args = case()
    want = jax.jit(fn)(*args)
    exported = export_function(fn, args)
    loaded = load_program(exported.save(tmp_path))  # what the worker runs: flat leaves
    _assert_same(list(loaded.fn(*loaded.args)), jax.tree_util.tree_leaves(want))
    user = exported.user_program(tmp_path)  # what the user calls: the trees
    _assert_same(jax.jit(user.fn)(*args), want)
    assert program_fingerprint(loaded) == program_fingerprint(exported.program(tmp_path))


@pytest.mark.parametrize("case", EXPORTED + LIVE, ids=lambda case: case.__name__)
@pytest.mark.filterwarnings("ignore:cannot export:UserWarning")  # LIVE's, tested below
def test_tune_is_not_refused_and_compiles_what_jax_jit_computes(case, tmp_path):
    fn, args = case()
    result = hlotune.tune(fn, *args, db=tmp_path / "t.sqlite", **TINY)
    _assert_same(result.compiled()(*args), jax.jit(fn)(*args))


def test_tune_autotune_and_the_file_agree_on_the_fingerprint(tmp_path):
    fn, args = optax_adam_step()
    path = tmp_path / "t.sqlite"
    result = hlotune.tune(fn, *args, db=path, **TINY)
    assert program_fingerprint(load_program(result.program)) == result.fingerprint
    decorated = hlotune.autotune(fn, db=path)
    assert decorated.choice(*args) == autotune.Choice(result.best_config, autotune.DATABASE, result.fingerprint)
    _assert_same(decorated(*args), jax.jit(fn)(*args))


@pytest.mark.parametrize("case", LIVE, ids=lambda case: case.__name__)
def test_host_callbacks_are_tuned_in_this_process_with_one_warning(case, tmp_path):
    fn, args = case()
    with pytest.raises(HostCallbacks, match="host callbacks"):
        export_function(fn, args)
    path = tmp_path / "t.sqlite"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = hlotune.tune(fn, *args, db=path, **TINY)
    said = [str(warning.message) for warning in caught if "in this process" in str(warning.message)]
    assert len(said) == 1 and "crashes this process" in said[0]
    assert ("EQX_ON_ERROR=nan" in said[0]) == (case is equinox_check)
    decorated = hlotune.autotune(fn, db=path)  # the decision applies: the same fingerprint
    assert decorated.choice(*args).fingerprint == result.fingerprint
    _assert_same(decorated(*args), jax.jit(fn)(*args))

    tuned_here = hlotune.autotune(fn, db=tmp_path / "other.sqlite", tune_on_first_call=True,
                                  progress=False, **{k: v for k, v in TINY.items() if k != "progress"})
    with pytest.warns(UserWarning, match="in this process"):
        assert tuned_here.choice(*args).source == autotune.TUNED
    _assert_same(tuned_here(*args), jax.jit(fn)(*args))


def test_a_live_program_takes_no_other_runner(tmp_path):
    fn, args = debug_callback()
    with pytest.raises(HlotuneError, match="only in this process"):
        hlotune.tune(fn, *args, db=tmp_path / "t.sqlite", runner="ray", **TINY)
