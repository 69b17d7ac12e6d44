"""Models by name, for `hlotune eval` and `hlotune predict`: each becomes a scorer.

A scorer maps a GraphSample to one score per config, lower = predicted faster:
- a folder written by `hlotune train` (its `model/`) or a saved model folder;
- `baseline:random`: uniform scores, seeded by the graph's name, the floor any model must beat.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from hlotune.data.sample import GraphSample
from hlotune.errors import HlotuneError
from hlotune.evaluate import Scorer

BASELINES = ("random",)


def load_scorer(name: str) -> Scorer:
    if name.startswith("baseline:"):
        baseline = name.removeprefix("baseline:")
        if baseline == "random":
            return random_scores
        raise HlotuneError(f"unknown baseline {baseline!r}; known: {', '.join(BASELINES)}")
    return _trained(Path(name))


def random_scores(sample: GraphSample) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(sample.name.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).random(sample.num_configs)


def _trained(folder: Path) -> Scorer:
    from hlotune.models.gnn import GraphCostModel
    from hlotune.models.predict import predict_scores

    if not folder.exists():
        raise HlotuneError(f"{folder}: no such model folder (or use baseline:random)")
    if (folder / "model").is_dir():  # the output folder of `hlotune train`
        folder = folder / "model"
    model = GraphCostModel.load(folder)
    return lambda sample: predict_scores(model, sample)
