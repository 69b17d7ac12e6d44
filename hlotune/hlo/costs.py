"""Roofline inputs of an HLO module, per instruction, after XLA's HloCostAnalysis in spirit.

Called computations fold into their caller's cost:

- a fusion adds its body's flops; its traffic stays its own operands and output, since the
  body's intermediates never reach memory (the point of fusing);
- a reduce, map, sort, scatter or reduce-window applies its lambda per element: it adds the
  lambda's flops times the elements it is applied to;
- any other caller (while, call, conditional) runs its bodies' kernels: it adds their flops,
  traffic and launches. A while loop counts one trip; trip counts are not in the HLO.

Flops are 2 per multiply-add of a dot or convolution, one per output element of an elementwise
op, none for data movement; bytes are operands read plus output written, sized by
PrimitiveType. GO's simulator (opt/costs.py) and the kernels' roofline features both read them.

`module_seconds` prices a module from its text alone, as fusion rewrites are ranked by the
hundred with no XLA parse (compiler/spaces/fusion_space.py): the same sizes, ops and core, and coarser
flops.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from hlotune.errors import HlotuneError
from hlotune.hlo.graph import HloGraph, Shape
from hlotune.hlo.text import ComputationText, HloText, InstructionLine, parse_shape

# Ops that launch no kernel: their data exists already (parameter, constant), they alias
# another buffer (views), or they only run their called computations (control flow).
VIEWS = frozenset({"tuple", "get-tuple-element", "bitcast", "after-all", "add-dependency",
                    "opt-barrier", "domain"})
CONTROL_FLOW = frozenset({"while", "call", "conditional"})
NO_KERNEL = VIEWS | CONTROL_FLOW | {"parameter", "constant", "partition-id", "replica-id"}

ELEMENTWISE = frozenset({
    "abs", "add", "atan2", "cbrt", "ceil", "clamp", "compare", "complex", "convert", "cosine",
    "count-leading-zeros", "divide", "erf", "exponential", "exponential-minus-one", "floor",
    "imag", "is-finite", "log", "log-plus-one", "logistic", "and", "not", "or", "xor", "maximum",
    "minimum", "multiply", "negate", "popcnt", "power", "real", "reduce-precision", "remainder",
    "round-nearest-afz", "round-nearest-even", "rsqrt", "select", "shift-left",
    "shift-right-arithmetic", "shift-right-logical", "sign", "sine", "sqrt", "stochastic-convert",
    "subtract", "tan", "tanh",
})

# Ops whose called computation is a lambda applied per element.
_APPLIES = frozenset({"reduce", "reduce-window", "map", "scatter", "select-and-scatter", "sort",
                      "all-reduce", "all-reduce-start", "reduce-scatter"})


class HloCosts:
    """Per HLO node (every computation's): flops, bytes read and written, kernel launches,
    with its called computations folded in. Lists, built once, indexed by node."""

    def __init__(self, graph: HloGraph):
        self.graph = graph
        insts = graph.instructions
        self.out_bytes = [_shape_bytes(inst.shape) for inst in insts]
        self.elements = [_shape_elements(inst.shape) for inst in insts]
        n = len(insts)
        self.flops, self.bytes_in, self.bytes_out = [0.0] * n, [0.0] * n, [0.0] * n
        self.launches = [0] * n
        starts = graph.computation_starts.tolist()
        self._span = {
            comp.id: (starts[k], starts[k + 1]) for k, comp in enumerate(graph.computations)
        }
        self._totals: dict[int, tuple[float, float, float, int] | None] = {}
        for comp in graph.computations:
            self._total(comp.id)

    def _total(self, comp_id: int) -> tuple[float, float, float, int]:
        """The summed costs of one computation's nodes (computing them on first use)."""
        if comp_id in self._totals:
            if self._totals[comp_id] is None:
                raise HlotuneError(f"computation id {comp_id} calls itself")
            return self._totals[comp_id]
        self._totals[comp_id] = None  # in progress
        start, end = self._span[comp_id]
        for node in range(start, end):
            self._node(node)
        total = (
            sum(self.flops[start:end]),
            sum(self.bytes_in[start:end]),
            sum(self.bytes_out[start:end]),
            sum(self.launches[start:end]),
        )
        self._totals[comp_id] = total
        return total

    def _node(self, node: int) -> None:
        inst = self.graph.instructions[node]
        operands = self.graph.operands[node]
        op = inst.opcode
        flops = float(_own_flops(inst, operands, self))
        if op in NO_KERNEL:
            bytes_in = bytes_out = 0.0
            launches = 0
        else:
            bytes_in = float(sum(self.out_bytes[v] for v in operands))
            bytes_out = float(self.out_bytes[node])
            launches = 1
        for comp_id in inst.called_computation_ids:
            body_flops, body_in, body_out, body_launches = self._total(comp_id)
            if op == "fusion":
                flops += body_flops
            elif op in _APPLIES:
                flops += _applications(inst, operands, self) * body_flops
            else:
                flops += body_flops
                bytes_in += body_in
                bytes_out += body_out
                launches += body_launches
        self.flops[node], self.bytes_in[node], self.bytes_out[node] = flops, bytes_in, bytes_out
        self.launches[node] = launches


def _own_flops(inst, operands: tuple[int, ...], costs: HloCosts) -> int:
    """Flops of the instruction itself: 2 per multiply-add for dot and convolution (output
    elements times contracted size), 1 per output element when elementwise, else 0."""
    op = inst.opcode
    if op == "dot" and inst.dot_dims is not None and operands:
        lhs = costs.graph.instructions[operands[0]].shape.dims
        return 2 * _shape_elements(inst.shape) * _size(lhs, inst.dot_dims.lhs_contracting)
    if op == "convolution" and inst.convolution_dims is not None and operands:
        kernel = costs.graph.instructions[operands[-1]].shape.dims
        dims = inst.convolution_dims
        window = _size(kernel, dims.kernel_spatial) * _size(kernel, (dims.kernel_input_feature,))
        return 2 * _shape_elements(inst.shape) * window
    if op in ELEMENTWISE:
        return _shape_elements(inst.shape)
    return 0


def _applications(inst, operands: tuple[int, ...], costs: HloCosts) -> int:
    """How many times a per-element lambda runs: once per element of the largest operand
    (reduce, map, scatter), per output element per window position (reduce-window), or
    n log2 n times for a sort."""
    if inst.opcode == "reduce-window":
        window = math.prod(max(1, w.size) for w in inst.window)
        return _shape_elements(inst.shape) * window
    if inst.opcode == "sort" and operands:
        dims = costs.graph.instructions[operands[0]].shape.dims
        axis = inst.dimensions[0] if inst.dimensions else len(dims) - 1
        length = dims[axis] if 0 <= axis < len(dims) else 1
        return costs.elements[operands[0]] * max(1, math.ceil(math.log2(max(2, length))))
    return max([costs.elements[v] for v in operands] + [_shape_elements(inst.shape)])


def _size(dims: tuple[int, ...], axes) -> int:
    """Product of the named dimensions (those out of range count 1)."""
    return math.prod(dims[a] for a in axes if 0 <= a < len(dims))


@lru_cache(maxsize=None)
def _shape_elements(shape: Shape) -> int:
    return shape.elements


@lru_cache(maxsize=None)
def _shape_bytes(shape: Shape) -> int:
    return shape.nbytes


def top_level_nodes(graph: HloGraph) -> np.ndarray:
    """The nodes of the computations no instruction calls: the entry and, in a composed module,
    its copies; the instructions that run as ops of their own."""
    called = {c for inst in graph.instructions for c in inst.called_computation_ids}
    starts = graph.computation_starts
    return np.concatenate([np.arange(starts[k], starts[k + 1])
                           for k, comp in enumerate(graph.computations) if comp.id not in called])


# One x86 core (AVX2 FMA at 3 GHz; cache-resident operands, as most kernels' are) and one task's
# dispatch on the thread pool (a kernel's launch, a partition's): orders of magnitude, the
# bandwidth and overhead picked among 1e10-1e11 B/s and 1-3 us on builtin:tile/train only.
CORE_FLOPS = 1e11
CORE_BANDWIDTH = 1e11
LAUNCH_S = 3e-6


def core_seconds(flops: float, nbytes: float) -> float:
    """A kernel's busy seconds on one core: the slower of its compute and its memory traffic."""
    return max(flops / CORE_FLOPS, nbytes / CORE_BANDWIDTH)


def roofline(graph: HloGraph) -> tuple[float, float]:
    """The module's flops and bytes (operands read, outputs written) over its top-level ops."""
    costs, nodes = HloCosts(graph), top_level_nodes(graph)
    traffic = np.asarray(costs.bytes_in)[nodes] + np.asarray(costs.bytes_out)[nodes]
    return float(np.asarray(costs.flops)[nodes].sum()), float(traffic.sum())


def module_seconds(text: str) -> float:
    """The roofline seconds of a module's top-level kernels, one after another on one core.

    A fusion reads its operands and writes its result once; its flops are one per element of
    each instruction inside (a dot's, two per multiply-add, its contracted size taken as its
    left operand's elements per output row). Other instructions only move data. Loop bodies
    count once.
    """
    hlo = HloText.parse(text)
    fused = {i.calls for c in hlo.computations.values() for i in c.instructions.values() if i.opcode == "fusion"}
    seconds = 0.0
    for computation in hlo.computations.values():
        if computation.name in fused:
            continue
        body = _by_name(computation)
        for instruction in body.values():
            if instruction.opcode in NO_KERNEL:
                continue
            moved = sum(parse_shape(body[o].shape).nbytes for o in instruction.operands if o in body)
            moved += parse_shape(instruction.shape).nbytes
            flops = _fusion_flops(hlo, instruction.calls) if instruction.opcode == "fusion" else 0.0
            seconds += core_seconds(flops, moved) + LAUNCH_S
    return seconds


def _fusion_flops(hlo: HloText, computation: str) -> float:
    body = _by_name(hlo.computations[computation])
    flops = 0.0
    for instruction in body.values():
        if instruction.opcode in NO_KERNEL:
            continue
        shape = parse_shape(instruction.shape)
        out = shape.elements
        if instruction.opcode in ("dot", "convolution") and instruction.operands:
            lhs = parse_shape(body[instruction.operands[0]].shape).elements
            out = 2 * out * max(lhs // (math.prod(shape.dims[:-1]) or 1), 1)
        flops += out
    return flops


def _by_name(computation: ComputationText) -> dict[str, InstructionLine]:
    return {i.name: i for i in computation.instructions.values()}
