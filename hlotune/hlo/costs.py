"""Roofline inputs of an HLO module, per instruction, after XLA's HloCostAnalysis in spirit.

Called computations fold into their caller's cost:

- a fusion adds its body's flops; its traffic stays its own operands and output, since the
  body's intermediates never reach memory (the point of fusing);
- a reduce, map, sort, scatter or reduce-window applies its lambda per element: it adds the
  lambda's flops times the elements it is applied to;
- any other caller (while, call, conditional) runs its bodies' kernels: it adds their flops,
  traffic and launches. A while loop counts one trip; trip counts are not in the HLO.

Each op's flops follow hlo/flops.py; bytes are operands read plus output written, sized by
PrimitiveType. GO's simulator (opt/costs.py) and the kernels' roofline features both read them.

`module_seconds` prices a module from its text alone, as fusion rewrites are ranked by the
hundred with no XLA parse (compiler/spaces/fusion_space.py): the same rule, sizes and core. In a
fusion's body it also counts data movement per element, as the emitter recomputes what a
broadcast repeats.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from functools import lru_cache

import numpy as np

from hlotune.errors import HlotuneError
from hlotune.hlo.flops import APPLIES, FlopKind, applications, flop_kind, op_flops
from hlotune.hlo.graph import HloGraph, Shape
from hlotune.hlo.text import ComputationText, HloText, InstructionLine, parse_shape

# Ops that launch no kernel: their data exists already (parameter, constant), they alias
# another buffer (views), or they only run their called computations (control flow).
VIEWS = frozenset({"tuple", "get-tuple-element", "bitcast", "after-all", "add-dependency",
                    "opt-barrier", "domain"})
CONTROL_FLOW = frozenset({"while", "call", "conditional"})
NO_KERNEL = VIEWS | CONTROL_FLOW | {"parameter", "constant", "partition-id", "replica-id"}


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
        if op in NO_KERNEL:
            bytes_in = bytes_out = 0.0
            launches = 0
        else:
            bytes_in = float(sum(self.out_bytes[v] for v in operands))
            bytes_out = float(self.out_bytes[node])
            launches = 1
        flops = lambda_flops = 0.0
        for comp_id in inst.called_computation_ids:
            body_flops, body_in, body_out, body_launches = self._total(comp_id)
            if op in APPLIES:
                lambda_flops += body_flops
            elif op == "fusion":
                flops += body_flops
            else:
                flops += body_flops
                bytes_in += body_in
                bytes_out += body_out
                launches += body_launches
        flops += float(op_flops(flop_kind(op), self.elements[node], _contracted(inst, operands, self),
                                _applications(inst, operands, self), lambda_flops))
        self.flops[node], self.bytes_in[node], self.bytes_out[node] = flops, bytes_in, bytes_out
        self.launches[node] = launches


def _contracted(inst, operands: tuple[int, ...], costs: HloCosts) -> int:
    """What each output element of a dot (its left operand's contracting dimensions) or a
    convolution (its kernel's window and input features) sums over; 0 without dimension numbers."""
    if inst.opcode == "dot" and inst.dot_dims is not None and operands:
        lhs = costs.graph.instructions[operands[0]].shape.dims
        return _size(lhs, inst.dot_dims.lhs_contracting)
    if inst.opcode == "convolution" and inst.convolution_dims is not None and operands:
        kernel = costs.graph.instructions[operands[-1]].shape.dims
        dims = inst.convolution_dims
        return _size(kernel, dims.kernel_spatial) * _size(kernel, (dims.kernel_input_feature,))
    return 0


def _applications(inst, operands: tuple[int, ...], costs: HloCosts) -> float:
    if inst.opcode not in APPLIES:
        return 0.0
    largest = max([costs.elements[v] for v in operands], default=0)
    window = math.prod(max(1, w.size) for w in inst.window)
    length = 1
    if inst.opcode == "sort" and operands:
        dims = costs.graph.instructions[operands[0]].shape.dims
        axis = inst.dimensions[0] if inst.dimensions else len(dims) - 1
        length = dims[axis] if 0 <= axis < len(dims) else 1
    return applications(inst.opcode, _shape_elements(inst.shape), largest, window=window, sort_length=length)


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

    A fusion reads its operands and writes its result once, and does its body's flops. Every
    op's flops follow hlo/flops.py, read from the text: dimension numbers and windows from its
    attributes, a lambda's flops from its computation. Loop bodies count once.
    """
    seconds = 0.0
    for flops, moved in _text_kernels(text):
        seconds += core_seconds(flops, moved) + LAUNCH_S
    return seconds


def module_flops(text: str) -> float:
    """The flops of a module's top-level kernels, read from its text as module_seconds reads them."""
    return sum(flops for flops, _ in _text_kernels(text))


def _text_kernels(text: str) -> Iterator[tuple[float, int]]:
    """Each top-level kernel's flops and bytes moved (operands read, output written). Fusion
    bodies and lambdas are priced in their callers; a loop's body runs its own kernels."""
    hlo = HloText.parse(text)
    if not any(c.instructions for c in hlo.computations.values()):
        raise HlotuneError("no HLO instructions in the module text: pass it as XLA prints it (names with %)")
    priced_in_caller = {name for c in hlo.computations.values() for i in c.instructions.values()
                        if i.opcode == "fusion" or i.opcode in APPLIES for name in i.called_computations}
    for computation in hlo.computations.values():
        if computation.name in priced_in_caller:
            continue
        body = _by_name(computation)
        for instruction in body.values():
            if instruction.opcode in NO_KERNEL:
                continue
            moved = sum(parse_shape(body[o].shape).nbytes for o in instruction.operands if o in body)
            yield _text_flops(hlo, body, instruction), moved + parse_shape(instruction.shape).nbytes


def _text_flops(hlo: HloText, body: dict[str, InstructionLine], instruction: InstructionLine,
                fused: bool = False) -> float:
    """An instruction's flops as the text shows them; a fusion's are its body's. In a fusion's
    body a data movement op counts one per output element too: the emitter computes its operands
    per element it produces, so a broadcast repeats the work above it (a merge's cost)."""
    if instruction.opcode == "fusion":
        return _computation_flops(hlo, instruction.calls, fused=True)
    kind = flop_kind(instruction.opcode)
    out = parse_shape(instruction.shape).elements
    if kind == FlopKind.MOVES:
        return float(out) if fused and instruction.opcode not in NO_KERNEL else 0.0
    operands = [parse_shape(body[o].shape) for o in instruction.operands if o in body]
    if kind == FlopKind.CONTRACTION:
        return float(op_flops(kind, out, _text_contracted(instruction, operands), 0))
    if kind == FlopKind.ELEMENTWISE:
        return float(op_flops(kind, out, 0, 0))
    lambda_flops = sum(_computation_flops(hlo, name) for name in instruction.called_computations)
    return float(op_flops(kind, out, 0, _text_applications(instruction, out, operands), lambda_flops))


def _text_applications(instruction: InstructionLine, out: int, operands: list[Shape]) -> float:
    sizes = _WINDOW_SIZE.search(instruction.attributes.get("window", ""))
    window = math.prod(int(d) for d in sizes.group(1).split("x")) if sizes else 1
    length = 1
    if instruction.opcode == "sort" and operands:
        axis = [int(d) for d in _DIMS.findall(instruction.attributes.get("dimensions", ""))]
        dims = operands[0].dims
        length = dims[axis[0]] if axis and axis[0] < len(dims) else (dims[-1] if dims else 1)
    largest = max((o.elements for o in operands), default=0)
    return applications(instruction.opcode, out, largest, window=window, sort_length=length)


def _text_contracted(instruction: InstructionLine, operands: list[Shape]) -> int:
    """A dot's contracting size (its left operand's lhs_contracting_dims), a convolution's
    (its kernel's elements over its output features, the `o` of dim_labels)."""
    if len(operands) < 2:
        return 0
    if instruction.opcode == "dot":
        axes = _DIMS.findall(instruction.attributes.get("lhs_contracting_dims", ""))
        return _size(operands[0].dims, [int(a) for a in axes])
    kernel_labels = instruction.attributes.get("dim_labels", "_").split("_")[1].split("->")[0]
    out_feature = kernel_labels.find("o")
    kernel = operands[-1]
    features = kernel.dims[out_feature] if 0 <= out_feature < len(kernel.dims) else 1
    return kernel.elements // max(features, 1)


def _computation_flops(hlo: HloText, name: str, fused: bool = False) -> float:
    body = _by_name(hlo.computations[name])
    return sum(_text_flops(hlo, body, instruction, fused) for instruction in body.values())


_WINDOW_SIZE = re.compile(r"(?<![\w_])size=([\dx]+)")
_DIMS = re.compile(r"\d+")


def _by_name(computation: ComputationText) -> dict[str, InstructionLine]:
    return {i.name: i for i in computation.instructions.values()}
