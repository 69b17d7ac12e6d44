"""Deterministic inputs on a square grid, shared by the grid programs."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np


def random_field(seed: int, n: int, cutoff: float) -> jnp.ndarray:
    """A smooth periodic random field on an n x n grid, zero mean and unit variance: white noise
    low-pass filtered by exp(-(k / cutoff)**2): inputs shaped like physical fields, where white
    noise would spend a solver's first steps damping grid-scale modes."""
    noise = np.random.default_rng(seed).standard_normal((n, n))
    k = np.fft.fftfreq(n, 1 / n)
    k2 = k[:, None] ** 2 + k[None, :] ** 2
    field = np.fft.ifft2(np.fft.fft2(noise) * np.exp(-k2 / cutoff**2)).real
    field -= field.mean()
    return jnp.asarray(field / field.std(), jnp.float32)

