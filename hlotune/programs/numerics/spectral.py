"""Two-dimensional incompressible Navier-Stokes in vorticity form on the periodic square
[0, 2π)², ω_t + u·∇ω = ν∇²ω, solved pseudo-spectrally: derivatives and the streamfunction in
Fourier space (jnp.fft), the advection product on the grid with 2/3-rule dealiasing, and
classic fourth-order Runge-Kutta steps in a lax.fori_loop."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from hlotune.programs.numerics.base import Numeric
from hlotune.programs.numerics.fields import random_field

VISCOSITY = 1e-2
DT = 1e-2  # well inside the advective CFL limit for unit-scale vorticity on these grids


def _wavenumbers(n: int):
    """(ky, kx, k², dealiasing mask) on rfft2's half spectrum: x is the last axis."""
    ky = jnp.fft.fftfreq(n, 1 / n)[:, None]
    kx = jnp.fft.rfftfreq(n, 1 / n)[None, :]
    k2 = kx**2 + ky**2
    keep = (jnp.abs(kx) < n / 3) & (jnp.abs(ky) < n / 3)
    return ky, kx, k2, keep


def _tendency(w_hat: jnp.ndarray, n: int) -> jnp.ndarray:
    """dω̂/dt: the dealiased advection -(u ω_x + v ω_y) plus diffusion -ν k² ω̂, with
    u = ψ_y, v = -ψ_x and ψ̂ = ω̂ / k² (the mean mode has no flow)."""
    ky, kx, k2, keep = _wavenumbers(n)
    psi_hat = w_hat / jnp.where(k2 == 0, 1, k2)
    fields = jnp.fft.irfft2(jnp.stack([1j * ky * psi_hat, -1j * kx * psi_hat, 1j * kx * w_hat, 1j * ky * w_hat]),
                            s=(n, n))
    u, v, w_x, w_y = fields
    advection = jnp.fft.rfft2(u * w_x + v * w_y)
    return -jnp.where(keep, advection, 0) - VISCOSITY * k2 * w_hat


def _rk4_step(w_hat: jnp.ndarray, n: int) -> jnp.ndarray:
    k1 = _tendency(w_hat, n)
    k2 = _tendency(w_hat + 0.5 * DT * k1, n)
    k3 = _tendency(w_hat + 0.5 * DT * k2, n)
    k4 = _tendency(w_hat + DT * k3, n)
    return w_hat + DT / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def simulate(vorticity: jnp.ndarray, *, steps: int) -> jnp.ndarray:
    """The vorticity on the grid after `steps` steps of DT."""
    n = vorticity.shape[-1]
    w_hat = jax.lax.fori_loop(0, steps, lambda _, w: _rk4_step(w, n), jnp.fft.rfft2(vorticity))
    return jnp.fft.irfft2(w_hat, s=(n, n))


def build(*, grid: int, steps: int):
    return partial(simulate, steps=steps), (random_field(seed=0, n=grid, cutoff=4),)


WORKLOAD = Numeric(
    name="spectral",
    description="2-D Navier-Stokes vorticity, pseudo-spectral (FFT) with RK4 steps (fori_loop)",
    sizes={
        "tiny": dict(grid=32, steps=20),
        "small": dict(grid=64, steps=16),
        "base": dict(grid=128, steps=32),
    },
    build=build,
)
