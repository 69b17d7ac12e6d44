"""GO's branchy convolutional graphs: Inception-like modules (parallel convolution branches
joined by a concatenation) and AmoebaNet-like cells (a NAS genotype of five two-branch blocks
over the two previous cells' outputs). Their parallel branches are what a placer can spread
over devices."""

import jax
import jax.numpy as jnp

from hlotune.programs.zoo.base import Workload
from hlotune.programs.zoo.layers import (
    conv,
    conv_init,
    conv_norm,
    conv_norm_init,
    dense,
    dense_init,
    softmax_cross_entropy,
)


def pool(x, kind: str, stride: int = 1):
    """A 3x3 max or average pool, SAME padded."""
    dims, strides = (1, 3, 3, 1), (1, stride, stride, 1)
    if kind == "max":
        return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, dims, strides, "SAME")
    return jax.lax.reduce_window(x, 0.0, jax.lax.add, dims, strides, "SAME") / 9.0


def _relu_conv(p, x):
    return jax.nn.relu(conv_norm(p, x))


def _images(key, batch: int, image: int, classes: int):
    k_x, k_y = jax.random.split(key)
    x = jax.random.normal(k_x, (batch, image, image, 3))
    return x, jax.random.randint(k_y, (batch,), 0, classes, dtype=jnp.int32)


def _head(p, x):
    return dense(p, x.mean(axis=(1, 2)))


# --- Inception --------------------------------------------------------------------------------

# Each branch is a list of kernel sizes after its 1x1 (the pool branch pools first).
_BRANCHES = ((), (3,), (3, 3))


def _module_init(key, cin: int, width: int) -> dict:
    keys = iter(jax.random.split(key, 8))
    branches = [
        [conv_norm_init(next(keys), 1, cin, width)]
        + [conv_norm_init(next(keys), k, width, width) for k in sizes]
        for sizes in _BRANCHES
    ]
    return {"branches": branches, "pool": conv_norm_init(next(keys), 1, cin, width)}


def _module(p, x):
    outputs = []
    for branch in p["branches"]:
        y = x
        for layer in branch:
            y = _relu_conv(layer, y)
        outputs.append(y)
    outputs.append(_relu_conv(p["pool"], pool(x, "avg")))
    return jnp.concatenate(outputs, axis=-1)


def inception_init(key, *, batch: int, image: int, width: int, stages: int, modules: int,
                   classes: int):
    k_stem, k_head, k_data, *keys = jax.random.split(key, stages * modules + 3)
    channels = 4 * width
    params = {
        "stem": conv_norm_init(k_stem, 3, 3, channels),
        "stages": _grid(keys, stages, modules, lambda k: _module_init(k, channels, width)),
        "head": dense_init(k_head, channels, classes),
    }
    return params, *_images(k_data, batch, image, classes)


def inception_apply(params, x):
    x = _relu_conv(params["stem"], x)
    for i, stage in enumerate(params["stages"]):
        if i:
            x = pool(x, "max", stride=2)  # grid reduction between stages
        for module in stage:
            x = _module(module, x)
    return _head(params["head"], x)


def _grid(keys, stages: int, per_stage: int, build) -> list[list]:
    """`stages` lists of `per_stage` blocks, one key each."""
    return [[build(keys[s * per_stage + i]) for i in range(per_stage)] for s in range(stages)]


INCEPTION = Workload(
    name="inception",
    description="Inception-like CNN: modules of four parallel branches (GO's Inception-V3)",
    sizes={
        "tiny": dict(batch=2, image=8, width=4, stages=1, modules=2, classes=10),
        "small": dict(batch=32, image=32, width=32, stages=3, modules=3, classes=100),
        "large": dict(batch=64, image=64, width=64, stages=4, modules=12, classes=1000),
    },
    init=inception_init,
    apply=inception_apply,
    loss=softmax_cross_entropy,
)


# --- AmoebaNet --------------------------------------------------------------------------------

# A normal cell's genotype in the style of AmoebaNet-A: five blocks, each the sum of two ops on
# earlier states (0 = the previous cell's output, 1 = the one before, k >= 2 = block k - 2).
GENOTYPE = (
    (("avg", 0), ("max", 1)),
    (("sep3", 0), ("id", 1)),
    (("sep5", 2), ("avg", 0)),
    (("sep3", 1), ("id", 3)),
    (("max", 4), ("sep5", 2)),
)
_SEPARABLE = {"sep3": 3, "sep5": 5}


def _op_init(key, op: str, width: int) -> dict:
    if op not in _SEPARABLE:
        return {}
    k_depth, k_point = jax.random.split(key)
    return {"depthwise": conv_init(k_depth, _SEPARABLE[op], width, width, groups=width),
            "pointwise": conv_norm_init(k_point, 1, width, width)}


def _op(op: str, p, x):
    if op in _SEPARABLE:  # ReLU, depthwise, pointwise with batch norm
        return conv_norm(p["pointwise"], conv(jax.nn.relu(x), p["depthwise"]))
    return x if op == "id" else pool(x, op)


def _cell_init(key, width: int) -> dict:
    k_prev, k_prev2, *keys = jax.random.split(key, 2 + 2 * len(GENOTYPE))
    ops = [op for block in GENOTYPE for op, _ in block]
    cin = len(GENOTYPE) * width
    return {"prev": conv_norm_init(k_prev, 1, cin, width),
            "prev2": conv_norm_init(k_prev2, 1, cin, width),
            "ops": [_op_init(k, op, width) for k, op in zip(keys, ops)]}


def _cell(p, prev, prev2):
    states = [_relu_conv(p["prev"], prev), _relu_conv(p["prev2"], prev2)]
    params = iter(p["ops"])
    for block in GENOTYPE:
        states.append(sum(_op(op, next(params), states[i]) for op, i in block))
    return jnp.concatenate(states[2:], axis=-1)


def amoebanet_init(key, *, batch: int, image: int, width: int, stages: int, cells: int,
                   classes: int):
    k_stem, k_head, k_data, *keys = jax.random.split(key, stages * cells + 3)
    channels = len(GENOTYPE) * width
    params = {
        "stem": conv_norm_init(k_stem, 3, 3, channels),
        "stages": _grid(keys, stages, cells, lambda k: _cell_init(k, width)),
        "head": dense_init(k_head, channels, classes),
    }
    return params, *_images(k_data, batch, image, classes)


def amoebanet_apply(params, x):
    prev = prev2 = _relu_conv(params["stem"], x)
    for i, stage in enumerate(params["stages"]):
        if i:  # reduction: both inputs to the next grid size
            prev, prev2 = pool(prev, "max", stride=2), pool(prev2, "max", stride=2)
        for cell in stage:
            prev, prev2 = _cell(cell, prev, prev2), prev
    return _head(params["head"], prev)


AMOEBANET = Workload(
    name="amoebanet",
    description="AmoebaNet-like CNN: NAS cells of five two-branch blocks (GO's AmoebaNet)",
    sizes={
        "tiny": dict(batch=2, image=8, width=4, stages=1, cells=2, classes=10),
        "small": dict(batch=16, image=32, width=32, stages=3, cells=2, classes=100),
        "large": dict(batch=32, image=64, width=64, stages=4, cells=12, classes=1000),
    },
    init=amoebanet_init,
    apply=amoebanet_apply,
    loss=softmax_cross_entropy,
)
