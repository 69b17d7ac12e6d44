"""Multi-layer perceptron classifier."""

import jax
import jax.numpy as jnp

from hlotune.programs.zoo.base import Workload
from hlotune.programs.zoo.layers import dense, dense_init, softmax_cross_entropy


def init(key, *, batch: int, features: int, hidden: int, depth: int, classes: int):
    widths = [features] + [hidden] * depth + [classes]
    keys = jax.random.split(key, len(widths) + 1)
    params = [dense_init(k, a, b) for k, a, b in zip(keys, widths[:-1], widths[1:])]
    x = jax.random.normal(keys[-1], (batch, features))
    y = jnp.arange(batch, dtype=jnp.int32) % classes
    return params, x, y


def apply(params, x):
    for layer in params[:-1]:
        x = jax.nn.relu(dense(layer, x))
    return dense(params[-1], x)


WORKLOAD = Workload(
    name="mlp",
    description="MLP classifier (dense + ReLU stack)",
    sizes={
        "tiny": dict(batch=8, features=32, hidden=64, depth=2, classes=10),
        "small": dict(batch=64, features=256, hidden=512, depth=3, classes=10),
        "base": dict(batch=256, features=1024, hidden=2048, depth=4, classes=100),
    },
    init=init,
    apply=apply,
    loss=softmax_cross_entropy,
)
