"""The zoo: every workload lowers, compiles and runs at size tiny, for inference and as a
training step, with deterministic example arguments. Each program is compiled once."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from conftest import compile_and_run
from hlotune.programs.zoo import WORKLOADS

NAMES = sorted(WORKLOADS)


def _leaves(tree) -> list[np.ndarray]:
    return [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(tree)]


def test_the_zoo_has_at_least_twelve_architectures():
    assert len(WORKLOADS) >= 12
    assert all(name == workload.name for name, workload in WORKLOADS.items())


@pytest.mark.parametrize("name", NAMES)
def test_every_size_has_a_batch_that_callers_can_override(name):
    workload = WORKLOADS[name]
    assert {"tiny", "small", "base"} <= set(workload.sizes)
    assert all("batch" in size for size in workload.sizes.values())

    def shapes(batch: int):  # traced only: nothing is computed or compiled
        def build(key):
            params, x, y = workload.init(key, **(workload.sizes["tiny"] | {"batch": batch}))
            return x, workload.loss(workload.apply(params, x), y)

        return jax.eval_shape(build, jax.random.PRNGKey(0))

    (x_default, _), (x_three, loss) = shapes(workload.sizes["tiny"]["batch"]), shapes(3)
    assert loss.shape == ()
    leaves = jax.tree_util.tree_leaves
    assert [a.shape for a in leaves(x_default)] != [a.shape for a in leaves(x_three)]


@pytest.mark.parametrize("name", NAMES)
def test_inference_compiles_and_runs_finite(name):
    fn, args = WORKLOADS[name].program("tiny", train=False)
    out = compile_and_run(fn, args)
    assert all(np.isfinite(leaf).all() for leaf in _leaves(out))


@pytest.mark.parametrize("name", NAMES)
def test_training_step_updates_every_parameter(name):
    fn, args = WORKLOADS[name].program("tiny", train=True)
    params, velocity, loss = compile_and_run(fn, args)
    assert loss.shape == () and np.isfinite(loss)
    for after, gradient in zip(_leaves(params), _leaves(velocity), strict=True):
        assert np.isfinite(after).all()
        # The first momentum step holds the gradient: no parameter is cut off from the loss.
        assert np.any(gradient != 0)


@pytest.mark.parametrize("name", NAMES)
def test_example_arguments_follow_the_seed(name):
    workload = WORKLOADS[name]
    first, again, other = (workload.program("tiny", train=True, seed=s)[1] for s in (0, 0, 1))
    for a, b in zip(_leaves(first), _leaves(again), strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert any(not np.array_equal(a, b) for a, b in zip(_leaves(first[0]), _leaves(other[0])))


@pytest.mark.parametrize("name", NAMES)
def test_integer_inputs_are_int32(name):
    _, (_, _, x, y) = WORKLOADS[name].program("tiny", train=True)
    for leaf in _leaves((x, y)):
        if np.issubdtype(leaf.dtype, np.signedinteger):
            assert leaf.dtype == np.int32
