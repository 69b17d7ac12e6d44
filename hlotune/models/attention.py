"""Self-attention across a set: the configs of one graph, or the layout sites of one config.

Ranking asks which config is faster than the others, so a config's score may depend on what
it is compared with: Kaggle's top teams let the embeddings of the configs in a batch attend to
each other. A layout's cost depends on how its sites' layouts fit together (a producer's
output layout against its consumer's), so late-joined sites attend to each other too. A
pre-norm residual block, so with the attention weights near zero each item stays on its own.
"""

from __future__ import annotations

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
