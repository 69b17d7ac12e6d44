"""ResNet classifier: stages of bottleneck residual blocks (1x1 -> 3x3 -> 1x1), batch norm.

Each stage's first block widens the channels (and halves the image after the first stage), so
it carries a projection shortcut; the rest add their input back unchanged.
"""

import jax
import jax.numpy as jnp

from hlotune.programs.zoo.base import Workload
from hlotune.programs.zoo.layers import conv_norm, conv_norm_init, dense, dense_init, softmax_cross_entropy

EXPANSION = 4  # a bottleneck's output is this many times its inner width


def _bottleneck_init(key, cin: int, width: int) -> dict:
    keys = jax.random.split(key, 4)
    cout = width * EXPANSION
    p = {
        "reduce": conv_norm_init(keys[0], 1, cin, width),
        "conv": conv_norm_init(keys[1], 3, width, width),
        "expand": conv_norm_init(keys[2], 1, width, cout),
    }
    if cin != cout:
        p["shortcut"] = conv_norm_init(keys[3], 1, cin, cout)
    return p


def _bottleneck(p, x, stride: int):
    h = jax.nn.relu(conv_norm(p["reduce"], x))
    h = jax.nn.relu(conv_norm(p["conv"], h, stride))
    h = conv_norm(p["expand"], h)
    shortcut = conv_norm(p["shortcut"], x, stride) if "shortcut" in p else x
    return jax.nn.relu(h + shortcut)


def init(key, *, batch: int, image: int, width: int, stages: int, blocks: int, classes: int):
    key_stem, key_head, key_x, *keys = jax.random.split(key, 3 + stages * blocks)
    cin, layout = width, []
    for stage in range(stages):
        stage_width = width * 2**stage
        layout.append([])
        for _ in range(blocks):
            layout[-1].append(_bottleneck_init(keys.pop(), cin, stage_width))
            cin = stage_width * EXPANSION
    params = {
        "stem": conv_norm_init(key_stem, 3, 3, width),
        "stages": layout,
        "head": dense_init(key_head, cin, classes),
    }
    x = jax.random.normal(key_x, (batch, image, image, 3))
    return params, x, jnp.arange(batch, dtype=jnp.int32) % classes


def apply(params, x):
    x = jax.nn.relu(conv_norm(params["stem"], x))
    for stage, blocks in enumerate(params["stages"]):
        for i, p in enumerate(blocks):
            x = _bottleneck(p, x, stride=2 if stage and not i else 1)
    return dense(params["head"], x.mean(axis=(1, 2)))


WORKLOAD = Workload(
    name="resnet",
    description="ResNet classifier (bottleneck blocks, projection shortcuts, batch norm)",
    sizes={
        "tiny": dict(batch=2, image=16, width=8, stages=1, blocks=2, classes=10),
        "small": dict(batch=8, image=32, width=16, stages=3, blocks=2, classes=10),
        "base": dict(batch=8, image=64, width=32, stages=4, blocks=2, classes=100),
    },
    init=init,
    apply=apply,
    loss=softmax_cross_entropy,
)
