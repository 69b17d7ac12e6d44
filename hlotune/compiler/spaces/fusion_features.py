"""Fusion decisions as per-node config features: the encoding of the fusion collection.

The graph is XLA:CPU's default fused module (kernel_space.program_module), featurized like any
HLO: its fused computations are nodes too, so each kernel and each instruction a split would cut
at has a row of node features. The configurable nodes are the kernels (fusion instructions) that
have fusion choices (fusion_space.fusion_choices), in node order, as TpuGraphs' layout sites are.

A config's row for a kernel is one-hot over DECISIONS columns: keep, merge, split at the
kernel's 1st, 2nd or 3rd offered point (heaviest first, fusion_rewrite.split_points), so a row
of keeps is XLA's own fusion. One column per decision, not a code: the decisions have no order,
and every row sums to 1. The width is fixed at what any kernel can offer (2 +
SPLITS_PER_KERNEL) so that files of different programs share one input layer. Which instruction
the j-th split cuts at differs per kernel: `node_config_choices` names the node each column acts
on (the kernel for keep and merge, the instruction for a split; -1 where not offered), so a
model can read the split point's own features.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hlotune.compiler.xla.fusion_rewrite import SPLITS_PER_KERNEL
from hlotune.compiler.spaces.fusion_space import fusion_choices
from hlotune.compiler.configs.kernel_config import MERGE, SPLIT, KernelConfig
from hlotune.compiler.xla.kernels import kernels_of
from hlotune.errors import HlotuneError
from hlotune.hlo.graph import HloGraph
from hlotune.hlo.sources import from_text

KEEP, MERGE_COLUMN, FIRST_SPLIT = 0, 1, 2
DECISIONS = FIRST_SPLIT + SPLITS_PER_KERNEL


class FusionSites:
    """The kernels of one fused module that have fusion choices, as configurable nodes."""

    def __init__(self, text: str) -> None:
        self.choices = fusion_choices(text)
        self.graph: HloGraph = from_text(text)
        nodes = {inst.name: node for node, inst in enumerate(self.graph.instructions)}
        names = {kernel.key: kernel.name for kernel in kernels_of(text)}
        self.keys = sorted(self.choices, key=lambda key: nodes[names[key]])
        self._columns = {key: _columns(self.choices[key]) for key in self.keys}
        self.node_config_ids = np.array([nodes[names[key]] for key in self.keys], np.int64)
        self.node_config_choices = np.array(
            [_targets(nodes, names[key], self._columns[key]) for key in self.keys], np.int64
        ).reshape(-1, DECISIONS)

    def node_config_feat(self, configs: Sequence[KernelConfig]) -> np.ndarray:
        """(c, nc, DECISIONS): each kernel's decision under each config, one-hot."""
        feat = np.zeros((len(configs), len(self.keys), DECISIONS), np.float32)
        feat[:, :, KEEP] = 1
        row = {key: i for i, key in enumerate(self.keys)}
        for c, config in enumerate(configs):
            for key, decision in config.fusion:
                column = self._columns.get(key, {}).get(decision)
                if column is None:
                    raise HlotuneError(f"kernel {key}: {decision!r} is not one of its fusion choices")
                feat[c, row[key], [KEEP, column]] = 0, 1
        return feat


def _columns(values: tuple[str, ...]) -> dict[str, int]:
    """Decision -> its column: merge, then the splits in the order offered."""
    splits = [value for value in values if value.startswith(SPLIT)]
    return ({MERGE: MERGE_COLUMN} if MERGE in values else {}) | {
        split: FIRST_SPLIT + j for j, split in enumerate(splits)
    }


def _targets(nodes: dict[str, int], kernel: str, columns: dict[str, int]) -> list[int]:
    """The node each column acts on: the kernel for keep and merge, the cut instruction for a
    split; -1 where the kernel does not offer the decision."""
    row = [-1] * DECISIONS
    row[KEEP] = nodes[kernel]
    for decision, column in columns.items():
        row[column] = nodes[kernel] if decision == MERGE else nodes[decision.removeprefix(SPLIT)]
    return row
