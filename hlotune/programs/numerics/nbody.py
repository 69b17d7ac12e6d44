"""Gravitational N-body integration: all-pairs forces with Plummer softening, stepped by velocity
Verlet (kick-drift-kick), which conserves energy to O(dt**2) and momentum to rounding, in a
lax.fori_loop. Units with G = 1 and total mass 1."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from hlotune.programs.numerics.base import Numeric

SOFTENING = 0.1  # Plummer length: keeps close encounters finite, so float rounding stays tame
DT = 1e-3


def accelerations(positions: jnp.ndarray, masses: jnp.ndarray) -> jnp.ndarray:
    """a_i = sum_j m_j (r_j - r_i) / (|r_j - r_i|**2 + SOFTENING**2)**1.5 (the j = i term is zero)."""
    separation = positions[None, :, :] - positions[:, None, :]
    inverse_cube = (jnp.sum(separation**2, axis=-1) + SOFTENING**2) ** -1.5
    return jnp.einsum("ij,ijk->ik", masses[None, :] * inverse_cube, separation)


def simulate(positions, velocities, masses, *, steps: int):
    """Positions and velocities after `steps` Verlet steps of DT."""

    def step(_, state):
        x, v, a = state
        v = v + 0.5 * DT * a
        x = x + DT * v
        a = accelerations(x, masses)
        return x, v + 0.5 * DT * a, a

    x, v, _ = jax.lax.fori_loop(0, steps, step, (positions, velocities, accelerations(positions, masses)))
    return x, v


def build(*, bodies: int, steps: int):
    """A cluster: Gaussian positions of unit scale, virial-scale random velocities, masses within
    a factor of three of each other, at rest as a whole."""
    rng = np.random.default_rng(0)
    masses = rng.uniform(0.5, 1.5, bodies)
    masses /= masses.sum()
    velocities = rng.standard_normal((bodies, 3)) * 0.5
    velocities -= masses @ velocities
    args = (rng.standard_normal((bodies, 3)), velocities, masses)
    return partial(simulate, steps=steps), tuple(jnp.asarray(a, jnp.float32) for a in args)


WORKLOAD = Numeric(
    name="nbody",
    description="gravitational n-body, softened all-pairs forces, velocity Verlet (fori_loop)",
    sizes={
        "tiny": dict(bodies=32, steps=200),
        "small": dict(bodies=256, steps=5),
        "base": dict(bodies=512, steps=10),
    },
    build=build,
)
