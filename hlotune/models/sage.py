"""GraphSAGE over both edge directions, as in the XTAT/TpuGraphs baseline.

    e_i <- l2norm(f3(concat(e_i, sum_{j operand of i} f2_in(e_j), sum_{j user of i} f2_out(e_j))))

A node's cost depends on what feeds it (its operands) and on what it feeds (its users, e.g. a
layout a consumer must accept), so both directions pass messages, each with its own f2. The
sum (not mean) keeps fan-in visible; the l2 norm keeps embeddings bounded however large it is.

Node tensors may carry leading batch dimensions, `(..., n, dim)` (PyG's `node_dim=-2`): the
configs of one graph share its edges, so they are propagated together without copying the
edge list. Sums of messages can be split and added back, which is what lets a pruned subgraph
take the messages of its dropped surroundings precomputed (`outside`, see `prune.py`).

The sum is one `index_add` rather than PyG's MessagePassing with `aggr="sum"`, which computes
the same: importing PyG costs about 3 s a process (it loads torch's compiler stack), and
every `hlotune tune` that ranks by the shipped models would pay it for this one sum. PyG
stays the home of the other layers (`convs.py`) and of training's DropEdge.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn import functional as F


class NeighbourSum(nn.Module):
    """Sum over senders of their rows of `x`, at each receiver; no weights of its own."""

    def forward(self, x: Tensor, edge_index: Tensor, num_nodes: int) -> Tensor:
        """`(..., num_nodes, dim)`; `edge_index` row 0 sends, row 1 receives."""
        senders, receivers = edge_index
        summed = x.new_zeros((*x.shape[:-2], num_nodes, x.shape[-1]))
        return summed.index_add(-2, receivers, x.index_select(-2, senders))


class BidirectionalSAGEConv(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.from_operands = nn.Sequential(nn.Linear(dim, dim), nn.ReLU())
        self.from_users = nn.Sequential(nn.Linear(dim, dim), nn.ReLU())
        self.update = nn.Sequential(nn.Linear(3 * dim, dim), nn.ReLU())
        self.neighbour_sum = NeighbourSum()

    def summed_messages(self, x: Tensor, edge_index: Tensor, num_nodes: int) -> Tensor:
        """Summed messages `(..., num_nodes, 2 * dim)`: from operands, then from users.

        `edge_index[:, e] = [u, v]`: node u consumes v, so v's message reaches u as an operand
        and u's reaches v as a user. `x` may hold more nodes than `num_nodes` (messages from
        outside a subgraph).
        """
        from_operands = self.neighbour_sum(self.from_operands(x), edge_index.flip(0), num_nodes)
        from_users = self.neighbour_sum(self.from_users(x), edge_index, num_nodes)
        return torch.cat((from_operands, from_users), dim=-1)

    def forward(self, x: Tensor, edge_index: Tensor, outside: Tensor | None = None) -> Tensor:
        """One layer over the nodes of `x`; `outside` adds messages already summed from
        nodes not in `x` (the frozen surroundings of a pruned subgraph)."""
        messages = self.summed_messages(x, edge_index, x.shape[-2])
        if outside is not None:
            messages = messages + outside
        return F.normalize(self.update(torch.cat((x, messages), dim=-1)), dim=-1)
