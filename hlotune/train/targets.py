"""What a model learns to predict for each config, and what metrics compare its scores with.

The runtimes are `hlotune.data.metrics.target_runtimes` (tile: divided by the default tile
config's runtime, so kernels of very different sizes share one scale; layout and flags: raw).
Scores are trained on the log, which turns "x times slower" into a fixed distance.
Configs measured as 0 ns (a test split's hidden label, or a failed run) have no target.
"""

from __future__ import annotations

import numpy as np
import torch

from hlotune.data.sample import GraphSample
from hlotune.data.metrics import target_runtimes


def measured(sample: GraphSample) -> np.ndarray:
    """Indices of the configs with a runtime, the only ones with a target."""
    return np.flatnonzero(sample.configs.config_runtime > 0)


def log_targets(sample: GraphSample) -> np.ndarray:
    """`(C,)` float32 log of `target_runtimes`; meaningful only at `measured` indices."""
    with np.errstate(divide="ignore"):
        return np.log(target_runtimes(sample)).astype(np.float32)


def centred(values: torch.Tensor) -> torch.Tensor:
    """`values` minus their mean: log runtimes (or scores) relative to the batch's configs.

    Runtimes of different graphs differ by orders of magnitude, while the configs of one graph
    differ by a few percent; MSE on absolute log runtimes spends itself on the first. Centring
    scores and targets alike leaves MSE only the differences between configs of one graph: the
    target relative to the default config's runtime, up to a constant per batch, which no
    ranking sees. Pairwise losses are unchanged by it.
    """
    return values - values.mean()
