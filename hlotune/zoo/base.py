"""What a zoo workload is, and how one becomes a program: inference or a full training step.

A workload supplies parameters, a batch and a forward pass in plain JAX. The training step adds
the loss, its gradient and an Adam update, so the graph holds the backward pass and optimizer
as real training graphs do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

Params = Any  # a pytree of arrays


@dataclass(frozen=True)
class Workload:
    """A real architecture at several sizes. `sizes` maps a size name to `init`'s keywords."""

    name: str
    description: str
    sizes: Mapping[str, Mapping[str, int]]
    init: Callable[..., tuple[Params, jax.Array, jax.Array]]  # (key, **size) -> params, x, y
    apply: Callable[[Params, jax.Array], jax.Array]
    loss: Callable[[jax.Array, jax.Array], jax.Array]

    def program(self, size: str, *, train: bool) -> tuple[Callable, tuple]:
        params, x, y = self.init(jax.random.PRNGKey(0), **self.sizes[size])
        if not train:
            return self.apply, (params, x)
        return self._train_step, (params, adam_init(params), x, y)

    def _train_step(self, params: Params, opt_state, x: jax.Array, y: jax.Array):
        loss, grads = jax.value_and_grad(lambda p: self.loss(self.apply(p, x), y))(params)
        params, opt_state = adam_update(params, grads, opt_state)
        return params, opt_state, loss


def adam_init(params: Params):
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    return zeros, zeros, jnp.zeros((), jnp.int32)


def adam_update(params, grads, state, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
    m, v, step = state
    step = step + 1
    m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
    v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
    scale = lr * jnp.sqrt(1 - b2**step) / (1 - b1**step)
    params = jax.tree_util.tree_map(lambda p, m, v: p - scale * m / (jnp.sqrt(v) + eps), params, m, v)
    return params, (m, v, step)


def softmax_cross_entropy(logits: jax.Array, labels: jax.Array) -> jax.Array:
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), labels[..., None], -1))


def dense_init(key, fan_in: int, fan_out: int) -> dict:
    return {
        "w": jax.random.normal(key, (fan_in, fan_out)) / jnp.sqrt(fan_in),
        "b": jnp.zeros((fan_out,)),
    }
