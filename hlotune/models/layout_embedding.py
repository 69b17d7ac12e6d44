"""Embedding of one node's layout config: 18 slots, each a dimension index 0-5 or -1.

-1 pads (a tensor with fewer dims, or "compiler default" when all are -1), which is not the
same as dimension 0; feeding the raw numbers to a linear layer would make -1 "a bit less than
0". Each (slot, value) pair gets its own learned vector instead, and a node's embedding is the
sum over its 18 slots (the same as a linear layer on a one-hot of 7 values per slot).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from hlotune.models.config import LAYOUT_CONFIG_DIM

VALUES = 7  # -1, 0, 1, ..., 5


class LayoutEmbedding(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.table = nn.Embedding(LAYOUT_CONFIG_DIM * VALUES, dim)
        self.register_buffer(
            "offsets", torch.arange(LAYOUT_CONFIG_DIM) * VALUES + 1, persistent=False
        )

    def forward(self, layouts: Tensor) -> Tensor:
        """`(..., 18)` layout values -> `(..., dim)`."""
        return self.table(layouts.long() + self.offsets).sum(dim=-2)
