"""The numerics programs compute what theory or an independent numpy implementation says, each
at size tiny, and every one loads by spec and lowers to HLO as `hlotune tune numerics:...` does."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import compile_and_run
from hlotune.errors import HlotuneError
from hlotune.hlo.sources import from_jax
from hlotune.programs import load_program
from hlotune.programs.numerics import NUMERICS, cg, heat, kalman, montecarlo, nbody, sor, spectral

# An op each program's HLO must hold: its loop stays a loop, its FFT an FFT.
SIGNATURE_OP = {"heat": "while", "nbody": "while", "spectral": "fft", "cg": "while",
                "montecarlo": "exponential", "kalman": "while", "sor": "while"}


def _tiny(workload):
    fn, args = workload.program("tiny")
    return compile_and_run(fn, args), args


def _relative_error(actual, expected) -> float:
    expected = np.asarray(expected, np.float64)
    return float(np.abs(np.asarray(actual, np.float64) - expected).max() / np.abs(expected).max())


def _grid_mode(n: int, kx: int, ky: int) -> np.ndarray:
    """sin(kx π x) sin(ky π y) at the interior points (i / (n + 1), j / (n + 1)), x the last axis."""
    points = np.arange(1, n + 1) / (n + 1)
    return np.sin(ky * np.pi * points)[:, None] * np.sin(kx * np.pi * points)[None, :]


def _dirichlet_laplacian(n: int) -> np.ndarray:
    """-∇² by five points on the n x n interior grid of the unit square, dense, in float64."""
    second = 2 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)
    return (np.kron(np.eye(n), second) + np.kron(second, np.eye(n))) * (n + 1) ** 2


def test_heat_matches_a_numpy_stencil_loop():
    u, (u0,) = _tiny(heat.WORKLOAD)
    expected = np.asarray(u0, np.float64)
    for _ in range(heat.WORKLOAD.sizes["tiny"]["steps"]):
        padded = np.pad(expected, 1)
        neighbours = padded[:-2, 1:-1] + padded[2:, 1:-1] + padded[1:-1, :-2] + padded[1:-1, 2:]
        expected = expected + heat.COURANT * (neighbours - 4 * expected)
    assert _relative_error(u, expected) < 1e-5


def test_heat_decays_a_fourier_mode_as_the_equation_says():
    """sin(πx) sin(πy) is an eigenvector of the scheme: it decays by 1 - 8 r sin²(πh/2) a step,
    close to the continuum's exp(-2π² t)."""
    n, steps = heat.WORKLOAD.sizes["tiny"]["grid"], heat.WORKLOAD.sizes["tiny"]["steps"]
    fn, _ = heat.WORKLOAD.program("tiny")
    mode = _grid_mode(n, 1, 1)
    u = compile_and_run(fn, (jnp.asarray(mode, jnp.float32),))
    h = 1 / (n + 1)
    discrete = (1 - 8 * heat.COURANT * math.sin(math.pi * h / 2) ** 2) ** steps
    assert _relative_error(u, discrete * mode) < 1e-5
    continuum = math.exp(-2 * math.pi**2 * steps * heat.COURANT * h**2)
    assert _relative_error(u, continuum * mode) < 5e-3 and continuum < 0.9


def _nbody_energy(positions, velocities, masses) -> float:
    x, v, m = (np.asarray(a, np.float64) for a in (positions, velocities, masses))
    distance = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1) + nbody.SOFTENING**2)
    pairs = np.triu(np.outer(m, m) / distance, k=1).sum()
    return 0.5 * (m * (v**2).sum(-1)).sum() - pairs


def test_nbody_conserves_energy_and_momentum():
    (x, v), (x0, v0, masses) = _tiny(nbody.WORKLOAD)
    before, after = _nbody_energy(x0, v0, masses), _nbody_energy(x, v, masses)
    kinetic_change = abs(0.5 * float(masses @ ((v**2).sum(-1) - (v0**2).sum(-1))))
    assert abs(after - before) < 1e-5 * abs(before) < 0.01 * kinetic_change
    momentum = np.asarray(masses, np.float64) @ np.asarray(v, np.float64)
    assert np.abs(momentum).max() < 1e-6 * float(masses @ np.abs(v).sum(-1))


def test_nbody_accelerations_match_a_pairwise_loop():
    _, (x0, _, masses) = nbody.WORKLOAD.program("tiny")
    x, m = np.asarray(x0, np.float64), np.asarray(masses, np.float64)
    expected = np.zeros_like(x)
    for i in range(len(x)):
        for j in range(len(x)):
            d = x[j] - x[i]
            expected[i] += m[j] * d / (d @ d + nbody.SOFTENING**2) ** 1.5
    assert _relative_error(nbody.accelerations(x0, masses), expected) < 1e-5


def _periodic_mode(n: int, kx: int, ky: int) -> np.ndarray:
    points = 2 * np.pi * np.arange(n) / n
    return np.sin(ky * points)[:, None] * np.sin(kx * points)[None, :]


def test_spectral_decays_a_taylor_green_vortex_exactly():
    """ω = (kx² + ky²) sin(kx x) sin(ky y) is steady for the nonlinear term (ω is a multiple of
    ψ) and decays as exp(-ν (kx² + ky²) t)."""
    n, steps = spectral.WORKLOAD.sizes["tiny"]["grid"], spectral.WORKLOAD.sizes["tiny"]["steps"]
    fn, _ = spectral.WORKLOAD.program("tiny")
    k2 = 3**2 + 5**2
    vortex = k2 * _periodic_mode(n, 3, 5)
    w = compile_and_run(fn, (jnp.asarray(vortex, jnp.float32),))
    decay = math.exp(-spectral.VISCOSITY * k2 * steps * spectral.DT)
    assert _relative_error(w, decay * vortex) < 1e-5 and decay < 0.95


def _energy_and_enstrophy(w: np.ndarray) -> tuple[float, float]:
    """Kinetic energy ½<|u|²> = ½ Σ |ω̂|²/k² and enstrophy ½<ω²> per unit area."""
    n = w.shape[0]
    w_hat = np.fft.fft2(np.asarray(w, np.float64)) / n**2
    k = np.fft.fftfreq(n, 1 / n)
    k2 = k[:, None] ** 2 + k[None, :] ** 2
    power = np.abs(w_hat) ** 2
    return 0.5 * (power[k2 > 0] / k2[k2 > 0]).sum(), 0.5 * power.sum()


def test_spectral_advection_conserves_energy_that_viscosity_dissipates():
    """dE/dt = -2νZ: advection moves energy between scales but adds none, so the energy budget
    of a random flow closes while its vorticity goes far from pure diffusion's."""
    steps = spectral.WORKLOAD.sizes["tiny"]["steps"]
    one_step = jax.jit(lambda w: spectral.simulate(w, steps=1))
    _, (w,) = spectral.WORKLOAD.program("tiny")
    history = [np.asarray(w)]
    for _ in range(steps):
        history.append(np.asarray(w := one_step(w)))
    energy, enstrophy = np.array([_energy_and_enstrophy(w) for w in history]).T
    dissipated = 2 * spectral.VISCOSITY * spectral.DT * (enstrophy[1:] + enstrophy[:-1]).sum() / 2
    assert abs(energy[0] - energy[-1] - dissipated) < 1e-3 * dissipated
    n = history[0].shape[0]
    k = np.fft.fftfreq(n, 1 / n)
    diffusion = np.exp(-spectral.VISCOSITY * (k[:, None] ** 2 + k[None, :] ** 2) * steps * spectral.DT)
    diffused = np.fft.ifft2(np.fft.fft2(history[0]) * diffusion).real
    assert _relative_error(history[-1], diffused) > 0.05


def _darcy_matrix(k: np.ndarray) -> np.ndarray:
    """The finite-volume matrix cell by cell: for each face, the harmonic mean of its two cells'
    permeability, or 2k to the boundary's p = 0."""
    n = k.shape[0]
    matrix = np.zeros((n * n, n * n))
    for i in range(n):
        for j in range(n):
            for a, b in ((i - 1, j), (i + 1, j), (i, j - 1), (i, j + 1)):
                inside = 0 <= a < n and 0 <= b < n
                face = 2 * k[i, j] * k[a, b] / (k[i, j] + k[a, b]) if inside else 2 * k[i, j]
                matrix[i * n + j, i * n + j] += face
                if inside:
                    matrix[i * n + j, a * n + b] -= face
    return matrix


def test_cg_solves_darcy_flow_as_a_dense_solve_does():
    p, (k, f) = _tiny(cg.WORKLOAD)
    matrix, rhs = _darcy_matrix(np.asarray(k, np.float64)), np.asarray(f, np.float64).ravel()
    solution = np.asarray(p, np.float64).ravel()
    assert np.linalg.norm(matrix @ solution - rhs) < 1e-4 * np.linalg.norm(rhs)
    assert _relative_error(solution, np.linalg.solve(matrix, rhs)) < 1e-4


def test_cg_stays_finite_long_after_it_converges():
    _, (k, f) = cg.WORKLOAD.program("tiny")
    assert np.isfinite(compile_and_run(lambda k, f: cg.solve(k, f, iterations=2000), (k, f))).all()


def _black_scholes_call(spot, strike, rate, volatility, maturity) -> float:
    d1 = (math.log(spot / strike) + (rate + volatility**2 / 2) * maturity) / (volatility * math.sqrt(maturity))
    d2 = d1 - volatility * math.sqrt(maturity)
    return spot * _normal_cdf(d1) - strike * math.exp(-rate * maturity) * _normal_cdf(d2)


def _normal_cdf(x: float) -> float:
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


def test_montecarlo_prices_a_european_call_as_black_scholes_does():
    prices, _ = _tiny(montecarlo.WORKLOAD)
    european, error = (float(a) for a in prices["european"])
    exact = _black_scholes_call(**montecarlo.MARKET)
    assert 0 < error < 0.05 * exact and abs(european - exact) < 4 * error
    asian, asian_error = (float(a) for a in prices["asian"])
    assert 0 < asian < european and 0 < asian_error < error  # averaging lowers the volatility


def test_kalman_matches_a_numpy_filter():
    (means, covariances, log_likelihood), (ys, _) = _tiny(kalman.WORKLOAD)
    params = kalman.model(kalman.WORKLOAD.sizes["tiny"]["dims"])
    F, Q, H, R = params["F"], params["Q"], params["H"], params["R"]
    m, P, expected_ll, expected_means, expected_covariances = params["m0"], params["P0"], 0.0, [], []
    for y in np.asarray(ys, np.float64):
        m, P = F @ m, F @ P @ F.T + Q
        S = H @ P @ H.T + R
        gain = P @ H.T @ np.linalg.inv(S)
        residual = y - H @ m
        m, P = m + gain @ residual, (np.eye(len(m)) - gain @ H) @ P
        expected_ll -= 0.5 * (residual @ np.linalg.solve(S, residual) + np.log(np.linalg.det(2 * np.pi * S)))
        expected_means.append(m)
        expected_covariances.append(P)
    assert _relative_error(means, expected_means) < 1e-4
    assert _relative_error(covariances, expected_covariances) < 1e-4
    assert abs(float(log_likelihood) - expected_ll) < 1e-4 * abs(expected_ll)


def test_sor_residual_falls_to_the_dense_solution():
    u, (f,) = _tiny(sor.WORKLOAD)
    n = f.shape[0]
    laplacian, rhs = _dirichlet_laplacian(n), np.asarray(f, np.float64).ravel()
    residuals = [np.linalg.norm(laplacian @ np.asarray(sor.solve(f, sweeps=s), np.float64).ravel() - rhs)
                 for s in (1, 4, 16)]
    assert residuals[0] > residuals[1] > residuals[2] > 0
    assert _relative_error(u.ravel(), np.linalg.solve(laplacian, rhs)) < 1e-5


@pytest.mark.parametrize("name", sorted(NUMERICS))
def test_every_program_loads_by_spec_and_lowers_to_hlo(name):
    program = load_program(f"numerics:{name}@small", abstract=True)
    assert (program.name, program.slug) == (f"numerics:{name}@small", f"{name}@small")
    graph = from_jax(program.fn, *program.args)
    assert SIGNATURE_OP[name] in {inst.opcode for inst in graph.instructions}


def test_a_numerics_spec_names_a_size_only():
    with pytest.raises(HlotuneError, match="no batch"):
        load_program("numerics:heat@tiny-b2")
    with pytest.raises(HlotuneError, match="unknown variant"):
        load_program("numerics:heat@tiny-train")
