"""Attention along a graph's topological order, segment by segment, for GO's policy
(policy.py): a full attention over every pair of ops would cost O(n^2).

- `SegmentAttention` ("summary"): ops attend within their segment, and the segments' means
  attend to each other.
- `RecurrentAttention` ("recurrent", GO's in full): Transformer-XL-style recurrence, a segment
  attending to itself, its predecessor's states and GRU memories carried both ways.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class SegmentAttention(nn.Module):
    """Attention along the topological order: within segments of `segment` ops, then among
    the segments' mean embeddings; each op gets its own segment's output plus its segment's
    view of the others."""

    def __init__(self, dim: int, heads: int, segment: int):
        super().__init__()
        self.segment = segment
        self.within = _block(dim, heads)
        self.across = _block(dim, heads)

    def forward(self, h: Tensor, order: Tensor) -> Tensor:
        n, dim = h.shape
        x, valid = _segmented(h, order, self.segment)
        padded = x.shape[0] * self.segment
        local = self.within(x, src_key_padding_mask=~valid)
        summary = _segment_means(local, valid)
        context = self.across(summary.unsqueeze(0)).squeeze(0)
        out = (local + context.unsqueeze(1)).reshape(padded, dim)[:n]
        return torch.empty_like(out).index_copy_(0, order, out)


def _segmented(h: Tensor, order: Tensor, segment: int) -> tuple[Tensor, Tensor]:
    """`h` in `order`, cut into segments of `segment` ops (the last one zero-padded), and
    which places hold an op: (segments, segment, dim) and (segments, segment)."""
    n, dim = h.shape
    segments = -(-n // segment)
    padded = segments * segment
    x = torch.cat([h[order], h.new_zeros(padded - n, dim)]).view(segments, segment, dim)
    return x, (torch.arange(padded) < n).view(segments, segment)


def _segment_means(x: Tensor, valid: Tensor) -> Tensor:
    """Each segment's mean over its ops, padding left out: (segments, dim)."""
    weight = valid.unsqueeze(-1).to(x.dtype)
    return (x * weight).sum(1) / weight.sum(1)


class RecurrentAttention(nn.Module):
    """Transformer-XL-style attention along the topological order (GO's "segment-level
    recurrence"): the order is cut into segments, and each segment's ops attend to their own
    segment, to the previous segment's states (the memory, gradient stopped as in
    Transformer-XL) and to two carried memories, a GRU run forward and one run backward over
    the segments' mean embeddings, which bring what came before and after the neighbours.
    Segments are computed in parallel (each reads its predecessor's input states), so a graph
    of 30k ops costs about n * 3 * segment + a GRU over n / segment steps."""

    def __init__(self, dim: int, heads: int, segment: int):
        super().__init__()
        self.segment = segment
        self.carry = nn.GRU(dim, dim, batch_first=True, bidirectional=True)
        self.norm = nn.LayerNorm(dim)
        self.attend = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.feed = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 2 * dim), nn.ReLU(),
                                  nn.Linear(2 * dim, dim))

    def forward(self, h: Tensor, order: Tensor) -> Tensor:
        n, dim = h.shape
        x, valid = _segmented(h, order, self.segment)
        segments, padded = x.shape[0], x.shape[0] * self.segment
        x = self.norm(x)
        summary = _segment_means(x, valid)
        carried = _carried_memories(self.carry(summary.unsqueeze(0))[0].squeeze(0))
        memory = torch.cat([x.new_zeros(1, self.segment, dim), x[:-1]]).detach()
        memory_valid = torch.cat([valid.new_zeros(1, self.segment), valid[:-1]])
        keys = torch.cat([memory, carried, x], dim=1)
        key_valid = torch.cat([memory_valid, valid.new_ones(segments, 2), valid], dim=1)
        attended = self.attend(x, keys, keys, key_padding_mask=~key_valid, need_weights=False)[0]
        out = x + attended
        out = (out + self.feed(out)).reshape(padded, dim)[:n]
        return h + torch.empty_like(out).index_copy_(0, order, out)


def _carried_memories(states: Tensor) -> Tensor:
    """(segments, 2, dim) from a bidirectional GRU's (segments, 2 * dim) states: for each
    segment, the forward state after the segments before it and the backward state after
    those behind it (zeros at the ends)."""
    forward, backward = states.chunk(2, dim=-1)
    zero = states.new_zeros(1, forward.shape[1])
    return torch.stack([torch.cat([zero, forward[:-1]]), torch.cat([backward[1:], zero])], dim=1)


def _block(dim: int, heads: int) -> nn.TransformerEncoderLayer:
    return nn.TransformerEncoderLayer(dim, heads, 2 * dim, dropout=0.0, batch_first=True,
                                      norm_first=True)
