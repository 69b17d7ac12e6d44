"""Partitioning a large graph into segments for Graph Segment Training (GST, Cao et al. 2023).

A segment is a set of nodes with the edges among them; edges that cross segments are cut, as
in GST, so a segment's embedding depends on its own nodes only and can be computed, stored
and reused on its own. Three ways to choose the segments, each aiming at `segment_size` nodes:

    metis        METIS (pymetis) on the undirected graph: few cut edges, any node order
    node_splits  TpuGraphs' computation groups packed in order, larger groups cut in chunks
    topological  consecutive chunks of a topological order (operands before users)

Inference never needs a segmentation: the model then runs on the whole graph.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from hlotune.errors import HlotuneError
from hlotune.models.inputs import GraphInputs

PARTITIONS = ("metis", "node_splits", "topological")


@dataclass
class Segment:
    """One segment as inputs of its own, plus where its layout configs come from.

    `inputs.node_config_ids` are the segment's configurable nodes (local positions) and
    `config_slots` their columns in the graph's `(C, nc, 18)` layout configs.
    """

    inputs: GraphInputs
    nodes: Tensor  # (k,) ids in the whole graph, ascending
    config_slots: Tensor | None = None  # (nc_s,) layout only

    @property
    def num_nodes(self) -> int:
        return self.inputs.num_nodes

    def configs(self, configs: Tensor) -> Tensor:
        """The part of a graph's config batch this segment reads."""
        return configs if self.config_slots is None else configs[:, self.config_slots]


@dataclass
class Segmentation:
    """A graph cut into segments; `assignment[i]` is the segment of node i."""

    assignment: np.ndarray  # (n,) int64, segments numbered 0..num_segments-1, none empty
    method: str

    @property
    def num_segments(self) -> int:
        return int(self.assignment.max()) + 1 if self.assignment.size else 0

    def segments(self, graph: GraphInputs) -> list[Segment]:
        """Each segment's inputs, edges crossing segments cut."""
        assignment = torch.as_tensor(self.assignment, device=graph.node_opcode.device)
        users, operands = graph.edge_index
        edges = graph.edge_index[:, assignment[users] == assignment[operands]]
        count, ids = self.num_segments, graph.node_config_ids
        node_groups, position = _groups(assignment, count)
        edge_groups, _ = _groups(assignment[edges[0]], count)
        slot_groups = None if ids is None else _groups(assignment[ids], count)[0]
        result = []
        for segment, nodes in enumerate(node_groups):
            slots = None if slot_groups is None else slot_groups[segment]
            inputs = GraphInputs(
                node_opcode=graph.node_opcode[nodes],
                node_feat=graph.node_feat[nodes],
                edge_index=position[edges[:, edge_groups[segment]]],
                node_config_ids=None if slots is None else position[ids[slots]],
            )
            result.append(Segment(inputs, nodes, slots))
        return result


def _groups(keys: Tensor, count: int) -> tuple[tuple[Tensor, ...], Tensor]:
    """The indices holding each key 0..count-1 (ascending), and each index's rank among them."""
    order = torch.argsort(keys, stable=True)
    sizes = torch.bincount(keys, minlength=count)
    rank = torch.empty_like(order)
    rank[order] = torch.arange(order.numel(), device=keys.device)
    starts = torch.cumsum(sizes, 0) - sizes
    return torch.split(order, sizes.tolist()), rank - starts[keys]


def partition(
    edge_index: np.ndarray,
    num_nodes: int,
    method: str,
    *,
    segment_size: int | None = None,
    num_segments: int | None = None,
    node_splits: np.ndarray | None = None,
) -> Segmentation:
    """Segments of about `segment_size` nodes, or `num_segments` of them.

    `edge_index` is TpuGraphs' `(m, 2)` [user, operand]. HlotuneError for a bad request.
    """
    count = _segment_count(num_nodes, segment_size, num_segments)
    if method == "metis":
        assignment = _metis(edge_index, num_nodes, count)
    elif method == "node_splits":
        if node_splits is None:
            raise HlotuneError("partition node_splits: the graph has no node_splits")
        assignment = _chunks(np.arange(num_nodes), count, np.asarray(node_splits).ravel())
    elif method == "topological":
        assignment = _chunks(_topological_order(edge_index, num_nodes), count)
    else:
        raise HlotuneError(f"partition must be one of {', '.join(PARTITIONS)}, got {method!r}")
    return Segmentation(_renumbered(assignment), method)


def _segment_count(num_nodes: int, segment_size: int | None, num_segments: int | None) -> int:
    if (segment_size is None) == (num_segments is None):
        raise HlotuneError("give either a segment size or a number of segments")
    if segment_size is not None:
        if segment_size < 1:
            raise HlotuneError(f"segment size must be at least 1 node, got {segment_size}")
        return max(1, math.ceil(num_nodes / segment_size))
    if num_segments < 1:
        raise HlotuneError(f"number of segments must be at least 1, got {num_segments}")
    if num_segments > max(num_nodes, 1):
        raise HlotuneError(f"{num_segments} segments for a graph of {num_nodes} nodes")
    return num_segments


def _metis(edge_index: np.ndarray, num_nodes: int, count: int) -> np.ndarray:
    """METIS parts of the undirected simple graph (self loops and duplicate edges dropped)."""
    if count == 1:
        return np.zeros(num_nodes, np.int64)
    import pymetis

    pairs = edge_index[edge_index[:, 0] != edge_index[:, 1]]
    both = np.unique(np.concatenate((pairs, pairs[:, ::-1])), axis=0)
    xadj = np.zeros(num_nodes + 1, np.int64)
    np.cumsum(np.bincount(both[:, 0], minlength=num_nodes), out=xadj[1:])
    _, parts = pymetis.part_graph(count, pymetis.CSRAdjacency(xadj, both[:, 1].copy()))
    return np.asarray(parts, np.int64)


def _chunks(order: np.ndarray, count: int, bounds: np.ndarray | None = None) -> np.ndarray:
    """Consecutive runs of `order` of about n/count nodes; with group `bounds` (node_splits), a
    run ends at a group boundary when one lies in its last half, so small groups stay whole."""
    n = order.size
    size = math.ceil(n / count) if n else 1
    assignment = np.empty(n, np.int64)
    start, segment = 0, 0
    while start < n:
        end = min(start + size, n)
        if bounds is not None and end < n:
            inside = bounds[(bounds > start + size // 2) & (bounds <= end)]
            end = int(inside[-1]) if inside.size else end
        assignment[order[start:end]] = segment
        start, segment = end, segment + 1
    return assignment


def _topological_order(edge_index: np.ndarray, num_nodes: int) -> np.ndarray:
    """Kahn's order, operands first; nodes on a cycle (not in valid HLO) go last by id."""
    users, operands = edge_index[:, 0], edge_index[:, 1]
    indegree = np.bincount(users, minlength=num_nodes)
    by_operand = np.argsort(operands, kind="stable")
    starts = np.searchsorted(operands[by_operand], np.arange(num_nodes + 1))
    consumers = users[by_operand].tolist()
    remaining = indegree.tolist()
    queue = deque(np.flatnonzero(indegree == 0).tolist())
    order = []
    while queue:
        node = queue.popleft()
        order.append(node)
        for user in consumers[starts[node] : starts[node + 1]]:
            remaining[user] -= 1
            if remaining[user] == 0:
                queue.append(user)
    seen = np.zeros(num_nodes, bool)
    seen[order] = True
    return np.concatenate((np.asarray(order, np.int64), np.flatnonzero(~seen)))


def _renumbered(assignment: np.ndarray) -> np.ndarray:
    """Segment ids 0..k-1 in order of first node, empty parts (METIS may leave some) dropped."""
    _, first, inverse = np.unique(assignment, return_index=True, return_inverse=True)
    rank = np.argsort(np.argsort(first))
    return rank[inverse].astype(np.int64)
