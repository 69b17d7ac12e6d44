"""U-Net segmenter: a conv encoder with max-pooling and a transpose-conv decoder, joined level by
level by skip concatenations, giving per-pixel class logits."""

import jax
import jax.numpy as jnp

from hlotune.programs.zoo.base import Workload
from hlotune.programs.zoo.layers import (
    conv_init,
    conv_norm,
    conv_norm_init,
    conv_transpose,
    dense,
    dense_init,
    max_pool,
    softmax_cross_entropy,
)


def _double_conv_init(key, cin: int, cout: int) -> list:
    k1, k2 = jax.random.split(key)
    return [conv_norm_init(k1, 3, cin, cout), conv_norm_init(k2, 3, cout, cout)]


def _double_conv(layers, x):
    for p in layers:
        x = jax.nn.relu(conv_norm(p, x))
    return x


def _up_init(key, width: int, below: int) -> dict:
    """Up-sample from the level below, then convolve it with this level's skip (2*width in)."""
    k1, k2 = jax.random.split(key)
    return {
        "upsample": conv_init(k1, 2, below, width),
        "convs": _double_conv_init(k2, 2 * width, width),
    }


def init(key, *, batch: int, image: int, channels: int, depth: int, classes: int):
    """`image` must be a multiple of 2**depth; level i works at `channels * 2**i` features."""
    keys = iter(jax.random.split(key, 2 * depth + 4))
    widths = [channels * 2**i for i in range(depth + 1)]
    levels = list(zip(widths[:-1], widths[1:]))  # (this level's width, the next one down's)
    params = {
        "down": [_double_conv_init(next(keys), a, b) for a, b in zip([3] + widths, widths[:-1])],
        "bottom": _double_conv_init(next(keys), widths[-2], widths[-1]),
        "up": [_up_init(next(keys), width, below) for width, below in reversed(levels)],
        "out": dense_init(next(keys), channels, classes),
    }
    x = jax.random.normal(next(keys), (batch, image, image, 3))
    y = jax.random.randint(next(keys), (batch, image, image), 0, classes, dtype=jnp.int32)
    return params, x, y


def apply(params, x):
    skips = []
    for layers in params["down"]:
        x = _double_conv(layers, x)
        skips.append(x)
        x = max_pool(x)
    x = _double_conv(params["bottom"], x)
    for level, skip in zip(params["up"], reversed(skips)):
        x = conv_transpose(x, level["upsample"])
        x = _double_conv(level["convs"], jnp.concatenate([skip, x], axis=-1))
    return dense(params["out"], x)  # a 1x1 conv: per-pixel logits


WORKLOAD = Workload(
    name="unet",
    description="U-Net segmenter (conv + max-pool encoder, transpose-conv decoder, skip concats)",
    sizes={
        "tiny": dict(batch=2, image=16, channels=8, depth=1, classes=3),
        "small": dict(batch=4, image=64, channels=16, depth=3, classes=5),
        "base": dict(batch=4, image=96, channels=32, depth=4, classes=10),
    },
    init=init,
    apply=apply,
    loss=softmax_cross_entropy,
)
