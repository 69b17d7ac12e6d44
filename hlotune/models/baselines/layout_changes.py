"""How far each layout config moves tensors away from row-major, the compiler's default layout.

XLA's default layout is row-major: minor-to-major `(rank-1, ..., 0)`. Any other permutation
makes the compiler insert a physical copy (a transpose) of the tensor or run its consumer with
strided accesses, which costs about the tensor's size, more when the minor-most, contiguous
dimension moves. Both baselines read configs this way: the analytical one sums the costs, the
GBDT one aggregates them into features.

node_config_feat holds, per configurable node, the layouts of three tensors: its output (slots
0-5), its input (6-11) and its kernel (12-17), -1 in every position left to the compiler
(TpuGraphs often sets only a prefix). The output is the node itself; input and kernel are its
first and second operands in edge order. Edges are sorted, so that is operand order only where
operands come in id order, as they do in the TpuGraphs fixtures; hlotune's own layout
collection sets outputs only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hlotune.data.sample import GraphSample, LayoutConfigArrays
from hlotune.errors import HlotuneError

TENSORS = ("output", "input", "kernel")
SLOTS = 6  # layout positions per tensor
SHAPE_DIMS = slice(21, 27)  # node_feat: the first six output dimensions, 0-padded
SHAPE_PRODUCT = 28  # node_feat: elements of the output (product of all dimensions)

# Cost per element of a moved tensor: a new minor-most dimension turns every access strided;
# moving only major dimensions still copies, but in contiguous runs.
MINOR_MOVED, MAJOR_MOVED = 1.0, 0.5


@dataclass
class SiteTensors:
    """The (output, input, kernel) tensors of each configurable node; -1 where there is none."""

    nodes: np.ndarray  # (nc, 3) int64 node ids
    ranks: np.ndarray  # (nc, 3) int64
    sizes: np.ndarray  # (nc, 3) float64 elements, 0 where there is no tensor


def site_tensors(sample: GraphSample) -> SiteTensors:
    configs = _layout_configs(sample)
    graph = sample.graph
    sites = configs.node_config_ids.astype(np.int64)
    users, operands = graph.edge_index[:, 0], graph.edge_index[:, 1]
    order = np.argsort(users, kind="stable")
    first = np.searchsorted(users[order], sites, side="left")
    count = np.searchsorted(users[order], sites, side="right") - first
    nodes = np.full((len(sites), len(TENSORS)), -1, np.int64)
    nodes[:, 0] = sites
    for operand in (0, 1):  # input, kernel
        has = count > operand
        nodes[has, operand + 1] = operands[order[first[has] + operand]]
    exists = nodes >= 0
    feat = graph.node_feat[np.where(exists, nodes, 0)]
    ranks = np.where(exists, (feat[..., SHAPE_DIMS] > 0).sum(-1), 0)
    sizes = np.where(exists, feat[..., SHAPE_PRODUCT].astype(np.float64), 0.0)
    return SiteTensors(nodes, ranks, sizes)


def change_levels(node_config_feat: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """(c, nc, 3): MINOR_MOVED, MAJOR_MOVED or 0 (row-major or unset) per config and tensor.

    Only the set positions are compared. A rank below what the layout names (a 0 dimension or
    a tensor the node features do not describe) is raised to fit the layout.
    """
    layouts = node_config_feat.reshape(*node_config_feat.shape[:2], len(TENSORS), SLOTS)
    layouts = layouts.astype(np.int8)  # values -1..5: int8 keeps the (c, nc, 3, 6) arrays small
    rank = np.maximum(ranks.astype(np.int8), layouts.max(-1) + 1)
    row_major = rank[..., None] - 1 - np.arange(SLOTS, dtype=np.int8)
    moved = (layouts >= 0) & (layouts != row_major)
    return np.where(moved[..., 0], MINOR_MOVED, np.where(moved.any(-1), MAJOR_MOVED, 0.0))


def transpose_costs(sample: GraphSample) -> np.ndarray:
    """(c, nc, 3) elements moved per config, configurable node and tensor (level x size)."""
    tensors = site_tensors(sample)
    return change_levels(sample.configs.node_config_feat, tensors.ranks) * tensors.sizes


def _layout_configs(sample: GraphSample) -> LayoutConfigArrays:
    if not isinstance(sample.configs, LayoutConfigArrays):
        raise HlotuneError(f"{sample.name or 'graph'}: not a layout graph")
    return sample.configs
