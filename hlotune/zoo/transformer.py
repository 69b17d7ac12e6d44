"""Transformer encoder classifier (multi-head self-attention + MLP blocks, pre-LayerNorm)."""

import jax
import jax.numpy as jnp

from hlotune.zoo.base import Workload, dense_init, softmax_cross_entropy

HEAD_DIM = 16


def init(key, *, batch: int, seq: int, dim: int, layers: int, vocab: int):
    keys = iter(jax.random.split(key, 6 * layers + 4))
    blocks = [
        {
            "qkv": dense_init(next(keys), dim, 3 * dim),
            "out": dense_init(next(keys), dim, dim),
            "up": dense_init(next(keys), dim, 4 * dim),
            "down": dense_init(next(keys), 4 * dim, dim),
        }
        for _ in range(layers)
    ]
    params = {
        "embed": jax.random.normal(next(keys), (vocab, dim)) * 0.02,
        "blocks": blocks,
        "head": dense_init(next(keys), dim, vocab),
    }
    tokens = jax.random.randint(next(keys), (batch, seq), 0, vocab)
    return params, tokens, jnp.roll(tokens, -1, axis=1)


def _layer_norm(x):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5)


def _dense(p, x):
    return x @ p["w"] + p["b"]


def _attention(p, x):
    b, s, d = x.shape
    heads = d // HEAD_DIM
    q, k, v = jnp.split(_dense(p["qkv"], x), 3, axis=-1)
    split = lambda t: t.reshape(b, s, heads, d // heads).transpose(0, 2, 1, 3)
    q, k, v = split(q), split(k), split(v)
    weights = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / jnp.sqrt(d // heads), axis=-1)
    return _dense(p["out"], (weights @ v).transpose(0, 2, 1, 3).reshape(b, s, d))


def apply(params, tokens):
    x = params["embed"][tokens]
    for block in params["blocks"]:
        x = x + _attention(block, _layer_norm(x))
        x = x + _dense(block["down"], jax.nn.gelu(_dense(block["up"], _layer_norm(x))))
    return _dense(params["head"], _layer_norm(x))


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
