"""Small convolutional classifier (conv + ReLU + pooling, then a dense head)."""

import jax
import jax.numpy as jnp

from hlotune.programs.zoo.base import Workload
from hlotune.programs.zoo.layers import conv, conv_init, dense, dense_init, max_pool, softmax_cross_entropy


def init(key, *, batch: int, image: int, channels: int, depth: int, classes: int):
    keys = jax.random.split(key, depth + 2)
    widths = [3] + [channels * 2**i for i in range(depth)]
    convs = [conv_init(k, 3, a, b) for k, a, b in zip(keys, widths[:-1], widths[1:])]
    head = dense_init(keys[depth], widths[-1], classes)
    x = jax.random.normal(keys[-1], (batch, image, image, 3))
    return {"convs": convs, "head": head}, x, jnp.arange(batch, dtype=jnp.int32) % classes


def apply(params, x):
    for kernel in params["convs"]:
        x = max_pool(jax.nn.relu(conv(x, kernel)))
    return dense(params["head"], x.mean(axis=(1, 2)))


WORKLOAD = Workload(
    name="cnn",
    description="CNN classifier (3x3 conv + ReLU + max-pool blocks, global average pool)",
    sizes={
        "tiny": dict(batch=2, image=16, channels=8, depth=2, classes=10),
        "small": dict(batch=8, image=32, channels=16, depth=3, classes=10),
        "base": dict(batch=32, image=64, channels=32, depth=4, classes=100),
    },
    init=init,
    apply=apply,
    loss=softmax_cross_entropy,
)
