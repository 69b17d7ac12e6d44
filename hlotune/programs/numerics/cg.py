"""Darcy flow: the pressure p of -∇·(k ∇p) = f on the unit square, p = 0 on its boundary, with
a heterogeneous (log-normal) permeability k. Cell-centred finite volumes give a sparse
symmetric positive-definite system, applied matrix-free and solved by conjugate gradients with
a Jacobi (diagonal) preconditioner for a fixed number of iterations in a lax.fori_loop."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from hlotune.programs.numerics.base import Numeric
from hlotune.programs.numerics.fields import random_field

LOG_PERMEABILITY_STD = 1.0  # k spans about two orders of magnitude


def transmissibilities(k: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Face coefficients in x (n, n+1) and y (n+1, n): the harmonic mean of the two cells' k
    (flux continuity across the face), and on the boundary 2k, the half cell to p = 0."""
    boundary_x, boundary_y = 2 * k[:, :1], 2 * k[:1, :]
    inner_x = 2 * k[:, 1:] * k[:, :-1] / (k[:, 1:] + k[:, :-1])
    inner_y = 2 * k[1:] * k[:-1] / (k[1:] + k[:-1])
    tx = jnp.concatenate([boundary_x, inner_x, 2 * k[:, -1:]], axis=1)
    ty = jnp.concatenate([boundary_y, inner_y, 2 * k[-1:]], axis=0)
    return tx, ty


def _operator(tx: jnp.ndarray, ty: jnp.ndarray, p: jnp.ndarray) -> jnp.ndarray:
    """A p: each cell's net outflow, the sum over its faces of t (p_cell - p_neighbour)."""
    flux_x = tx * jnp.diff(jnp.pad(p, ((0, 0), (1, 1))), axis=1)
    flux_y = ty * jnp.diff(jnp.pad(p, ((1, 1), (0, 0))), axis=0)
    return flux_x[:, :-1] - flux_x[:, 1:] + flux_y[:-1] - flux_y[1:]


def solve(k: jnp.ndarray, f: jnp.ndarray, *, iterations: int) -> jnp.ndarray:
    """p after `iterations` steps of Jacobi-preconditioned CG from p = 0; f is the source
    integrated over each cell (h² times its density)."""
    tx, ty = transmissibilities(k)
    apply = partial(_operator, tx, ty)
    diagonal = tx[:, :-1] + tx[:, 1:] + ty[:-1] + ty[1:]

    def step(_, state):
        p, r, d, rz = state
        ad = apply(d)
        alpha = _ratio(rz, jnp.vdot(d, ad))
        p, r = p + alpha * d, r - alpha * ad
        z = r / diagonal
        rz_next = jnp.vdot(r, z)
        return p, r, z + _ratio(rz_next, rz) * d, rz_next

    z = f / diagonal
    p, *_ = jax.lax.fori_loop(0, iterations, step, (jnp.zeros_like(f), f, z, jnp.vdot(f, z)))
    return p


def _ratio(numerator: jnp.ndarray, denominator: jnp.ndarray) -> jnp.ndarray:
    """numerator / denominator, but 0 once the denominator is 0: the recurrence's residual
    keeps shrinking after convergence until it underflows, and 0 / 0 would turn p into NaN."""
    return jnp.where(denominator > 0, numerator / jnp.where(denominator > 0, denominator, 1), 0)


def build(*, grid: int, iterations: int):
    """A smooth log-normal permeability and a uniform source of total 1."""
    k = jnp.exp(LOG_PERMEABILITY_STD * random_field(seed=0, n=grid, cutoff=grid / 8))
    return partial(solve, iterations=iterations), (k, jnp.full((grid, grid), 1 / grid**2, jnp.float32))


WORKLOAD = Numeric(
    name="cg",
    description="Darcy flow, Jacobi-preconditioned conjugate gradients (fori_loop)",
    sizes={
        "tiny": dict(grid=16, iterations=80),
        "small": dict(grid=96, iterations=300),
        "base": dict(grid=160, iterations=500),
    },
    build=build,
)
