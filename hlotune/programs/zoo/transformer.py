"""Transformer encoder over tokens (multi-head self-attention + MLP blocks, pre-LayerNorm)."""

import jax
import jax.numpy as jnp

from hlotune.programs.zoo.base import Workload
from hlotune.programs.zoo.layers import (
    block,
    block_init,
    dense,
    dense_init,
    layer_norm,
    softmax_cross_entropy,
)


def init(key, *, batch: int, seq: int, dim: int, layers: int, vocab: int):
    key_embed, key_head, key_tokens, *keys = jax.random.split(key, layers + 3)
    params = {
        "embed": jax.random.normal(key_embed, (vocab, dim)) * 0.02,
        "blocks": [block_init(k, dim) for k in keys],
        "head": dense_init(key_head, dim, vocab),
    }
    tokens = jax.random.randint(key_tokens, (batch, seq), 0, vocab, dtype=jnp.int32)
    return params, tokens, jnp.roll(tokens, -1, axis=1)


def apply(params, tokens):
    x = params["embed"][tokens]
    for p in params["blocks"]:
        x = block(p, x)
    return dense(params["head"], layer_norm(x))


WORKLOAD = Workload(
    name="transformer",
    description="Transformer encoder (self-attention + GELU MLP blocks, token logits)",
    sizes={
        "tiny": dict(batch=2, seq=16, dim=32, layers=1, vocab=64),
        "small": dict(batch=4, seq=64, dim=128, layers=2, vocab=512),
        "base": dict(batch=8, seq=256, dim=512, layers=4, vocab=4096),
    },
    init=init,
    apply=apply,
    loss=softmax_cross_entropy,
)
