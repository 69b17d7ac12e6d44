"""OpGraph: the op graph the simulator runs, with roofline costs derived from HLO shapes.

The ops are the instructions of the top-level computations: the entry, and any computation that
no instruction calls (the copies in a composed module). Called computations fold into their
caller's cost:

- a fusion adds its body's flops; its traffic stays its own operands and output, since the
  body's intermediates never reach memory (the point of fusing);
- a reduce, map, sort, scatter or reduce-window applies its lambda per element: it adds the
  lambda's flops times the elements it is applied to;
- any other caller (while, call, conditional) runs its bodies' kernels: it adds their flops,
  traffic and launches. A while loop counts one trip; trip counts are not in the HLO.

Costs are roofline inputs: flops (2 per multiply-add of a dot or convolution, one per output
element of an elementwise op, none for data movement) and bytes (operands read plus output
written, sized by PrimitiveType). Per-opcode calibration factors scale an op's roofline time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from hlotune.errors import HlotuneError
from hlotune.hlo.graph import HloGraph, Shape
from hlotune.hlo.opcodes import OPCODE_IDS, opcode_id
from hlotune.opt.device import DeviceModel

# Ops that launch no kernel: their data exists already (parameter, constant), they alias
# another buffer (views), or they only run their called computations (control flow).
_VIEWS = frozenset({"tuple", "get-tuple-element", "bitcast", "after-all", "add-dependency",
                    "opt-barrier", "domain"})
_NO_KERNEL = _VIEWS | {"parameter", "constant", "partition-id", "replica-id", "while", "call",
                       "conditional"}

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


@dataclass(frozen=True)
class OpGraph:
    """Ops and the tensors between them, as arrays (one entry per op, one per edge)."""

    name: str
    flops: np.ndarray  # (n,) float64
    bytes_in: np.ndarray  # (n,) float64: bytes its kernels read
    bytes_out: np.ndarray  # (n,) float64: bytes its kernels write
    alloc_bytes: np.ndarray  # (n,) float64: its output buffer; 0 for views
    launches: np.ndarray  # (n,) int64: kernels it runs: 0 (parameter, view), 1, or a body's
    time_scale: np.ndarray  # (n,) float64: calibration multiplier of its roofline time
    opcode: np.ndarray  # (n,) int64: TpuGraphs opcode id (0 = unknown)
    hlo_node: np.ndarray  # (n,) int64: its node index in the HloGraph
    edge_src: np.ndarray  # (E,) int64: producer op
    edge_dst: np.ndarray  # (E,) int64: consumer op
    edge_bytes: np.ndarray  # (E,) float64: bytes of the tensor the consumer reads
    order: np.ndarray  # (n,) int64: a topological order
    depth: np.ndarray  # (n,) int64: longest path from a source, in edges

    @property
    def num_ops(self) -> int:
        return len(self.flops)

    @property
    def num_edges(self) -> int:
        return len(self.edge_src)

    def edge_index(self) -> np.ndarray:
        """(E, 2) [producer, consumer] pairs."""
        return np.stack([self.edge_src, self.edge_dst], axis=1)

    def seconds(self, devices: DeviceModel) -> np.ndarray:
        """(n, N) seconds each op takes alone on each device (unfused)."""
        return roofline_seconds(
            self.flops * self.time_scale,
            (self.bytes_in + self.bytes_out) * self.time_scale,
            self.launches,
            devices,
        )

    def step_time_bound(self, devices: DeviceModel) -> float:
        """Seconds no placement, schedule or link can beat without fusion: the longer of the
        critical path and the work spread evenly over the devices, each op at its fastest
        device's time (the headroom a table's numbers have; transfers only add to it)."""
        fastest = self.seconds(devices).min(axis=1)
        finish = fastest.copy()
        src, dst = self.edge_src, self.edge_dst
        by_level = np.argsort(self.depth[dst], kind="stable")
        src, dst = src[by_level], dst[by_level]
        levels = self.depth[dst]
        for level in np.unique(levels):  # producers sit at lower levels: already final
            chosen = levels == level
            ready = np.zeros(self.num_ops)
            np.maximum.at(ready, dst[chosen], finish[src[chosen]])
            at = self.depth == level
            finish[at] = ready[at] + fastest[at]
        return float(max(finish.max(initial=0.0), fastest.sum() / devices.num_devices))

    @classmethod
    def from_edges(cls, flops, out_bytes, edges, *, name: str = "ops") -> OpGraph:
        """A graph of plain kernels: each reads its producers' outputs and writes `out_bytes`.

        For synthetic graphs and hand-checked examples; `edges` is [[producer, consumer], ...].
        """
        flops = np.asarray(flops, dtype=np.float64)
        out_bytes = np.asarray(out_bytes, dtype=np.float64)
        edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
        if flops.ndim != 1:
            raise HlotuneError(f"flops has shape {flops.shape}, expected one number per op")
        n = len(flops)
        if out_bytes.shape != (n,):
            raise HlotuneError(f"out_bytes has shape {out_bytes.shape}, expected ({n},)")
        if edges.size and (edges.min() < 0 or edges.max() >= n):
            raise HlotuneError(f"edges name ops outside 0..{n - 1}")
        src, dst = edges[:, 0], edges[:, 1]
        return _assemble(
            name=name,
            flops=flops,
            bytes_in=np.bincount(dst, weights=out_bytes[src], minlength=n),
            bytes_out=out_bytes,
            alloc_bytes=out_bytes,
            launches=np.ones(n, dtype=np.int64),
            time_scale=np.ones(n),
            opcode=np.zeros(n, dtype=np.int64),
            hlo_node=np.arange(n, dtype=np.int64),
            edge_src=src,
            edge_dst=dst,
            edge_bytes=out_bytes[src],
        )


def op_graph(graph: HloGraph, calibration: Mapping[str, float] | None = None) -> OpGraph:
    """The op graph of an HLO module; `calibration` maps opcodes to roofline-time multipliers."""
    folded = _FoldedCosts(graph)
    insts = graph.instructions
    called = {c for inst in insts for c in inst.called_computation_ids}
    starts = graph.computation_starts
    ranges = [
        np.arange(starts[k], starts[k + 1])
        for k, comp in enumerate(graph.computations)
        if comp.id not in called
    ]
    nodes = np.concatenate(ranges)
    op_of = np.full(graph.num_nodes, -1, dtype=np.int64)
    op_of[nodes] = np.arange(len(nodes))

    src, dst, edge_bytes = [], [], []
    out_bytes, operands = folded.out_bytes, graph.operands
    for u in nodes.tolist():
        reads_element = insts[u].opcode == "get-tuple-element"
        for v in operands[u]:
            src.append(v)
            dst.append(u)
            edge_bytes.append(out_bytes[u] if reads_element else out_bytes[v])

    opcodes = [insts[u].opcode for u in nodes.tolist()]
    views = np.array([op in _VIEWS for op in opcodes], dtype=bool)
    node_out = np.asarray(out_bytes, dtype=np.float64)[nodes]
    return _assemble(
        name=graph.name,
        flops=np.asarray(folded.flops)[nodes],
        bytes_in=np.asarray(folded.bytes_in)[nodes],
        bytes_out=np.asarray(folded.bytes_out)[nodes],
        alloc_bytes=np.where(views, 0.0, node_out),
        launches=np.asarray(folded.launches, dtype=np.int64)[nodes],
        time_scale=_time_scale(opcodes, calibration or {}),
        opcode=np.array([opcode_id(op) for op in opcodes], dtype=np.int64),
        hlo_node=nodes.astype(np.int64),
        edge_src=op_of[np.asarray(src, dtype=np.int64)],
        edge_dst=op_of[np.asarray(dst, dtype=np.int64)],
        edge_bytes=np.asarray(edge_bytes, dtype=np.float64),
    )


def roofline_seconds(
    flops: np.ndarray,
    nbytes: np.ndarray,
    launches: np.ndarray,
    devices: DeviceModel,
    on: np.ndarray | None = None,
) -> np.ndarray:
    """Seconds of work alone on a device: the slower of its compute and its memory traffic,
    plus a launch overhead per kernel. `on` gives one device per row (result (n,)); without it,
    the result is (n, N), every row on every device."""
    if on is None:
        flops, nbytes, launches = flops[:, None], nbytes[:, None], launches[:, None]
        throughput, bandwidth = devices.flops, devices.mem_bandwidth
    else:
        throughput, bandwidth = devices.flops[on], devices.mem_bandwidth[on]
    busy = np.maximum(flops / throughput, nbytes / bandwidth)
    return busy + launches * devices.launch_overhead_s


class _FoldedCosts:
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
        if op in _NO_KERNEL:
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


def _own_flops(inst, operands: tuple[int, ...], costs: _FoldedCosts) -> int:
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


def _applications(inst, operands: tuple[int, ...], costs: _FoldedCosts) -> int:
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


def _time_scale(opcodes: list[str], calibration: Mapping[str, float]) -> np.ndarray:
    known = set(OPCODE_IDS) | set(opcodes)
    for op, factor in calibration.items():
        if op not in known:
            raise HlotuneError(f"calibration names unknown opcode {op!r}")
        if not (isinstance(factor, (int, float)) and math.isfinite(factor) and factor > 0):
            raise HlotuneError(f"calibration factor of {op!r} must be a positive number")
    return np.array([calibration.get(op, 1.0) for op in opcodes], dtype=np.float64)


def _assemble(**arrays) -> OpGraph:
    """An OpGraph from its per-op and per-edge arrays, with a topological order and depths."""
    n = len(arrays["flops"])
    order, depth = _topological_levels(n, arrays["edge_src"], arrays["edge_dst"])
    return OpGraph(**arrays, order=order, depth=depth)


def _topological_levels(n: int, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Kahn's algorithm one level at a time: (order, depth), depth = longest path from a source."""
    out_start, out_dst = csr(n, src, dst)
    indegree = np.bincount(dst, minlength=n)
    depth = np.zeros(n, dtype=np.int64)
    frontier = np.flatnonzero(indegree == 0)
    levels, level = [], 0
    while frontier.size:
        depth[frontier] = level
        levels.append(frontier)
        targets = out_dst[expand(out_start[frontier], out_start[frontier + 1])]
        np.subtract.at(indegree, targets, 1)
        frontier = np.unique(targets[indegree[targets] == 0])
        level += 1
    order = np.concatenate(levels) if levels else np.zeros(0, dtype=np.int64)
    if len(order) < n:
        raise HlotuneError("the op graph has a cycle")
    return order, depth


def csr(n: int, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Out-adjacency as (start (n + 1,), the other ends sorted by source); edge ids follow
    `np.argsort(src, kind="stable")`."""
    perm = np.argsort(src, kind="stable")
    start = np.searchsorted(src[perm], np.arange(n + 1))
    return start, dst[perm]


def expand(begin: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The indices of the ranges [begin, end) concatenated."""
    counts = end - begin
    offsets = np.repeat(begin - np.cumsum(counts) + counts, counts)
    return np.arange(counts.sum()) + offsets
