"""The graph layers a cost model can stack (`ModelSettings.conv`), all passing messages both ways.

- `sage`: the project's bidirectional GraphSAGE (`sage.py`), the shipped models' layer. Its
  messages are sums, so it alone takes precomputed messages from pruned-away nodes.
- `gat`: PyG's GATv2Conv per edge direction, so a node weighs its operands (and its users)
  by attention instead of summing them all alike.
- `gin`: PyG's GINConv per direction: an MLP over (1 + eps) e_i + sum of neighbours, as
  expressive as the Weisfeiler-Lehman test for telling graphs apart.
- `gps`: PyG's GPSConv (GraphGPS): the bidirectional SAGE layer plus global self-attention over
  all nodes of the graph, for effects that travel further than a few hops. Attention costs
  n^2 per graph and config: for graphs of a few thousand nodes.

Each takes node states `(..., n, dim)` whose leading dimensions (configs) share one edge list,
and keeps SAGE's `forward(x, edge_index, outside=None)`. PyG's own convs read one `(n, dim)`
graph, so the configs become disjoint copies of it, one big graph, as PyG batches graphs.
"""

from __future__ import annotations

import math
from typing import Callable

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from hlotune.models.sage import BidirectionalSAGEConv


class DirectedPair(nn.Module):
    """One PyG conv per edge direction, combined with the node's own state as SAGE does."""

    def __init__(self, dim: int, make: Callable[[], nn.Module]) -> None:
        super().__init__()
        self.from_operands = make()
        self.from_users = make()
        self.update = nn.Sequential(nn.Linear(3 * dim, dim), nn.ReLU())

    def forward(self, x: Tensor, edge_index: Tensor, outside: None = None) -> Tensor:
        flat, edges, _ = disjoint_copies(x, edge_index)
        # PyG reads row 0 as the sender: operands send along the flipped [user, operand] rows.
        operands, users = self.from_operands(flat, edges.flip(0)), self.from_users(flat, edges)
        out = F.normalize(self.update(torch.cat((flat, operands, users), dim=-1)), dim=-1)
        return out.reshape(x.shape)


class GPSLayer(nn.Module):
    """GraphGPS: local bidirectional SAGE messages plus attention across each copy's nodes."""

    def __init__(self, dim: int, heads: int) -> None:
        from torch_geometric.nn import GPSConv

        super().__init__()
        self.gps = GPSConv(dim, BidirectionalSAGEConv(dim), heads=heads)

    def forward(self, x: Tensor, edge_index: Tensor, outside: None = None) -> Tensor:
        flat, edges, batch = disjoint_copies(x, edge_index)
        return self.gps(flat, edges, batch).reshape(x.shape)


def disjoint_copies(x: Tensor, edge_index: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """`(..., n, dim)` states over one edge list -> `(b * n, dim)` rows of b disjoint copies of
    the graph, their `(2, b * m)` edges and `(b * n,)` copy ids (PyG's `batch`)."""
    n, copies = x.shape[-2], math.prod(x.shape[:-2])
    offsets = torch.arange(copies, device=x.device) * n
    edges = (edge_index.unsqueeze(1) + offsets.view(1, -1, 1)).reshape(2, -1)
    batch = torch.arange(copies, device=x.device).repeat_interleave(n)
    return x.reshape(-1, x.shape[-1]), edges, batch


def make_conv(kind: str, dim: int, heads: int) -> nn.Module:
    """A layer of kind `sage`, `gat`, `gin` or `gps` (ModelSettings has checked the name). PyG
    is imported for the last three only (sage.py says why)."""
    if kind == "sage":
        return BidirectionalSAGEConv(dim)
    if kind == "gps":
        return GPSLayer(dim, heads)
    from torch_geometric.nn import GATv2Conv, GINConv

    if kind == "gat":
        return DirectedPair(dim, lambda: GATv2Conv(dim, dim // heads, heads, add_self_loops=False))
    return DirectedPair(dim, lambda: GINConv(_mlp(dim), train_eps=True))


def _mlp(dim: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))
