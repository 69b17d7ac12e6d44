"""Convolutional variational autoencoder: a strided-conv encoder to a diagonal Gaussian over the
latent, a sample by reparameterisation, a transpose-conv decoder, trained on the negative ELBO.

The sampling noise comes from a PRNG key carried in the input, so the program is a pure function
of its arguments and the key shows up in the graph as a real input.
"""

import jax
import jax.numpy as jnp

from hlotune.programs.zoo.base import Workload
from hlotune.programs.zoo.layers import conv, conv_init, conv_transpose, dense, dense_init


def init(key, *, batch: int, image: int, channels: int, depth: int, latent: int):
    """Binary grayscale images; `image` must be a multiple of 2**depth."""
    k_post, k_decode, k_x, k_noise, *keys = jax.random.split(key, 2 * depth + 4)
    widths = [1] + [channels * 2**i for i in range(depth)]
    levels = list(zip(widths[:-1], widths[1:]))  # (narrow, wide), from the image inwards
    flat = (image // 2**depth) ** 2 * widths[-1]
    params = {
        "encoder": [conv_init(k, 3, a, b) for k, (a, b) in zip(keys, levels)],
        "posterior": dense_init(k_post, flat, 2 * latent),
        "decode": dense_init(k_decode, latent, flat),
        # Level by level as the encoder: `apply` runs it from the widest level out to the image.
        "decoder": [conv_init(k, 3, b, a) for k, (a, b) in zip(keys[depth:], levels)],
    }
    images = jax.random.bernoulli(k_x, 0.5, (batch, image, image, 1)).astype(jnp.float32)
    return params, {"images": images, "noise_key": k_noise}, images


def apply(params, x):
    """(pixel logits, posterior mean, posterior log-variance)."""
    h = x["images"]
    for kernel in params["encoder"]:
        h = jax.nn.relu(conv(h, kernel, stride=2))
    mean, logvar = jnp.split(dense(params["posterior"], h.reshape(h.shape[0], -1)), 2, axis=-1)
    z = mean + jnp.exp(0.5 * logvar) * jax.random.normal(x["noise_key"], mean.shape)
    h = dense(params["decode"], z).reshape(h.shape)
    for kernel in reversed(params["decoder"]):
        h = conv_transpose(jax.nn.relu(h), kernel)
    return h, mean, logvar


def negative_elbo(out, images):
    """Bernoulli reconstruction loss plus the KL divergence to the N(0, I) prior, per image."""
    logits, mean, logvar = out
    reconstruction = jnp.sum(jax.nn.softplus(logits) - images * logits)
    kl = -0.5 * jnp.sum(1 + logvar - mean**2 - jnp.exp(logvar))
    return (reconstruction + kl) / images.shape[0]


WORKLOAD = Workload(
    name="vae",
    description="Convolutional VAE (reparameterised latent from an input PRNG key, ELBO loss)",
    sizes={
        "tiny": dict(batch=2, image=16, channels=8, depth=2, latent=8),
        "small": dict(batch=16, image=32, channels=16, depth=3, latent=32),
        "base": dict(batch=64, image=64, channels=32, depth=4, latent=128),
    },
    init=init,
    apply=apply,
    loss=negative_elbo,
)
