"""jax-md molecular dynamics: Lennard-Jones particles in a periodic box, integrated at constant
energy (velocity Verlet, `simulate.nve`) for a few steps per run, `batch` systems at once.

Particles start on a cubic lattice at liquid density, jittered, so forces stay finite. A
simulation has no loss and runs in f32: inference variants only.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hlotune.extras import require
from hlotune.programs.corpus.base import Built, CorpusModel

SIZES = {  # cells**3 particles, all pairs (no neighbour list: time grows as particles**2)
    "tiny": dict(batch=1, cells=5, steps=4),
    "small": dict(batch=1, cells=7, steps=4),
    "base": dict(batch=2, cells=8, steps=8),
}
DENSITY = 0.8  # particles per sigma**3: a Lennard-Jones liquid
TEMPERATURE = 1.0


def _build(dtype, *, batch: int, cells: int, steps: int) -> Built:
    md = require("jax_md", "corpus", "the corpus model jax-md")
    spacing = DENSITY ** (-1 / 3)
    displacement, shift = md.space.periodic(cells * spacing)
    init_state, step = md.simulate.nve(md.energy.lennard_jones_pair(displacement), shift, dt=1e-3)

    def simulate(state):
        return jax.lax.fori_loop(0, steps, lambda _, s: step(s), state)

    def apply(params, state):
        return jax.vmap(simulate)(state)

    def init(key):
        grid = jnp.stack(jnp.meshgrid(*[jnp.arange(cells)] * 3), -1).reshape(-1, 3) * spacing
        keys = jax.random.split(key, (batch, 2))
        positions = grid + 0.05 * spacing * jax.random.normal(keys[0, 0], (batch, *grid.shape))
        state = jax.vmap(lambda k, r: init_state(k, r, kT=TEMPERATURE))(keys[:, 1], positions)
        return {}, state, None

    return Built(init, apply)


MODELS = [
    CorpusModel("jaxmd-lj", "jax-md Lennard-Jones liquid, NVE velocity Verlet steps", "jax-md",
                SIZES, _build, trainable=False, bf16=False),
]
