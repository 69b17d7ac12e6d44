"""Mixture-of-experts language model (Switch/GShard-style): causal attention blocks whose MLP is
a set of experts, each token sent to its top-2 by a learned router.

Dispatch is dense: one-hot (token, expert, slot) tensors and einsums, with a fixed capacity per
expert so shapes are static; tokens past an expert's capacity are dropped, as in GShard. The
router is trained through the gates and an auxiliary loss that rewards balanced expert load.
"""

import math

import jax
import jax.numpy as jnp

from hlotune.programs.zoo.base import Workload
from hlotune.programs.zoo.layers import (
    attention,
    attention_init,
    causal_mask,
    layer_norm,
    softmax_cross_entropy,
)

TOP_K = 2
CAPACITY_FACTOR = 1.25  # expert slots over an even share of the token choices
BALANCE_WEIGHT = 0.01


def _layer_init(key, dim: int, experts: int) -> dict:
    k_attn, k_router, k_up, k_down = jax.random.split(key, 4)
    return attention_init(k_attn, dim) | {
        "router": jax.random.normal(k_router, (dim, experts)) * 0.02,
        "up": jax.random.normal(k_up, (experts, dim, 4 * dim)) / jnp.sqrt(dim),
        "down": jax.random.normal(k_down, (experts, 4 * dim, dim)) / jnp.sqrt(4 * dim),
    }


def _route(logits, capacity: int):
    """(dispatch, combine), both (token, expert, slot), and the load-balancing loss."""
    tokens, experts = logits.shape
    probs = jax.nn.softmax(logits)
    gates, chosen = jax.lax.top_k(probs, TOP_K)
    gates = gates / gates.sum(-1, keepdims=True)
    choice = jax.nn.one_hot(chosen, experts)  # (token, k, expert)
    # An expert's queue takes every token's first choice before any second choice.
    queue = jnp.cumsum(choice.swapaxes(0, 1).reshape(TOP_K * tokens, experts), axis=0) - 1
    slot = (queue.reshape(TOP_K, tokens, experts).swapaxes(0, 1) * choice).sum(-1)
    in_slot = jax.nn.one_hot(slot.astype(jnp.int32), capacity)  # all zero past capacity: dropped
    dispatch = jnp.einsum("tke,tkc->tec", choice, in_slot)
    combine = jnp.einsum("tk,tke,tkc->tec", gates, choice, in_slot)
    balance = experts * jnp.sum(choice.mean((0, 1)) * probs.mean(0))  # 1 when load is even
    return dispatch, combine, balance


def _experts(p, x):
    b, s, d = x.shape
    tokens = x.reshape(b * s, d)
    experts = p["router"].shape[1]
    capacity = math.ceil(CAPACITY_FACTOR * TOP_K * b * s / experts)
    dispatch, combine, balance = _route(tokens @ p["router"], capacity)
    slots = jnp.einsum("tec,td->ecd", dispatch, tokens)
    h = jax.nn.gelu(jnp.einsum("ecd,edf->ecf", slots, p["up"]))
    out = jnp.einsum("ecf,efd->ecd", h, p["down"])
    return jnp.einsum("tec,ecd->td", combine, out).reshape(b, s, d), balance


def init(key, *, batch: int, seq: int, dim: int, layers: int, experts: int, vocab: int):
    key_embed, key_pos, key_tokens, *keys = jax.random.split(key, layers + 3)
    params = {
        "embed": jax.random.normal(key_embed, (vocab, dim)) * 0.02,
        "positions": jax.random.normal(key_pos, (seq, dim)) * 0.02,
        "layers": [_layer_init(k, dim, experts) for k in keys],
    }
    tokens = jax.random.randint(key_tokens, (batch, seq + 1), 0, vocab, dtype=jnp.int32)
    return params, tokens[:, :-1], tokens[:, 1:]


def apply(params, tokens):
    """(next-token logits, mean load-balancing loss over layers)."""
    x = params["embed"][tokens] + params["positions"]
    mask = causal_mask(tokens.shape[1])
    balances = []
    for p in params["layers"]:
        x = x + attention(p, layer_norm(x), mask)
        h, balance = _experts(p, layer_norm(x))
        x = x + h
        balances.append(balance)
    return layer_norm(x) @ params["embed"].T, jnp.mean(jnp.stack(balances))


def loss(out, labels):
    logits, balance = out
    return softmax_cross_entropy(logits, labels) + BALANCE_WEIGHT * balance


WORKLOAD = Workload(
    name="moe",
    description="Mixture-of-experts decoder (top-2 router, capacity dispatch, balance loss)",
    sizes={
        "tiny": dict(batch=2, seq=16, dim=32, layers=1, experts=4, vocab=64),
        "small": dict(batch=4, seq=64, dim=128, layers=2, experts=8, vocab=512),
        "base": dict(batch=8, seq=128, dim=256, layers=4, experts=8, vocab=4096),
    },
    init=init,
    apply=apply,
    loss=loss,
)
