"""MuJoCo MJX rigid-body physics: one `mjx.step` of a scene of free bodies (spheres and
capsules) falling and colliding on a plane, `batch` environments at once as RL rollouts run.

The scene is MJCF written here, not a downloaded asset. The model's arrays are constants of
the program (MJX reads its static fields in Python); the simulation state is the input. A
physics step has no loss and runs in f32: inference variants only.
"""

from __future__ import annotations

import contextlib
import io

import jax

from hlotune.extras import require
from hlotune.programs.corpus.base import Built, CorpusModel

SIZES = {
    "tiny": dict(batch=2, bodies=4),
    "small": dict(batch=8, bodies=8),
    "base": dict(batch=32, bodies=12),
}


def scene(bodies: int) -> str:
    """MJCF of a plane and `bodies` free bodies on a staggered grid above it."""
    shapes = ('<geom type="sphere" size=".1"/>', '<geom type="capsule" size=".05 .15"/>')
    placed = "".join(
        f'<body pos="{(i % 4) * 0.3:.1f} {(i // 4) * 0.3:.1f} {0.5 + 0.2 * i:.1f}">'
        f"<freejoint/>{shapes[i % 2]}</body>"
        for i in range(bodies)
    )
    return (f'<mujoco><worldbody><geom type="plane" size="5 5 .1"/>{placed}'
            "</worldbody></mujoco>")


def _build(dtype, *, batch: int, bodies: int) -> Built:
    mujoco = require("mujoco", "corpus", "the corpus model mjx")
    with contextlib.redirect_stdout(io.StringIO()):  # MJX prints that its optional warp backend is absent
        mjx = require("mujoco.mjx", "corpus", "the corpus model mjx")
    model = mjx.put_model(mujoco.MjModel.from_xml_string(scene(bodies)))

    def apply(params, data):
        return jax.vmap(mjx.step, in_axes=(None, 0))(model, data)

    def init(key):
        data = mjx.make_data(model)
        velocities = 0.5 * jax.random.normal(key, (batch, model.nv))
        return {}, jax.vmap(lambda v: data.replace(qvel=v))(velocities), None

    return Built(init, apply)


MODELS = [
    CorpusModel("mjx-bodies", "MuJoCo MJX step: free spheres and capsules colliding on a plane",
                "mujoco-mjx", SIZES, _build, trainable=False, bf16=False),
]
