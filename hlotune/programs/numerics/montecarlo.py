"""Monte Carlo option pricing under Black-Scholes dynamics: geometric Brownian motion paths from
jax.random (a fixed key, passed in), priced as a European call (which has a closed form to
check against) and an arithmetic-average Asian call (which has none), each with its standard
error."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from hlotune.programs.numerics.base import Numeric

MARKET = {"spot": 100.0, "strike": 105.0, "rate": 0.03, "volatility": 0.25, "maturity": 1.0}


def price(key: jax.Array, market: dict[str, jnp.ndarray], *, paths: int, steps: int) -> dict:
    """{"european": (price, standard error), "asian": (price, standard error)} from `paths`
    paths of `steps` exact log-normal steps each; the Asian average is over the step ends."""
    dt = market["maturity"] / steps
    sigma = market["volatility"]
    shocks = jax.random.normal(key, (paths, steps))
    log_paths = jnp.cumsum((market["rate"] - sigma**2 / 2) * dt + sigma * jnp.sqrt(dt) * shocks, axis=1)
    prices = market["spot"] * jnp.exp(log_paths)
    discount = jnp.exp(-market["rate"] * market["maturity"])
    payoffs = {"european": prices[:, -1], "asian": prices.mean(axis=1)}
    return {name: _estimate(discount * jnp.maximum(final - market["strike"], 0)) for name, final in payoffs.items()}


def _estimate(samples: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    return samples.mean(), samples.std() / jnp.sqrt(samples.size)


def build(*, paths: int, steps: int):
    market = {name: jnp.float32(value) for name, value in MARKET.items()}
    return partial(price, paths=paths, steps=steps), (jax.random.PRNGKey(0), market)


WORKLOAD = Numeric(
    name="montecarlo",
    description="Monte Carlo option pricing, geometric Brownian motion paths (jax.random)",
    sizes={
        "tiny": dict(paths=8192, steps=16),
        "small": dict(paths=16384, steps=32),
        "base": dict(paths=32768, steps=64),
    },
    build=build,
)
