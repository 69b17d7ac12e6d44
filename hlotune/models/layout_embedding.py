"""Embedding of one node's layout config: 18 slots, each a dimension index 0-5 or -1.

-1 pads (a tensor with fewer dims, or "compiler default" when all are -1), which is not the
same as dimension 0; feeding the raw numbers to a linear layer would make -1 "a bit less than
0". Each (slot, value) pair gets its own learned vector instead, and a node's embedding is the
sum over its 18 slots (the same as a linear layer on a one-hot of 7 values per slot).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from hlotune.models.settings import LAYOUT_CONFIG_DIM

VALUES = 7  # -1, 0, 1, ..., 5


class LayoutEmbedding(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.table = nn.Embedding(LAYOUT_CONFIG_DIM * VALUES, dim)
        self.register_buffer(
            "offsets", torch.arange(LAYOUT_CONFIG_DIM) * VALUES + 1, persistent=False
        )

    def forward(self, layouts: Tensor, table: Tensor | None = None) -> Tensor:
        """`(..., 18)` layout values -> `(..., dim)`. The sum is taken as the rows are looked up
        (embedding_bag): materialising the 18 vectors first would move 18x the memory, which is
        what ranking thousands of configs of a graph with dozens of sites spends its time on.
        `table` replaces the learnt one (a projection of it, see `GraphCostModel.site_sum`)."""
        rows = (layouts.long() + self.offsets).reshape(-1, LAYOUT_CONFIG_DIM)
        weight = self.table.weight if table is None else table
        return F.embedding_bag(rows, weight, mode="sum").reshape(*layouts.shape[:-1], weight.shape[1])
