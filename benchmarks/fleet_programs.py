"""The simulated fleet's programs: JAX code as users write it, of real size (2 ms a run or more
on 2 cores), from families no shipped model or portfolio was built on.

Each program is a factory returning (function, example arguments); the fleet benchmark jits the
function with `hlotune.jit` and `jax.jit` in worker processes. Run as a script, it lists the
fleet with each program's jax.jit time a call here. Families: stencils written with
jnp.roll and jnp.diff (the shape of the slow CPU programs users report), clustering, training
steps (optax, flax, equinox; one a transformer), ODE and N-body integration and iterative
solvers (diffrax, optimistix), MCMC and variational inference (blackjax, numpyro), dense linear
algebra (LAPACK-backed), signal processing, graphs (segment sums) and data processing (sorts,
histograms): 30 programs of 9 families. The libraries are the benchmark's requirements, not
hlotune's: `pip install diffrax blackjax equinox numpyro optimistix` (measured with diffrax
0.7.2, blackjax 1.7.1, equinox 0.13.8, numpyro 0.22.0, optimistix 0.1.0).

    python benchmarks/fleet_programs.py
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp


@dataclass(frozen=True)
class FleetProgram:
    name: str
    family: str
    make: Callable[[], tuple[Callable, tuple]]


def _key(i: int):
    return jax.random.key(i)


LIBRARIES = "diffrax blackjax equinox numpyro optimistix"


def _library(name: str):
    """A library a program is written with, or a one-line exit saying how to install it."""
    try:
        return importlib.import_module(name)
    except ImportError:
        raise SystemExit(f"fleet_programs.py: the fleet needs {name}: pip install {LIBRARIES}") from None


# Stencils


def euler2d():
    """A 2-D compressible Euler finite-volume step (Rusanov fluxes) built from jnp.roll."""
    def step(q):
        for _ in range(4):
            rho, mx, my, e = q
            u, v = mx / rho, my / rho
            p = 0.4 * (e - 0.5 * rho * (u * u + v * v))
            c = jnp.sqrt(1.4 * p / rho)
            fluxes = []
            for axis, vel in ((0, u), (1, v)):
                f = jnp.stack([rho * vel, mx * vel + p * (axis == 0), my * vel + p * (axis == 1), (e + p) * vel])
                right_q, right_f = jnp.roll(q, -1, axis + 1), jnp.roll(f, -1, axis + 1)
                speed = jnp.maximum(jnp.abs(vel) + c, jnp.roll(jnp.abs(vel) + c, -1, axis))
                flux = 0.5 * (f + right_f) - 0.5 * speed * (right_q - q)
                fluxes.append(flux - jnp.roll(flux, 1, axis + 1))
            q = q - 0.1 * (fluxes[0] + fluxes[1])
        return q

    x = jnp.linspace(0, 1, 256)
    rho = 1.0 + 0.2 * jnp.exp(-((x[:, None] - 0.5) ** 2 + (x[None, :] - 0.5) ** 2) * 50)
    q = jnp.stack([rho, 0.1 * rho, jnp.zeros_like(rho), 2.5 + 0.5 * rho])
    return step, (q,)


def tv3d():
    """The gradient of a smoothed 3-D total-variation regulariser, built from jnp.diff."""
    def tv(volume):
        dx, dy, dz = (jnp.diff(volume, axis=a, append=0.0) for a in range(3))
        return jnp.sum(jnp.sqrt(dx * dx + dy * dy + dz * dz + 1e-6))

    gradient = jax.grad(tv)
    return gradient, (jax.random.normal(_key(1), (96, 96, 96)),)


def jacobi2d():
    """Twenty Jacobi sweeps of a 2-D Poisson problem, written with jnp.roll."""
    def sweeps(u, f):
        for _ in range(20):
            u = 0.25 * (jnp.roll(u, 1, 0) + jnp.roll(u, -1, 0) + jnp.roll(u, 1, 1) + jnp.roll(u, -1, 1) - f)
        return u

    return sweeps, (jnp.zeros((512, 512)), jax.random.normal(_key(2), (512, 512)))


def wave2d():
    """A leapfrog 2-D wave equation, ten steps, with slicing and padding."""
    def steps(u, u_prev):
        for _ in range(10):
            lap = jnp.pad(u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4 * u[1:-1, 1:-1], 1)
            u, u_prev = 2 * u - u_prev + 0.1 * lap, u
        return u, u_prev

    u = jax.random.normal(_key(3), (768, 768))
    return steps, (u, u)


def heat3d():
    """Explicit 3-D heat diffusion, eight steps, with slicing and concatenation."""
    def steps(u):
        for _ in range(8):
            inner = (u[2:, 1:-1, 1:-1] + u[:-2, 1:-1, 1:-1] + u[1:-1, 2:, 1:-1] + u[1:-1, :-2, 1:-1]
                     + u[1:-1, 1:-1, 2:] + u[1:-1, 1:-1, :-2] - 6 * u[1:-1, 1:-1, 1:-1])
            u = u.at[1:-1, 1:-1, 1:-1].add(0.1 * inner)
        return u

    return steps, (jax.random.normal(_key(23), (64, 64, 64)),)


# Clustering


def kmeans():
    """One k-means (Lloyd) step."""
    def step(points, centroids):
        distances = (jnp.sum(points**2, 1)[:, None] - 2 * points @ centroids.T
                     + jnp.sum(centroids**2, 1)[None, :])
        onehot = jax.nn.one_hot(jnp.argmin(distances, 1), centroids.shape[0], dtype=points.dtype)
        counts = jnp.maximum(onehot.sum(0), 1.0)[:, None]
        return (onehot.T @ points) / counts, jnp.min(distances, 1).sum()

    points = jax.random.normal(_key(4), (16384, 32))
    return step, (points, points[:128])


def gmm_em():
    """One EM step of a diagonal Gaussian mixture."""
    def step(x, means, log_vars, log_weights):
        var = jnp.exp(log_vars)
        log_p = (-0.5 * jnp.sum((x[:, None, :] - means) ** 2 / var + log_vars, -1) + log_weights)
        resp = jax.nn.softmax(log_p, 1)
        weight = resp.sum(0) + 1e-6
        means = resp.T @ x / weight[:, None]
        variances = resp.T @ (x * x) / weight[:, None] - means**2 + 1e-3
        return means, jnp.log(variances), jnp.log(weight / x.shape[0])

    x = jax.random.normal(_key(5), (16384, 16))
    return step, (x, x[:32], jnp.zeros((32, 16)), jnp.full(32, -jnp.log(32.0)))


# Training steps


def mlp_adam():
    """An MLP regression step with optax's Adam state."""
    import optax

    optimizer = optax.adam(1e-3)
    keys = jax.random.split(_key(6), 4)
    params = [(jax.random.normal(k, (256, 256)) / 16, jnp.zeros(256)) for k in keys[:3]]

    def loss(params, x, y):
        for w, b in params[:-1]:
            x = jax.nn.gelu(x @ w + b)
        w, b = params[-1]
        return jnp.mean((x @ w + b - y) ** 2)

    def step(params, state, x, y):
        grads = jax.grad(loss)(params, x, y)
        updates, state = optimizer.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    x, y = jax.random.normal(keys[3], (512, 256)), jnp.ones((512, 256))
    return step, (params, optimizer.init(params), x, y)


def cnn_sgd():
    """A flax linen CNN classifier step with optax SGD with momentum."""
    import flax.linen as nn
    import optax

    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.Conv(32, (3, 3))(x))
            x = nn.avg_pool(x, (2, 2), (2, 2))
            x = nn.relu(nn.Conv(64, (3, 3))(x))
            return nn.Dense(10)(x.mean((1, 2)))

    model, optimizer = CNN(), optax.sgd(0.01, momentum=0.9)
    images, labels = jax.random.normal(_key(7), (32, 32, 32, 3)), jnp.arange(32) % 10
    params = model.init(_key(8), images)

    def step(params, state, images, labels):
        def loss(params):
            logits = model.apply(params, images)
            return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

        grads = jax.grad(loss)(params)
        updates, state = optimizer.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    return step, (params, optimizer.init(params), images, labels)


def attention_adamw():
    """A single-head self-attention block's training step with AdamW."""
    import optax

    optimizer = optax.adamw(1e-3)
    keys = jax.random.split(_key(9), 5)
    params = {name: jax.random.normal(k, (128, 128)) / 12 for name, k in zip("qkvo", keys)}

    def loss(params, x):
        q, k, v = x @ params["q"], x @ params["k"], x @ params["v"]
        attended = jax.nn.softmax(q @ k.swapaxes(-1, -2) / 11.3, -1) @ v
        return jnp.mean((attended @ params["o"] - x) ** 2)

    def step(params, state, x):
        grads = jax.grad(loss)(params, x)
        updates, state = optimizer.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    return step, (params, optimizer.init(params), jax.random.normal(keys[4], (8, 256, 128)))


# ODEs and iterative solvers


def rk4_lorenz96():
    """64 RK4 steps of a batch of Lorenz-96 systems, a lax.scan."""
    def field(x):
        return (jnp.roll(x, -1, -1) - jnp.roll(x, 2, -1)) * jnp.roll(x, 1, -1) - x + 8.0

    def integrate(x):
        def rk4(x, _):
            k1 = field(x)
            k2 = field(x + 0.005 * k1)
            k3 = field(x + 0.005 * k2)
            k4 = field(x + 0.01 * k3)
            return x + 0.01 / 6 * (k1 + 2 * k2 + 2 * k3 + k4), None

        return jax.lax.scan(rk4, x, None, length=64)[0]

    return integrate, (8.0 + jax.random.normal(_key(10), (256, 64)),)


def cg_poisson():
    """jax.scipy's conjugate gradient on a 2-D Laplacian given as a function."""
    def laplacian(u):
        return 4 * u - jnp.roll(u, 1, 0) - jnp.roll(u, -1, 0) - jnp.roll(u, 1, 1) - jnp.roll(u, -1, 1) + 0.01 * u

    def solve(b):
        return jax.scipy.sparse.linalg.cg(laplacian, b, maxiter=60)[0]

    return solve, (jax.random.normal(_key(11), (256, 256)),)


def newton_logistic():
    """Four Newton steps of an L2-regularised logistic regression (Hessian solves)."""
    def fit(w, x, y):
        for _ in range(4):
            p = jax.nn.sigmoid(x @ w)
            grad = x.T @ (p - y) + 0.1 * w
            hessian = (x.T * (p * (1 - p))) @ x + 0.1 * jnp.eye(w.shape[0])
            w = w - jnp.linalg.solve(hessian, grad)
        return w

    x = jax.random.normal(_key(24), (8192, 128))
    return fit, (jnp.zeros(128), x, (x[:, 0] > 0).astype(jnp.float32))


# Samplers


def hmc_logistic():
    """A 32-step HMC leapfrog trajectory on a Bayesian logistic regression posterior."""
    x = jax.random.normal(_key(12), (4096, 64))
    y = (x @ jnp.linspace(-1, 1, 64) > 0).astype(jnp.float32)

    def log_density(w, x, y):
        logits = x @ w
        return jnp.sum(y * logits - jax.nn.softplus(logits)) - 0.5 * jnp.sum(w * w)

    def trajectory(w, momentum, x, y):
        grad = jax.grad(log_density)

        def leapfrog(state, _):
            w, p = state
            p = p + 0.0005 * grad(w, x, y)
            w = w + 0.001 * p
            return (w, p + 0.0005 * grad(w, x, y)), None

        return jax.lax.scan(leapfrog, (w, momentum), None, length=16)[0]

    return trajectory, (jnp.zeros(64), jax.random.normal(_key(13), (64,)), x, y)


def langevin_gmm():
    """Unadjusted Langevin steps of 1024 chains on a Gaussian-mixture density."""
    means = jax.random.normal(_key(14), (16, 8)) * 3

    def step(z, noise):
        def log_density(z):
            return jax.nn.logsumexp(-0.5 * jnp.sum((z[:, None, :] - means) ** 2, -1), -1).sum()

        for i in range(8):
            z = z + 0.01 * jax.grad(log_density)(z) + 0.14 * noise[i]
        return z

    return step, (jax.random.normal(_key(15), (1024, 8)), jax.random.normal(_key(16), (8, 1024, 8)))


def nbody_steps():
    """Leapfrog steps of a softened all-pairs gravitational N-body system."""
    def steps(pos, vel):
        for _ in range(4):
            delta = pos[None, :, :] - pos[:, None, :]
            inv = (jnp.sum(delta * delta, -1) + 0.01) ** -1.5
            vel = vel + 0.001 * jnp.sum(delta * inv[..., None], 1)
            pos = pos + 0.001 * vel
        return pos, vel

    return steps, (jax.random.normal(_key(25), (512, 3)), jnp.zeros((512, 3)))


# Dense linear algebra (LAPACK custom calls)


def batched_solve():
    """A batch of dense 96x96 linear solves (LU, LAPACK)."""
    a = jax.random.normal(_key(17), (128, 96, 96)) + 12 * jnp.eye(96)
    return jnp.linalg.solve, (a, jax.random.normal(_key(18), (128, 96, 1)))


def gp_likelihood():
    """A Gaussian-process log marginal likelihood: RBF kernel, Cholesky, triangular solves."""
    def nll(log_scale, x, y):
        d = jnp.sum((x[:, None, :] - x[None, :, :]) ** 2, -1)
        k = jnp.exp(-0.5 * d / jnp.exp(2 * log_scale)) + 0.1 * jnp.eye(x.shape[0])
        chol = jnp.linalg.cholesky(k)
        alpha = jax.scipy.linalg.cho_solve((chol, True), y)
        return 0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diag(chol)))

    x = jax.random.normal(_key(19), (384, 4))
    return jax.value_and_grad(nll), (jnp.array(0.0), x, jnp.sin(x.sum(1)))


# Signal processing


def fft_convolve():
    """Batched FFT convolution of long signals with a filter bank."""
    def convolve(signals, filters):
        n = signals.shape[-1] + filters.shape[-1] - 1
        spectrum = jnp.fft.rfft(signals, n)[:, None, :] * jnp.fft.rfft(filters, n)[None]
        return jnp.fft.irfft(spectrum, n)

    return convolve, (jax.random.normal(_key(20), (32, 8192)), jax.random.normal(_key(21), (16, 257)))


def spectrogram():
    """Magnitude spectrograms of a batch of signals (framing, Hann window, rfft, log)."""
    def stft(signals):
        frames = jnp.stack([signals[:, i:i + 512] for i in range(0, signals.shape[1] - 512, 128)], 1)
        return jnp.log1p(jnp.abs(jnp.fft.rfft(frames * jnp.hanning(512), axis=-1)))

    return stft, (jax.random.normal(_key(22), (16, 16384)),)


# Written with maintained libraries (the fleet grew from 20 by these two, placed last so that
# each earlier program keeps its call rate in every draw)


def diffrax_lorenz():
    """diffrax: 512 Lorenz systems to t=2 by Tsit5 with adaptive (PID) steps, vmapped.

    With EQX_ON_ERROR=nan, as `hlotune fleet status` advises for it: equinox's runtime checks are
    host callbacks, which jax.export cannot serialise, so hlotune.jit could not record it."""
    os.environ.setdefault("EQX_ON_ERROR", "nan")  # read when equinox is first imported
    diffrax = _library("diffrax")

    def field(t, y, sigma):
        return jnp.stack([sigma * (y[1] - y[0]), y[0] * (28.0 - y[2]) - y[1], y[0] * y[1] - 8 / 3 * y[2]])

    def solve_one(y0, sigma):
        solution = diffrax.diffeqsolve(
            diffrax.ODETerm(field), diffrax.Tsit5(), t0=0.0, t1=2.0, dt0=0.01, y0=y0, args=sigma,
            stepsize_controller=diffrax.PIDController(rtol=1e-5, atol=1e-7), max_steps=4096,
            saveat=diffrax.SaveAt(ts=jnp.linspace(0.0, 2.0, 16)))
        return solution.ys

    y0 = jnp.array([1.0, 1.0, 20.0]) + jax.random.normal(_key(26), (512, 3))
    return jax.vmap(solve_one), (y0, 10.0 + jax.random.uniform(_key(27), (512,)))


def blackjax_hmc():
    """blackjax: 8 HMC transitions (16 leapfrog steps each) of 8 chains on a Bayesian logistic
    regression posterior, vmapped over the chains."""
    blackjax = _library("blackjax")

    x = jax.random.normal(_key(28), (2048, 32))
    y = (x @ jnp.linspace(-1, 1, 32) > 0).astype(jnp.float32)

    def log_density(w):
        logits = x @ w
        return jnp.sum(y * logits - jax.nn.softplus(logits)) - 0.5 * jnp.sum(w * w)

    kernel = blackjax.hmc(log_density, step_size=1e-3, inverse_mass_matrix=jnp.ones(32), num_integration_steps=16)

    def chain(position, key):
        def transition(state, key):
            return kernel.step(key, state)[0], None

        state = kernel.init(position)
        return jax.lax.scan(transition, state, jax.random.split(key, 8))[0].position

    keys = jax.random.split(_key(29), 8)
    return jax.vmap(chain), (jax.random.normal(_key(30), (8, 32)), jax.random.key_data(keys))


# The fleet's third growth, from 22 to 30 (placed last again): two new families (graphs, data
# processing), three more maintained libraries (equinox, numpyro, optimistix), and a flax
# transformer's training step, matmul-bound, the kind of heavy program that gains nothing


def equinox_mlp():
    """equinox: an MLP classifier's training step (eqx.filter_grad) with optax's Adam."""
    eqx = _library("equinox")
    import optax

    model = eqx.nn.MLP(64, 10, 512, 3, activation=jax.nn.gelu, key=_key(31))
    optimizer = optax.adam(1e-3)
    params, static = eqx.partition(model, eqx.is_array)
    x, labels = jax.random.normal(_key(32), (1024, 64)), jnp.arange(1024) % 10

    def step(params, state, x, labels):
        def loss(params):
            logits = jax.vmap(eqx.combine(params, static))(x)
            return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

        grads = jax.grad(loss)(params)
        updates, state = optimizer.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    return step, (params, optimizer.init(params), x, labels)


def numpyro_svi():
    """numpyro: 32 SVI steps (Adam, an AutoNormal guide) on a hierarchical logistic regression."""
    numpyro = _library("numpyro")
    import numpyro.distributions as dist
    from numpyro.infer import SVI, Trace_ELBO
    from numpyro.infer.autoguide import AutoNormal

    groups = jnp.arange(16384) % 32
    x = jax.random.normal(_key(33), (16384, 16))
    y = (x[:, 0] + 0.1 * groups > 1.5).astype(jnp.float32)

    def model(x, groups, y):
        scale = numpyro.sample("scale", dist.HalfNormal(1.0))
        with numpyro.plate("groups", 32):
            offset = numpyro.sample("offset", dist.Normal(0.0, scale))
        w = numpyro.sample("w", dist.Normal(jnp.zeros(16), 1.0).to_event(1))
        with numpyro.plate("data", x.shape[0]):
            numpyro.sample("y", dist.Bernoulli(logits=x @ w + offset[groups]), obs=y)

    svi = SVI(model, AutoNormal(model), numpyro.optim.Adam(1e-2), Trace_ELBO())
    state = svi.init(_key(34), x, groups, y)

    def steps(state, x, y):
        return jax.lax.scan(lambda state, _: svi.update(state, x, groups, y), state, None, length=32)

    return steps, (state, x, y)


def optimistix_fit():
    """optimistix: 128 damped-oscillator curve fits by Levenberg-Marquardt, vmapped."""
    os.environ.setdefault("EQX_ON_ERROR", "nan")  # as diffrax_lorenz: no host callbacks to export
    optx = _library("optimistix")
    t = jnp.linspace(0.0, 10.0, 256)

    def residuals(theta, observed):
        amplitude, decay, frequency, phase = theta
        return amplitude * jnp.exp(-decay * t) * jnp.cos(frequency * t + phase) - observed

    def fit(observed):
        solver = optx.LevenbergMarquardt(rtol=1e-6, atol=1e-6)
        return optx.least_squares(residuals, solver, jnp.array([1.0, 0.2, 1.5, 0.0]), args=observed,
                                  max_steps=64, throw=False).value

    truth = jnp.array([1.2, 0.3, 1.7, 0.1]) + 0.05 * jax.random.normal(_key(35), (128, 4))
    observed = jax.vmap(lambda theta: residuals(theta, 0.0))(truth) + 0.01 * jax.random.normal(_key(36), (128, 256))
    return jax.vmap(fit), (observed,)


def flax_transformer():
    """A flax linen transformer encoder's training step (2 layers, width 256, 128 tokens of 8
    sequences) with optax's AdamW: matmul-bound, so little is left for a compiler flag."""
    import flax.linen as nn
    import optax

    class Block(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = x + nn.SelfAttention(num_heads=8)(nn.LayerNorm()(x))
            h = nn.Dense(1024)(nn.LayerNorm()(x))
            return x + nn.Dense(256)(nn.gelu(h))

    class Encoder(nn.Module):
        @nn.compact
        def __call__(self, x):
            for _ in range(2):
                x = Block()(x)
            return nn.Dense(256)(x)

    model, optimizer = Encoder(), optax.adamw(1e-4)
    x = jax.random.normal(_key(37), (8, 128, 256))
    params = model.init(_key(38), x)

    def step(params, state, x):
        grads = jax.grad(lambda params: jnp.mean((model.apply(params, x) - x) ** 2))(params)
        updates, state = optimizer.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    return step, (params, optimizer.init(params), x)


def _random_graph(key, nodes: int, edges: int):
    senders, receivers = jax.random.randint(key, (2, edges), 0, nodes)
    return senders, receivers


def pagerank():
    """16 PageRank power iterations on a random graph of 65,536 nodes and 1M edges (segment_sum)."""
    nodes = 65536
    senders, receivers = _random_graph(_key(39), nodes, 1 << 20)
    degree = jnp.maximum(jax.ops.segment_sum(jnp.ones(senders.shape), senders, nodes), 1.0)

    def rank(senders, receivers, degree):
        def iteration(r, _):
            flow = jax.ops.segment_sum((r / degree)[senders], receivers, nodes)
            return 0.15 / nodes + 0.85 * flow, None

        return jax.lax.scan(iteration, jnp.full(nodes, 1.0 / nodes), None, length=16)[0]

    return rank, (senders, receivers, degree)


def gcn_train():
    """A 3-layer graph convolutional network's training step on 8,192 nodes, 131,072 edges."""
    import optax

    nodes, width = 8192, 64
    senders, receivers = _random_graph(_key(40), nodes, 1 << 17)
    keys = jax.random.split(_key(41), 4)
    params = [jax.random.normal(k, (width, width)) / 8 for k in keys[:3]]
    features, targets = jax.random.normal(keys[3], (nodes, width)), jnp.arange(nodes) % width
    optimizer = optax.adam(1e-3)

    def loss(params, features):
        h = features
        for w in params:
            h = jax.nn.relu(jax.ops.segment_sum(h[senders], receivers, nodes) @ w / 16 + h)
        return optax.softmax_cross_entropy_with_integer_labels(h, targets).mean()

    def step(params, state, features):
        updates, state = optimizer.update(jax.grad(loss)(params, features), state, params)
        return optax.apply_updates(params, updates), state

    return step, (params, optimizer.init(params), features)


def quantile_normalize():
    """Quantile normalisation of 8 samples of 8,192 values: sort, rank, mean quantiles, gather."""
    def normalize(x):
        order = jnp.argsort(x, axis=1)
        reference = jnp.sort(x, axis=1).mean(0)
        ranks = jnp.argsort(order, axis=1)
        return reference[ranks]

    return normalize, (jax.random.normal(_key(42), (8, 8192)),)


def histogram_features():
    """Per-row histograms, cumulative sums and searchsorted quantiles of 64 series of 2,048."""
    edges = jnp.linspace(-4.0, 4.0, 129)

    def features(x):
        bins = jnp.clip(jnp.searchsorted(edges, x) - 1, 0, 127)
        counts = jax.vmap(lambda b: jnp.bincount(b, length=128))(bins)
        cdf = jnp.cumsum(counts, 1) / x.shape[1]
        quantiles = jax.vmap(lambda c: jnp.searchsorted(c, jnp.linspace(0.05, 0.95, 19)))(cdf)
        return counts, edges[quantiles], jnp.cumsum(jnp.sort(x, 1), 1)[:, ::64]

    return features, (jax.random.normal(_key(43), (64, 2048)),)


PROGRAMS = [FleetProgram(fn.__name__, family, fn) for family, fns in (
    ("stencil", (euler2d, tv3d, jacobi2d, wave2d, heat3d)),
    ("clustering", (kmeans, gmm_em)),
    ("training", (mlp_adam, cnn_sgd, attention_adamw)),
    ("solver", (rk4_lorenz96, cg_poisson, newton_logistic, nbody_steps)),
    ("sampler", (hmc_logistic, langevin_gmm)),
    ("linalg", (batched_solve, gp_likelihood)),
    ("signal", (fft_convolve, spectrogram)),
    ("solver", (diffrax_lorenz,)),
    ("sampler", (blackjax_hmc,)),
    ("training", (equinox_mlp,)),
    ("sampler", (numpyro_svi,)),
    ("solver", (optimistix_fit,)),
    ("training", (flax_transformer,)),
    ("graph", (pagerank, gcn_train)),
    ("data", (quantile_normalize, histogram_features)),
) for fn in fns]
BY_NAME = {program.name: program for program in PROGRAMS}


def main() -> None:
    import harness

    harness.parser(__doc__).parse_args()
    rows = []
    for program in PROGRAMS:
        fn, args = program.make()
        jitted = jax.jit(fn)
        jax.block_until_ready(jitted(*args))
        spread, _ = harness.timed(5, lambda: jax.block_until_ready(jitted(*args)))
        rows.append([program.name, program.family, f"{spread.median * 1e3:.1f}", spread.range(".1f")])
    print(harness.markdown(("program", "family", "jax.jit ms", "range"), rows, align="llrr"))


if __name__ == "__main__":
    main()
