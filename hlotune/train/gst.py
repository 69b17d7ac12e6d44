"""Graph Segment Training (GST+EFD, Cao et al., NeurIPS 2023): training on graphs too large
for one backward pass.

Each graph is cut into segments (`hlotune.models.segments`). A training step backpropagates
through `segments_sampled` random segments only; every other segment contributes its embedding
from the historical table, written when the segment was last computed, or computed without
stored activations (torch.no_grad) when the table has none for these configs yet. So memory is
bounded by the sampled segments, whatever the graph's size. Stale table entries are dropped with
probability `dropout` and the rest scaled by 1/(1-dropout) (GST's stale embedding dropout), so
the model does not learn to lean on outdated embeddings. The graph embedding is the sum of its
segment embeddings (and the mean over all nodes), the same readout as the full model: inference
runs on the whole graph and never needs the segments.

Segment embeddings depend on the configs when they join before message passing (layout, early
join), so the table holds one per (graph, segment, config); late join keeps one per segment.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from hlotune.data.sample import GraphSample
from hlotune.errors import HlotuneError
from hlotune.models.compress import collapse_chains
from hlotune.models.gnn import GraphCostModel
from hlotune.models.inputs import GraphInputs
from hlotune.models.segments import PARTITIONS, Segment, partition


@dataclass(frozen=True)
class GSTSettings:
    segment_size: int  # nodes per segment, about
    segments_sampled: int = 1  # segments backpropagated per step
    partition: str = "metis"
    dropout: float = 0.0  # probability of dropping a stale segment embedding

    def __post_init__(self) -> None:
        if self.segment_size < 1:
            raise HlotuneError(f"segment_size must be at least 1 node, got {self.segment_size}")
        if self.segments_sampled < 1:
            raise HlotuneError(f"segments_sampled must be at least 1, got {self.segments_sampled}")
        if self.partition not in PARTITIONS:
            raise HlotuneError(
                f"partition must be one of {', '.join(PARTITIONS)}, got {self.partition!r}"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise HlotuneError(f"dropout (the segment dropout) must be in [0, 1), got {self.dropout}")


class HistoryTable:
    """Segment embeddings of earlier steps: per graph a `(segments, columns, H)` tensor, and
    which entries were written. Columns are config indices, or the single column 0."""

    def __init__(self) -> None:
        self._values: dict[Hashable, Tensor] = {}
        self._written: dict[Hashable, Tensor] = {}

    def read(self, graph: Hashable, segment: int, columns: Tensor) -> Tensor | None:
        """`(len(columns), H)`, or None unless every column was written."""
        written = self._written.get(graph)
        if written is None or not bool(written[segment, columns].all()):
            return None
        return self._values[graph][segment, columns]

    def write(
        self, graph: Hashable, shape: tuple[int, int], segment: int, columns: Tensor, values: Tensor
    ) -> None:
        """Store `values` `(len(columns) or 1, H)`; `shape` is (segments, columns) of the graph."""
        if graph not in self._values:
            self._values[graph] = values.new_zeros((*shape, values.shape[-1]))
            self._written[graph] = torch.zeros(shape, dtype=torch.bool, device=values.device)
        self._values[graph][segment, columns] = values.detach()
        self._written[graph][segment, columns] = True

    def written(self, graph: Hashable) -> int:
        """How many (segment, column) entries of a graph hold an embedding."""
        return int(self._written[graph].sum()) if graph in self._written else 0


class SegmentTraining:
    """The GST forward of training steps; keeps each graph's segments and the history table."""

    def __init__(self, settings: GSTSettings) -> None:
        self.settings = settings
        self.table = HistoryTable()
        self._segments: dict[Hashable, list[Segment]] = {}

    def segments(
        self, key: Hashable, sample: GraphSample, graph: GraphInputs, model: GraphCostModel
    ) -> list[Segment]:
        """The graph's segments, partitioned on first use (as the model sees the graph)."""
        if key not in self._segments:
            arrays = (collapse_chains(sample) if model.config.collapse_chains else sample).graph
            segmentation = partition(
                arrays.edge_index, arrays.num_nodes, self.settings.partition,
                segment_size=self.settings.segment_size, node_splits=arrays.node_splits,
            )
            self._segments[key] = segmentation.segments(graph)
        return self._segments[key]

    def scores(
        self,
        model: GraphCostModel,
        key: Hashable,
        sample: GraphSample,
        graph: GraphInputs,
        configs: Tensor,
        picked: np.ndarray,
        rng: np.random.Generator,
        prior: Tensor | None = None,
    ) -> Tensor:
        """Scores `(C,)` of the configs at `picked`, gradients through the sampled segments
        (`prior`: their analytical costs, for a model that adds them)."""
        segments = self.segments(key, sample, graph, model)
        count = len(segments)
        per_config = not model.late_join
        shape = (count, sample.num_configs if per_config else 1)
        columns = torch.as_tensor(picked if per_config else [0], device=configs.device)
        sampled = set(rng.choice(count, size=min(self.settings.segments_sampled, count),
                                 replace=False).tolist())
        total = 0.0
        for index in sorted(sampled):
            segment = segments[index]
            fresh = model.segment_sum(segment.inputs, segment.configs(configs))
            self.table.write(key, shape, index, columns, fresh)
            total = total + fresh
        stale = [i for i in range(count) if i not in sampled]
        kept = [i for i in stale if rng.random() >= self.settings.dropout]
        if kept:
            history = sum(self._stale(model, key, shape, i, segments[i], configs, columns)
                          for i in kept)
            total = total + history / (1.0 - self.settings.dropout)
        return model.score_segments(total, graph.num_nodes, configs, prior)

    def _stale(
        self,
        model: GraphCostModel,
        key: Hashable,
        shape: tuple[int, int],
        index: int,
        segment: Segment,
        configs: Tensor,
        columns: Tensor,
    ) -> Tensor:
        """The table's embedding, or one computed now without activations and stored."""
        found = self.table.read(key, index, columns)
        if found is None:
            with torch.no_grad():
                found = model.segment_sum(segment.inputs, segment.configs(configs))
            self.table.write(key, shape, index, columns, found)
            found = found.expand(len(columns), -1)
        return found
