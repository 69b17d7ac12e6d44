"""Self-attention across the configs of one graph, before they are scored.

Ranking asks which config is faster than the others, so a config's score may depend on what
it is compared with: Kaggle's top teams let the embeddings of the configs in a batch attend to
each other. A pre-norm residual block, so with the attention weights near zero each config is
scored on its own.
"""

from __future__ import annotations

from torch import Tensor, nn


class CrossConfigAttention(nn.Module):
    def __init__(self, dim: int, heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.attention = nn.MultiheadAttention(dim, heads, dropout=dropout, batch_first=True)

    def forward(self, configs: Tensor) -> Tensor:
        """`(C, dim)` embeddings of one graph's configs -> `(C, dim)`."""
        x = self.norm(configs).unsqueeze(0)
        mixed, _ = self.attention(x, x, x, need_weights=False)
        return configs + mixed.squeeze(0)
