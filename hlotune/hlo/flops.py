"""Flops of one HLO op: the one rule behind every cost hlotune computes.

Three readers see an op differently, and each gives the rule what it can see:
- the cost analysis (costs.HloCosts) reads a parsed module, dimension numbers and called
  computations included (GO's simulator, the kernels' roofline);
- the module roofline (costs.module_seconds) reads a module's text, as fusion rewrites are
  priced by the hundred with no XLA parse;
- the gain model's look (fleet/program_features.py) reads TpuGraphs arrays: shapes and windows,
  no called computations.

The rule: 2 flops per multiply-add of a dot or convolution (output elements times the size each
output element contracts), one per output element of an elementwise op, a called lambda's flops
per application for the ops that apply one per element, and none for data movement. It is
arithmetic on numbers or on numpy arrays alike, so an array reader prices every node at once.
"""

from __future__ import annotations

import math
from enum import IntEnum

ELEMENTWISE = frozenset({
    "abs", "add", "atan2", "cbrt", "ceil", "clamp", "compare", "complex", "convert", "cosine",
    "count-leading-zeros", "divide", "erf", "exponential", "exponential-minus-one", "floor",
    "imag", "is-finite", "log", "log-plus-one", "logistic", "and", "not", "or", "xor", "maximum",
    "minimum", "multiply", "negate", "popcnt", "power", "real", "reduce-precision", "remainder",
    "round-nearest-afz", "round-nearest-even", "rsqrt", "select", "shift-left",
    "shift-right-arithmetic", "shift-right-logical", "sign", "sine", "sqrt", "stochastic-convert",
    "subtract", "tan", "tanh",
})
CONTRACTIONS = frozenset({"dot", "convolution"})
# Ops whose called computation is a lambda applied per element.
APPLIES = frozenset({"reduce", "reduce-window", "map", "scatter", "select-and-scatter", "sort",
                     "all-reduce", "all-reduce-start", "reduce-scatter"})


class FlopKind(IntEnum):
    """How an op's flops are counted."""

    MOVES = 0  # data movement, control flow, anything else: no flops of its own
    ELEMENTWISE = 1
    CONTRACTION = 2
    APPLIES = 3


def flop_kind(opcode: str) -> FlopKind:
    if opcode in ELEMENTWISE:
        return FlopKind.ELEMENTWISE
    if opcode in CONTRACTIONS:
        return FlopKind.CONTRACTION
    if opcode in APPLIES:
        return FlopKind.APPLIES
    return FlopKind.MOVES


def op_flops(kind, elements, contracted, applications, lambda_flops=1.0):
    """An op's own flops from its output `elements`, a contraction's `contracted` size per output
    element, and how many `applications` of a `lambda_flops` lambda it makes (a reader that sees
    no lambdas counts one flop each). Numbers or numpy arrays, one entry per op."""
    return ((kind == FlopKind.CONTRACTION) * 2 * elements * contracted
            + (kind == FlopKind.ELEMENTWISE) * elements
            + (kind == FlopKind.APPLIES) * applications * lambda_flops)


def applications(opcode: str, elements: float, largest_operand: float, *, window: float = 1.0,
                 sort_length: float = 1.0) -> float:
    """How many times an APPLIES op runs its lambda: per output element per window position
    (reduce-window), n log2 n times for a sort along a `sort_length` axis, else once per element
    of the largest operand or output (reduce, map, scatter)."""
    if opcode == "reduce-window":
        return elements * window
    if opcode == "sort":
        return largest_operand * max(1, math.ceil(math.log2(max(2, sort_length))))
    return max(largest_operand, elements)
