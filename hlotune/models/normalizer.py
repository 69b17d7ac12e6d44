"""Feature scaling whose statistics travel inside the model's weights file.

TpuGraphs features are raw counts and products that reach 1e30, so each column is first
compressed with `sign(x) * log1p(|x|)` and then standardised with the mean and std of the
training graphs. Keeping mean and std as module buffers means a saved model scales new data
exactly as in training, with nothing else to ship. The statistics are fitted in one streaming
pass (a running merge of per-graph moments), as the training set does not fit in memory.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn

from hlotune.data.sample import FlagConfigArrays, GraphSample, TileConfigArrays

# Features are float32 in the files: clamping to its range keeps an overflowed inf finite.
_FLOAT32_MAX = float(np.finfo(np.float32).max)
# Columns whose std is below this are treated as constant: scaled by 1, so they become 0.
_MIN_STD = 1e-6


def sign_log(x: Tensor) -> Tensor:
    x = x.clamp(-_FLOAT32_MAX, _FLOAT32_MAX)
    return torch.sign(x) * torch.log1p(torch.abs(x))


class RunningMoments:
    """Mean and std per column of sign-log scaled rows, merged batch by batch (Chan et al.)."""

    def __init__(self, width: int) -> None:
        self.count = 0
        self.mean = np.zeros(width)
        self._m2 = np.zeros(width)  # sum of squared deviations from the mean

    def add(self, rows: np.ndarray) -> None:
        values = np.clip(np.asarray(rows, dtype=np.float64), -_FLOAT32_MAX, _FLOAT32_MAX)
        values = np.sign(values) * np.log1p(np.abs(values))
        count = values.shape[0]
        if count == 0:
            return
        mean = values.mean(axis=0)
        m2 = ((values - mean) ** 2).sum(axis=0)
        total = self.count + count
        delta = mean - self.mean
        self.mean = self.mean + delta * count / total
        self._m2 = self._m2 + m2 + delta**2 * self.count * count / total
        self.count = total

    @property
    def std(self) -> np.ndarray:
        std = np.sqrt(self._m2 / max(self.count, 1))
        return np.where(std < _MIN_STD, 1.0, std)


@dataclass
class FeatureStats:
    """Moments of the node features and of the graph-level config features (None for layout)."""

    node: RunningMoments
    config: RunningMoments | None
    graphs: int = 0


def fit_feature_stats(samples: Iterable[GraphSample]) -> FeatureStats:
    """One pass over `samples`, holding one graph at a time; each node and config is one row."""
    stats: FeatureStats | None = None
    for sample in samples:
        configs = sample.configs
        graph_level = isinstance(configs, (TileConfigArrays, FlagConfigArrays))
        if stats is None:
            width = configs.config_feat.shape[1] if graph_level else 0
            stats = FeatureStats(
                RunningMoments(sample.graph.node_feat.shape[1]),
                RunningMoments(width) if graph_level else None,
            )
        stats.node.add(sample.graph.node_feat)
        if graph_level:
            stats.config.add(configs.config_feat)
        stats.graphs += 1
    if stats is None:
        raise ValueError("no graphs to fit feature statistics on")
    return stats


class SignLogNormalizer(nn.Module):
    """`(sign_log(x) - mean) / std` per column; identity scaling until `set_stats` is called."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(width))
        self.register_buffer("std", torch.ones(width))

    def set_stats(self, moments: RunningMoments) -> None:
        if moments.mean.shape != self.mean.shape:
            raise ValueError(f"stats of {moments.mean.shape[0]} columns for {self.mean.shape[0]}")
        self.mean.copy_(torch.from_numpy(moments.mean))
        self.std.copy_(torch.from_numpy(moments.std))

    def forward(self, x: Tensor) -> Tensor:
        return (sign_log(x) - self.mean) / self.std
