"""A WaveNet-like model (van den Oord et al. 2016): stacks of dilated causal convolutions
(dilation 1, 2, 4, ... per stack) with gated activations, residual and skip connections, and a
softmax over quantised sample values. The skip sum joins every layer to the output, so the
graph is a long chain with a wide fan-in."""

import jax
import jax.numpy as jnp

from hlotune.programs.zoo.base import Workload
from hlotune.programs.zoo.layers import softmax_cross_entropy

_DIMS = ("NWC", "WIO", "NWC")


def _kernel(key, width: int, cin: int, cout: int):
    return jax.random.normal(key, (width, cin, cout)) / jnp.sqrt(width * cin)


def _causal(x, kernel, dilation: int = 1):
    """Output t sees inputs t, t - dilation, ... (left padding only)."""
    pad = dilation * (kernel.shape[0] - 1)
    return jax.lax.conv_general_dilated(x, kernel, (1,), [(pad, 0)], rhs_dilation=(dilation,),
                                        dimension_numbers=_DIMS)


def _layer_init(key, residual: int, skip: int) -> dict:
    k = jax.random.split(key, 4)
    return {"filter": _kernel(k[0], 2, residual, residual),
            "gate": _kernel(k[1], 2, residual, residual),
            "residual": _kernel(k[2], 1, residual, residual),
            "skip": _kernel(k[3], 1, residual, skip)}


def init(key, *, batch: int, length: int, residual: int, skip: int, stacks: int, layers: int,
         classes: int):
    k_in, k_out1, k_out2, k_data, *keys = jax.random.split(key, stacks * layers + 4)
    params = {
        "input": _kernel(k_in, 1, 1, residual),
        "stacks": [[_layer_init(keys[s * layers + i], residual, skip) for i in range(layers)]
                   for s in range(stacks)],
        "out1": _kernel(k_out1, 1, skip, skip),
        "out2": _kernel(k_out2, 1, skip, classes),
    }
    samples = jax.random.randint(k_data, (batch, length + 1), 0, classes, dtype=jnp.int32)
    x = (samples[:, :-1, None] / (classes - 1) * 2 - 1).astype(jnp.float32)
    return params, x, samples[:, 1:]


def apply(params, x):
    h = _causal(x, params["input"])
    skips = 0.0
    for stack in params["stacks"]:
        for i, p in enumerate(stack):
            z = (jnp.tanh(_causal(h, p["filter"], 2**i))
                 * jax.nn.sigmoid(_causal(h, p["gate"], 2**i)))
            skips = skips + _causal(z, p["skip"])
            h = h + _causal(z, p["residual"])
    return _causal(jax.nn.relu(_causal(jax.nn.relu(skips), params["out1"])), params["out2"])


WORKLOAD = Workload(
    name="wavenet",
    description="WaveNet-like: stacks of dilated causal convolutions with gated units",
    sizes={
        "tiny": dict(batch=2, length=16, residual=8, skip=8, stacks=1, layers=3, classes=16),
        "small": dict(batch=4, length=2048, residual=32, skip=64, stacks=2, layers=10,
                      classes=256),
        "large": dict(batch=4, length=8192, residual=64, skip=128, stacks=24, layers=10,
                      classes=256),
    },
    init=init,
    apply=apply,
    loss=softmax_cross_entropy,
)
