"""Vision Transformer classifier: non-overlapping patches embedded by a strided conv, a learned
class token and positions, encoder blocks, and a head on the class token."""

import jax
import jax.numpy as jnp

from hlotune.programs.zoo.base import Workload
from hlotune.programs.zoo.layers import (
    block,
    block_init,
    conv,
    conv_init,
    dense,
    dense_init,
    layer_norm,
    softmax_cross_entropy,
)


def init(key, *, batch: int, image: int, patch: int, dim: int, layers: int, classes: int):
    """`image` must be a multiple of `patch`."""
    key_patch, key_cls, key_pos, key_head, key_x, *keys = jax.random.split(key, layers + 5)
    tokens = (image // patch) ** 2 + 1
    params = {
        "patch": conv_init(key_patch, patch, 3, dim),
        "cls": jax.random.normal(key_cls, (1, 1, dim)) * 0.02,
        "positions": jax.random.normal(key_pos, (tokens, dim)) * 0.02,
        "blocks": [block_init(k, dim) for k in keys],
        "head": dense_init(key_head, dim, classes),
    }
    x = jax.random.normal(key_x, (batch, image, image, 3))
    return params, x, jnp.arange(batch, dtype=jnp.int32) % classes


def apply(params, images):
    patch = params["patch"].shape[0]
    x = conv(images, params["patch"], stride=patch)
    b, _, _, dim = x.shape
    cls = jnp.broadcast_to(params["cls"], (b, 1, dim))
    x = jnp.concatenate([cls, x.reshape(b, -1, dim)], axis=1) + params["positions"]
    for p in params["blocks"]:
        x = block(p, x)
    return dense(params["head"], layer_norm(x[:, 0]))


WORKLOAD = Workload(
    name="vit",
    description="Vision Transformer (conv patch embedding, class token, encoder blocks)",
    sizes={
        "tiny": dict(batch=2, image=16, patch=4, dim=32, layers=1, classes=10),
        "small": dict(batch=8, image=32, patch=4, dim=128, layers=4, classes=10),
        "base": dict(batch=16, image=64, patch=8, dim=384, layers=6, classes=100),
    },
    init=init,
    apply=apply,
    loss=softmax_cross_entropy,
)
