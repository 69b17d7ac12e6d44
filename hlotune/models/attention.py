"""Attention across a set: the configs of one graph, or the layout sites of one config.

Ranking asks which config is faster than the others, so a config's score may depend on what
it is compared with: Kaggle's top teams let the embeddings of the configs in a batch attend to
each other. A layout's cost depends on how its sites' layouts fit together (a producer's
output layout against its consumer's), so late-joined sites attend to each other too. A
pre-norm residual block, so with the attention weights near zero each item stays on its own.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class CrossConfigAttention(nn.Module):
    def __init__(self, dim: int, heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.attention = nn.MultiheadAttention(dim, heads, dropout=dropout, batch_first=True)

    def forward(self, items: Tensor) -> Tensor:
        """`(C, dim)` embeddings of one graph's configs, or `(B, L, dim)`: B sets of L items,
        each attending within its set -> the same shape."""
        x = self.norm(items).reshape(-1, *items.shape[-2:])
        mixed, _ = self.attention(x, x, x, need_weights=False)
        return items + mixed.reshape(items.shape)


class ConfigSoftmax(nn.Module):
    """The Kaggle winner's cross-config layer: per feature, a softmax over the config axis (its
    sharpness a learnt temperature) weighs the configs of the batch into one summary, which each
    config then meets (a linear layer over the pair, added to it). At a high temperature the
    summary is the batch's feature-wise maximum, at a low one its mean: a config learns where
    it stands against the others, for the cost of one linear layer."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.log_temperature = nn.Parameter(torch.zeros(()))
        self.mix = nn.Linear(2 * dim, dim)

    def forward(self, items: Tensor) -> Tensor:
        """`(C, dim)` embeddings of one graph's configs -> the same shape."""
        weights = torch.softmax(items * self.log_temperature.exp(), dim=-2)
        summary = (weights * items).sum(dim=-2, keepdim=True).expand_as(items)
        return items + self.mix(torch.cat((items, summary), dim=-1))
