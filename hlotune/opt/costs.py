"""OpGraph: the op graph the simulator runs, with roofline costs derived from HLO shapes.

The ops are the instructions of the top-level computations: the entry, and any computation that
no instruction calls (the copies in a composed module). Their costs, with called computations
folded into their callers, are hlotune.hlo.costs'; per-opcode calibration factors scale an op's
roofline time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from hlotune.errors import HlotuneError
from hlotune.hlo.costs import VIEWS, HloCosts, top_level_nodes
from hlotune.hlo.graph import HloGraph
from hlotune.hlo.opcodes import OPCODE_IDS, opcode_id
from hlotune.opt.device import DeviceModel


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
    folded = HloCosts(graph)
    insts = graph.instructions
    nodes = top_level_nodes(graph)
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
    views = np.array([op in VIEWS for op in opcodes], dtype=bool)
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
