"""MobileNetV2-style classifier: inverted residual blocks of depthwise-separable convolutions.

A block expands the channels with a 1x1 conv, filters each channel alone with a 3x3 depthwise
conv (`feature_group_count` = channels), then projects back with a linear 1x1 conv.
"""

import jax
import jax.numpy as jnp

from hlotune.programs.zoo.base import Workload
from hlotune.programs.zoo.layers import conv_norm, conv_norm_init, dense, dense_init, softmax_cross_entropy

EXPANSION = 6  # inner width of a block over its input width
HEAD_WIDTH = 4  # the last 1x1 conv widens the final stage this many times


def _block_init(key, cin: int, cout: int) -> dict:
    keys = jax.random.split(key, 3)
    hidden = cin * EXPANSION
    return {
        "expand": conv_norm_init(keys[0], 1, cin, hidden),
        "depthwise": conv_norm_init(keys[1], 3, hidden, hidden, groups=hidden),
        "project": conv_norm_init(keys[2], 1, hidden, cout),
    }


def _block(p, x, stride: int):
    h = jax.nn.relu6(conv_norm(p["expand"], x))
    h = jax.nn.relu6(conv_norm(p["depthwise"], h, stride))
    h = conv_norm(p["project"], h)
    return x + h if h.shape == x.shape else h


def init(key, *, batch: int, image: int, width: int, stages: int, blocks: int, classes: int):
    key_stem, key_top, key_head, key_x, *keys = jax.random.split(key, 4 + stages * blocks)
    cin, layout = width, []
    for stage in range(stages):
        layout.append([])
        for _ in range(blocks):
            layout[-1].append(_block_init(keys.pop(), cin, width * 2**stage))
            cin = width * 2**stage
    params = {
        "stem": conv_norm_init(key_stem, 3, 3, width),
        "stages": layout,
        "top": conv_norm_init(key_top, 1, cin, HEAD_WIDTH * cin),
        "head": dense_init(key_head, HEAD_WIDTH * cin, classes),
    }
    x = jax.random.normal(key_x, (batch, image, image, 3))
    return params, x, jnp.arange(batch, dtype=jnp.int32) % classes


def apply(params, x):
    x = jax.nn.relu6(conv_norm(params["stem"], x, stride=2))
    for stage, blocks in enumerate(params["stages"]):
        for i, p in enumerate(blocks):
            x = _block(p, x, stride=2 if stage and not i else 1)
    x = jax.nn.relu6(conv_norm(params["top"], x))
    return dense(params["head"], x.mean(axis=(1, 2)))


WORKLOAD = Workload(
    name="mobilenet",
    description="MobileNetV2-style classifier (inverted residuals, depthwise 3x3 convs, ReLU6)",
    sizes={
        "tiny": dict(batch=2, image=16, width=8, stages=2, blocks=1, classes=10),
        "small": dict(batch=8, image=32, width=16, stages=3, blocks=2, classes=10),
        "base": dict(batch=16, image=64, width=24, stages=4, blocks=2, classes=100),
    },
    init=init,
    apply=apply,
    loss=softmax_cross_entropy,
)
