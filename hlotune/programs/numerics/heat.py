"""The heat equation u_t = ∇²u on the unit square, held at zero on its boundary, stepped by
explicit finite differences (forward Euler in time, the five-point Laplacian in space): a
stencil applied `steps` times in a lax.fori_loop."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from hlotune.programs.numerics.base import Numeric
from hlotune.programs.numerics.fields import random_field
from hlotune.programs.numerics.stencil import neighbour_sum

COURANT = 0.2  # dt / h**2: forward Euler is stable up to 0.25


def simulate(u: jnp.ndarray, *, steps: int) -> jnp.ndarray:
    """The temperature after `steps` steps of dt = COURANT * h**2."""
    return jax.lax.fori_loop(0, steps, lambda _, u: u + COURANT * (neighbour_sum(u) - 4 * u), u)


def build(*, grid: int, steps: int):
    return partial(simulate, steps=steps), (random_field(seed=0, n=grid, cutoff=grid / 8),)


WORKLOAD = Numeric(
    name="heat",
    description="heat equation, explicit finite-difference stencil steps (fori_loop)",
    sizes={
        "tiny": dict(grid=32, steps=50),
        "small": dict(grid=256, steps=100),
        "base": dict(grid=512, steps=200),
    },
    build=build,
)
