"""A Kalman filter over a time series in a lax.scan: constant-velocity tracking of a target in
`dims` dimensions (state: position and velocity) from noisy position measurements, returning
the filtered means and covariances and the data's log-likelihood."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import cho_solve

from hlotune.programs.numerics.base import Numeric

DT = 0.1
PROCESS_NOISE = 0.5  # the acceleration's spectral density
MEASUREMENT_NOISE = 0.2  # the position measurements' standard deviation


def model(dims: int) -> dict[str, np.ndarray]:
    """Transition F, process noise Q (white-noise acceleration), observation H, noise R and the
    prior (m0, P0), in float64."""
    eye, zero = np.eye(dims), np.zeros((dims, dims))
    q = PROCESS_NOISE * np.block([[DT**3 / 3 * eye, DT**2 / 2 * eye], [DT**2 / 2 * eye, DT * eye]])
    return {"F": np.block([[eye, DT * eye], [zero, eye]]), "Q": q, "H": np.hstack([eye, zero]),
            "R": MEASUREMENT_NOISE**2 * eye, "m0": np.zeros(2 * dims), "P0": np.eye(2 * dims)}


def filter_series(observations: jnp.ndarray, params: dict[str, jnp.ndarray]):
    """(filtered means (T, 2d), covariances (T, 2d, 2d), log-likelihood of the observations)."""
    F, Q, H, R = params["F"], params["Q"], params["H"], params["R"]

    def step(carry, y):
        m, P, log_likelihood = carry
        m, P = F @ m, F @ P @ F.T + Q
        S = H @ P @ H.T + R
        factor = (jnp.linalg.cholesky(S), True)
        residual = y - H @ m
        gain_t = cho_solve(factor, H @ P)  # (P H^T S^-1)^T
        m, P = m + gain_t.T @ residual, P - gain_t.T @ S @ gain_t
        log_det = 2 * jnp.sum(jnp.log(jnp.diagonal(factor[0])))
        log_likelihood -= 0.5 * (residual @ cho_solve(factor, residual) + log_det + y.size * jnp.log(2 * jnp.pi))
        return (m, P, log_likelihood), (m, P)

    init = (params["m0"], params["P0"], jnp.zeros((), observations.dtype))
    (_, _, log_likelihood), (means, covariances) = jax.lax.scan(step, init, observations)
    return means, covariances, log_likelihood


def simulate_track(dims: int, steps: int, seed: int = 0) -> np.ndarray:
    """Noisy positions of a target that follows the model: the filter's input."""
    rng, params = np.random.default_rng(seed), model(dims)
    noise = np.linalg.cholesky(params["Q"])
    state, positions = rng.standard_normal(2 * dims), []
    for _ in range(steps):
        state = params["F"] @ state + noise @ rng.standard_normal(2 * dims)
        positions.append(params["H"] @ state + MEASUREMENT_NOISE * rng.standard_normal(dims))
    return np.array(positions)


def build(*, dims: int, steps: int):
    params = {name: jnp.asarray(value, jnp.float32) for name, value in model(dims).items()}
    return filter_series, (jnp.asarray(simulate_track(dims, steps), jnp.float32), params)


WORKLOAD = Numeric(
    name="kalman",
    description="Kalman filter, constant-velocity tracking over a time series (lax.scan)",
    sizes={
        "tiny": dict(dims=2, steps=50),
        "small": dict(dims=3, steps=600),
        "base": dict(dims=6, steps=3000),
    },
    build=build,
)
