"""Instance normalisation over the nodes of a graph, for the graph layers (`ModelSettings.instance_norm`).

Each feature is standardised over the graph's nodes, then scaled and shifted by learnt weights.
A graph of a few hundred nodes and one of a hundred thousand then hand the head states on one
scale, which the Kaggle "Fast or Slow" winners found to help. Node states may carry leading
config dimensions, `(..., n, dim)`: each config's copy of the graph is normalised on its own.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class GraphInstanceNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        mean = x.mean(dim=-2, keepdim=True)
        var = x.var(dim=-2, unbiased=False, keepdim=True)
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias
