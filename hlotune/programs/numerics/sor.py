"""Poisson's equation -∇²u = f on the unit square, u = 0 on its boundary, by red-black
successive over-relaxation: the five-point stencil's Gauss-Seidel update with the optimal
relaxation factor, alternately on the two colours of the checkerboard (each colour's update
reads only the other's, so it vectorises), for a fixed number of sweeps in a lax.fori_loop."""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp

from hlotune.programs.numerics.base import Numeric
from hlotune.programs.numerics.fields import random_field
from hlotune.programs.numerics.stencil import neighbour_sum


def relaxation_factor(n: int) -> float:
    """Optimal SOR factor 2 / (1 + sin(πh)) for the model problem, h = 1 / (n + 1)."""
    return 2 / (1 + math.sin(math.pi / (n + 1)))


def solve(f: jnp.ndarray, *, sweeps: int) -> jnp.ndarray:
    """u after `sweeps` red-black sweeps from u = 0."""
    n = f.shape[0]
    omega, h2 = relaxation_factor(n), 1 / (n + 1) ** 2
    index = jnp.arange(n)
    red = (index[:, None] + index[None, :]) % 2 == 0

    def relax(u, colour):
        gauss_seidel = (neighbour_sum(u) + h2 * f) / 4
        return jnp.where(colour, (1 - omega) * u + omega * gauss_seidel, u)

    return jax.lax.fori_loop(0, sweeps, lambda _, u: relax(relax(u, red), ~red), jnp.zeros_like(f))


def build(*, grid: int, sweeps: int):
    return partial(solve, sweeps=sweeps), (random_field(seed=1, n=grid, cutoff=4),)


WORKLOAD = Numeric(
    name="sor",
    description="Poisson by red-black successive over-relaxation (stencil sweeps, fori_loop)",
    sizes={
        "tiny": dict(grid=16, sweeps=60),
        "small": dict(grid=128, sweeps=200),
        "base": dict(grid=256, sweeps=500),
    },
    build=build,
)
