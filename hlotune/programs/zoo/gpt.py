"""GPT-style decoder-only language model: causal self-attention blocks, learned positions and an
output layer tied to the token embedding, trained on next-token prediction."""

import jax
import jax.numpy as jnp

from hlotune.programs.zoo.base import Workload
from hlotune.programs.zoo.layers import block, block_init, causal_mask, layer_norm, softmax_cross_entropy


def init(key, *, batch: int, seq: int, dim: int, layers: int, vocab: int):
    key_embed, key_pos, key_tokens, *keys = jax.random.split(key, layers + 3)
    params = {
        "embed": jax.random.normal(key_embed, (vocab, dim)) * 0.02,
        "positions": jax.random.normal(key_pos, (seq, dim)) * 0.02,
        "blocks": [block_init(k, dim) for k in keys],
    }
    tokens = jax.random.randint(key_tokens, (batch, seq + 1), 0, vocab, dtype=jnp.int32)
    return params, tokens[:, :-1], tokens[:, 1:]


def apply(params, tokens):
    x = params["embed"][tokens] + params["positions"]
    mask = causal_mask(tokens.shape[1])
    for p in params["blocks"]:
        x = block(p, x, mask)
    return layer_norm(x) @ params["embed"].T


WORKLOAD = Workload(
    name="gpt",
    description="GPT-style decoder (causal attention, tied embeddings, next-token loss)",
    sizes={
        "tiny": dict(batch=2, seq=16, dim=32, layers=1, vocab=64),
        "small": dict(batch=4, seq=128, dim=128, layers=4, vocab=1024),
        "base": dict(batch=4, seq=256, dim=256, layers=6, vocab=4096),
    },
    init=init,
    apply=apply,
    loss=softmax_cross_entropy,
)
