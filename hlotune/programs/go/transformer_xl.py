"""A Transformer-XL-like language model: the sequence runs segment by segment, and each layer
attends over its own segment and a memory of the previous segment's inputs to that layer (no
gradient through the memory), as in Dai et al. 2019 (without relative positions). Segments are
unrolled, so the graph grows with the number of segments."""

import jax
import jax.numpy as jnp

from hlotune.programs.zoo.base import Workload
from hlotune.programs.zoo.layers import (
    HEAD_DIM,
    block_init,
    dense,
    dense_init,
    layer_norm,
    softmax_cross_entropy,
)


def init(key, *, batch: int, segments: int, length: int, dim: int, layers: int, vocab: int):
    k_embed, k_head, k_tokens, *keys = jax.random.split(key, layers + 3)
    params = {
        "embed": jax.random.normal(k_embed, (vocab, dim)) * 0.1,
        "layers": [block_init(k, dim) for k in keys],
        "head": dense_init(k_head, dim, vocab),
    }
    tokens = jax.random.randint(k_tokens, (batch, segments * length + 1), 0, vocab, jnp.int32)
    return params, tokens[:, :-1].reshape(batch, segments, length), tokens[:, 1:]


def _attend(p, x, memory):
    """Multi-head attention of x's positions over [memory, x], causal within the segment."""
    b, s, d = x.shape
    heads = d // HEAD_DIM
    split = lambda t: t.reshape(b, -1, heads, HEAD_DIM).transpose(0, 2, 1, 3)
    context = jnp.concatenate([memory, x], axis=1)
    q = split(dense(p["qkv"], x)[..., :d])
    k, v = map(split, jnp.split(dense(p["qkv"], context)[..., d:], 2, axis=-1))
    scores = q @ k.transpose(0, 1, 3, 2) / jnp.sqrt(HEAD_DIM)
    m = memory.shape[1]
    mask = jnp.arange(m + s)[None, :] <= jnp.arange(s)[:, None] + m
    weights = jax.nn.softmax(jnp.where(mask, scores, jnp.finfo(scores.dtype).min), axis=-1)
    return dense(p["out"], (weights @ v).transpose(0, 2, 1, 3).reshape(b, s, d))


def _block(p, x, memory):
    x = x + _attend(p, layer_norm(x), layer_norm(memory))
    return x + dense(p["down"], jax.nn.gelu(dense(p["up"], layer_norm(x))))


def apply(params, tokens):
    x = params["embed"][tokens]  # (batch, segments, length, dim)
    memories = [jnp.zeros_like(x[:, 0])] * len(params["layers"])
    outputs = []
    for s in range(tokens.shape[1]):
        h = x[:, s]
        for i, p in enumerate(params["layers"]):
            h, memories[i] = _block(p, h, memories[i]), jax.lax.stop_gradient(h)
        outputs.append(h)
    return dense(params["head"], layer_norm(jnp.concatenate(outputs, axis=1)))


WORKLOAD = Workload(
    name="txl",
    description="Transformer-XL-like LM: segment recurrence with per-layer memory",
    sizes={
        "tiny": dict(batch=2, segments=2, length=4, dim=32, layers=2, vocab=32),
        "small": dict(batch=8, segments=4, length=64, dim=256, layers=4, vocab=2048),
        "large": dict(batch=16, segments=8, length=128, dim=512, layers=12, vocab=8192),
    },
    init=init,
    apply=apply,
    loss=softmax_cross_entropy,
)
