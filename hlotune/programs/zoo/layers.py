"""Layers the zoo's architectures share, in plain JAX: parameters are dicts and lists of arrays.

Everything that decides a graph's shape (strides, heads, groups) comes from array shapes or
arguments, never from values inside the parameters, since those are traced under `jit`.
"""

import jax
import jax.numpy as jnp

CONV_DIMS = ("NHWC", "HWIO", "NHWC")
HEAD_DIM = 16


def dense_init(key, fan_in: int, fan_out: int) -> dict:
    return {
        "w": jax.random.normal(key, (fan_in, fan_out)) / jnp.sqrt(fan_in),
        "b": jnp.zeros((fan_out,)),
    }


def dense(p, x):
    return x @ p["w"] + p["b"]


def softmax_cross_entropy(logits: jax.Array, labels: jax.Array) -> jax.Array:
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), labels[..., None], -1))


def layer_norm(x):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5)


# Convolutions (NHWC images, HWIO kernels)


def conv_init(key, size: int, cin: int, cout: int, *, groups: int = 1) -> jax.Array:
    """A kernel whose outputs each see `cin // groups` input channels (depthwise: groups=cin)."""
    fan_in = size * size * cin // groups
    return jax.random.normal(key, (size, size, cin // groups, cout)) / jnp.sqrt(fan_in)


def conv(x, kernel, stride: int = 1):
    """SAME convolution; the kernel's input width tells the feature groups, so depthwise
    kernels need no extra argument."""
    return jax.lax.conv_general_dilated(
        x,
        kernel,
        (stride, stride),
        "SAME",
        dimension_numbers=CONV_DIMS,
        feature_group_count=x.shape[-1] // kernel.shape[2],
    )


def conv_transpose(x, kernel, stride: int = 2):
    """Learned up-sampling: output spatial size is `stride` times the input's."""
    return jax.lax.conv_transpose(x, kernel, (stride, stride), "SAME", dimension_numbers=CONV_DIMS)


def max_pool(x, window: int = 2):
    dims = (1, window, window, 1)
    return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, dims, dims, "VALID")


def batch_norm(p, x):
    """Normalise each channel with this batch's statistics, as in training (no running averages)."""
    axes = tuple(range(x.ndim - 1))
    x = x - x.mean(axes)
    return x * jax.lax.rsqrt((x * x).mean(axes) + 1e-5) * p["scale"] + p["bias"]


def conv_norm_init(key, size: int, cin: int, cout: int, *, groups: int = 1) -> dict:
    """A bias-free convolution followed by batch normalisation, as in ResNet and MobileNet."""
    norm = {"scale": jnp.ones((cout,)), "bias": jnp.zeros((cout,))}
    return {"kernel": conv_init(key, size, cin, cout, groups=groups), "norm": norm}


def conv_norm(p, x, stride: int = 1):
    return batch_norm(p["norm"], conv(x, p["kernel"], stride))


# Transformer blocks (pre-LayerNorm, heads of HEAD_DIM features)


def attention_init(key, dim: int) -> dict:
    k_qkv, k_out = jax.random.split(key)
    return {"qkv": dense_init(k_qkv, dim, 3 * dim), "out": dense_init(k_out, dim, dim)}


def attention(p, x, mask=None):
    """Multi-head self-attention; `mask[i, j]` False keeps position i from attending to j."""
    b, s, d = x.shape
    heads = d // HEAD_DIM
    split = lambda t: t.reshape(b, s, heads, HEAD_DIM).transpose(0, 2, 1, 3)
    q, k, v = map(split, jnp.split(dense(p["qkv"], x), 3, axis=-1))
    scores = q @ k.transpose(0, 1, 3, 2) / jnp.sqrt(HEAD_DIM)
    if mask is not None:
        scores = jnp.where(mask, scores, jnp.finfo(scores.dtype).min)
    weights = jax.nn.softmax(scores, axis=-1)
    return dense(p["out"], (weights @ v).transpose(0, 2, 1, 3).reshape(b, s, d))


def causal_mask(seq: int) -> jax.Array:
    return jnp.tril(jnp.ones((seq, seq), bool))


def block_init(key, dim: int) -> dict:
    k_attn, k_up, k_down = jax.random.split(key, 3)
    mlp = {"up": dense_init(k_up, dim, 4 * dim), "down": dense_init(k_down, 4 * dim, dim)}
    return attention_init(k_attn, dim) | mlp


def block(p, x, mask=None):
    """Attention then a GELU MLP, each as a residual on LayerNorm'd input."""
    x = x + attention(p, layer_norm(x), mask)
    return x + dense(p["down"], jax.nn.gelu(dense(p["up"], layer_norm(x))))
