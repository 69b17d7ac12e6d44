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
from torch.nn import functional as F


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

    def summed(self, distinct: Tensor, index: Tensor) -> Tensor:
        """`forward(distinct[index]).sum(dim=-2)`, `(B, dim)` for B sets of L items given as rows
        `index` `(B, L)` of `distinct` `(U, dim)`, without most of the per-item work: the norm
        and the input projections run once per distinct item, and the output projection once per
        set (it is affine, so it commutes with the sum); only the attention itself runs per set.
        Without attention dropout (inference, or a model trained without it)."""
        attention = self.attention
        projected = F.linear(self.norm(distinct), attention.in_proj_weight, attention.in_proj_bias)
        heads = attention.num_heads

        def per_set(rows: Tensor) -> Tensor:  # (U, dim) -> (B, heads, L, dim / heads)
            return rows[index].unflatten(-1, (heads, -1)).transpose(-3, -2)

        query, key, value = (per_set(rows) for rows in projected.chunk(3, dim=-1))
        mixed = F.scaled_dot_product_attention(query, key, value)
        total = mixed.sum(dim=-2).flatten(-2)  # over the set; heads side by side, as MHA joins them
        out = attention.out_proj
        mixed_sum = F.linear(total, out.weight) + index.shape[-1] * out.bias
        return F.embedding_bag(index, distinct, mode="sum") + mixed_sum


class ConfigSoftmax(nn.Module):
    """The Kaggle winner's cross-config layer: per feature, a softmax over the config axis (its
    sharpness a learnt inverse temperature) weighs the configs of the batch into one summary,
    which each config then meets (a linear layer over the pair, added to it). Sharp, the summary
    is the batch's feature-wise maximum; flat, its mean: a config learns where it stands against
    the others, for the cost of one linear layer."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.log_inverse_temperature = nn.Parameter(torch.zeros(()))
        self.mix = nn.Linear(2 * dim, dim)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs) -> None:
        """Checkpoints written before the rename (the shipped ones among them) named the
        parameter `log_temperature`."""
        old = prefix + "log_temperature"
        if old in state_dict:
            state_dict[prefix + "log_inverse_temperature"] = state_dict.pop(old)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def forward(self, items: Tensor) -> Tensor:
        """`(C, dim)` embeddings of one graph's configs -> the same shape."""
        weights = torch.softmax(items * self.log_inverse_temperature.exp(), dim=-2)
        summary = (weights * items).sum(dim=-2, keepdim=True).expand_as(items)
        return items + self.mix(torch.cat((items, summary), dim=-1))
