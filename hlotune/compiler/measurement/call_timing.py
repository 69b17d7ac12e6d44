"""Per-call times of callables in this process, interleaved: what one call costs beside another.

A user calls `result.compiled()` in their own process, so its cost against `jax.jit` and the raw
executable is timed there, not in the measurement worker. On a shared machine the load drifts,
so each round times a block of back-to-back calls of every callable in a fresh random order.
With `wait_each`, each call waits for its outputs (a loop that reads every result: no dispatch
cost hides behind the previous call's compute); without, the block waits once at its end (a
loop that reads no result until the end, so dispatch may overlap compute). A block's mean is
one sample: the minimum over rounds is the least disturbed, the median the typical.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np


def interleaved_call_times(calls: Mapping[str, Callable[[], Any]], *, rounds: int,
                           block_s: float = 0.02, wait_each: bool = True,
                           seed: int = 0) -> dict[str, np.ndarray]:
    """Seconds per call of each callable, one sample per round (a block of calls lasting about
    `block_s`, sized by the first callable's warm calls)."""
    import jax

    for call in calls.values():
        jax.block_until_ready(call())  # compiles what is lazily compiled, warms the rest
    first = next(iter(calls.values()))
    block = max(1, round(block_s / min(_block_time(first, 1, True) for _ in range(3))))
    rng, names = random.Random(seed), list(calls)
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        rng.shuffle(names)
        for name in names:
            samples[name].append(_block_time(calls[name], block, wait_each))
    return {name: np.array(times) for name, times in samples.items()}


def _block_time(call: Callable[[], Any], block: int, wait_each: bool) -> float:
    import jax

    start = time.perf_counter()
    if wait_each:
        for _ in range(block):
            jax.block_until_ready(call())
    else:
        outputs = [call() for _ in range(block)]
        jax.block_until_ready(outputs)
    return (time.perf_counter() - start) / block
