"""One flops rule (hlo/flops.py), three readers: the cost analysis on a parsed module, the module
roofline on its text, and the gain model's features on its TpuGraphs arrays."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from hlotune.errors import HlotuneError
from hlotune.fleet.program_features import FEATURE_NAMES, program_features
from hlotune.hlo.costs import module_flops, roofline
from hlotune.hlo.featurize import featurize
from hlotune.hlo.flops import FlopKind, flop_kind, op_flops
from hlotune.hlo.lowering import lowered_proto
from hlotune.hlo.sources import from_text

X = jnp.ones((16, 128), jnp.float32)
PROGRAMS = {  # one op each: its flops by hand, and the flops of the lambda it applies
    "batched dot": (lambda a, b: jnp.einsum("bij,bjk->bik", a, b),
                    (jnp.ones((4, 32, 64)), jnp.ones((4, 64, 16))), 2 * 4 * 32 * 16 * 64, 1),
    "convolution": (lambda x, w: lax.conv(x, w, (1, 1), "SAME"),
                    (jnp.ones((2, 8, 16, 16)), jnp.ones((4, 8, 3, 3))), 2 * (2 * 4 * 16 * 16) * (8 * 3 * 3), 1),
    "elementwise": (lambda x: jnp.tanh(x), (X,), 16 * 128, 1),
    "reduce": (lambda x: x.sum(axis=0), (X,), 16 * 128, 1),
    "reduce-window": (lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (3, 3), (1, 1), "VALID"), (X,),
                      14 * 126 * 9, 1),
    # n log2 n comparisons, each jax's total order: 5 compares and 4 selects
    "sort": (lambda x: jnp.sort(x, axis=1), (X,), 16 * 128 * 7, 9),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_the_three_readers_count_one_op_alike(name):
    fn, args, applied, lambda_flops = PROGRAMS[name]
    text = _printed(fn, args)
    graph = from_text(text)
    analysis, _ = roofline(graph)
    from_arrays = np.expm1(program_features(featurize(graph, progress=False))[FEATURE_NAMES.index("log_flops")])
    assert analysis == applied * lambda_flops
    assert module_flops(text) == applied * lambda_flops
    # the arrays hold the lambda's ops as nodes of their own, not as the caller's: one flop an application
    assert from_arrays == pytest.approx(applied + lambda_flops * (name in ("reduce", "reduce-window", "sort")))


def _printed(fn, args) -> str:
    """The unoptimised module as XLA prints it (names with %), the text module_seconds reads."""
    from jaxlib import _hlo

    return _hlo.HloModule.from_serialized_hlo_module_proto(lowered_proto(fn, args)).to_string(_hlo.HloPrintOptions())


def test_the_rule_prices_numbers_and_arrays_alike():
    kinds = [flop_kind(op) for op in ("dot", "add", "reduce", "transpose")]
    assert kinds == [FlopKind.CONTRACTION, FlopKind.ELEMENTWISE, FlopKind.APPLIES, FlopKind.MOVES]
    elements, contracted, applied = [10.0, 10.0, 4.0, 10.0], [3.0, 0.0, 0.0, 0.0], [0.0, 0.0, 40.0, 0.0]
    one_by_one = [op_flops(*column) for column in zip(kinds, elements, contracted, applied)]
    assert one_by_one == [60.0, 10.0, 40.0, 0.0]
    np.testing.assert_array_equal(op_flops(np.array(kinds), *map(np.array, (elements, contracted, applied))),
                                  one_by_one)


def test_a_text_without_instructions_is_an_error_not_zero_flops():
    text = jax.jit(jnp.tanh).lower(X).as_text(dialect="hlo")  # names without %: not XLA's print
    with pytest.raises(HlotuneError, match="no HLO instructions"):
        module_flops(text)
