"""The five-point stencil on a square grid with a Dirichlet boundary, shared by the stencil
programs (heat, sor)."""

from __future__ import annotations

import jax.numpy as jnp


def neighbour_sum(u: jnp.ndarray) -> jnp.ndarray:
    """The sum of each point's four neighbours, zero outside the grid (a Dirichlet boundary):
    the off-diagonal part of the five-point Laplacian."""
    padded = jnp.pad(u, 1)
    return padded[:-2, 1:-1] + padded[2:, 1:-1] + padded[1:-1, :-2] + padded[1:-1, 2:]
