"""The scorers of `hlotune eval` as the tuner's cost model, so only the best candidates get measured.

`ScorerCostModel` wraps the scorers of `hlotune eval` (trained GNNs, baselines): it encodes the
candidates exactly as collection does (hlotune.compiler.spaces.encode) and asks the scorer of each
collection the space needs. A scorer knows one collection, so the flags space is ranked by a
flags model, the layout space by a layout model, and the combined space by both: a candidate's
score is the sum of its two ranks.

By default the shipped pretrained models rank (`pretrained:flags`, `pretrained:layout`);
`update` fine-tunes the models that can learn (trained GNNs, not baselines) on the program's
own measurements (hlotune.train.fine_tune).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.spaces.encode import ConfigEncoder
from hlotune.compiler.configs.layouts import LayoutSpace
from hlotune.data.collections import RANKING
from hlotune.data.metrics import average_ranks
from hlotune.errors import HlotuneError
from hlotune.evaluation.scorers import Scorer
from hlotune.tuning.models.base import CostModel
from hlotune.tuning.models.registry import DEFAULT_MODEL
from hlotune.tuning.strategies.base import Trial


def shipped_scorers(space_kind: str) -> dict[str, Scorer]:
    """The shipped model of each collection the space needs (`--model pretrained`)."""
    from hlotune.evaluation.scorers import load_scorer

    return {c: load_scorer(f"pretrained:{c}") for c in RANKING[space_kind]}


def load_scorers(model: str | Scorer, space_kind: str) -> dict[str, Scorer]:
    """`model`, a scorer or a name `hlotune eval` scores (evaluation/registry.py), as the scorer
    of the one collection the space needs."""
    from hlotune.evaluation.scorers import load_scorer

    collections = RANKING[space_kind]
    if len(collections) > 1:
        raise HlotuneError(
            f"the all space is ranked by a flags and a layout model: use --model {DEFAULT_MODEL}"
        )
    return {collections[0]: load_scorer(model) if isinstance(model, str) else model}


class ScorerCostModel(CostModel):
    """Scores configs of one program with a scorer per collection."""

    def __init__(self, scorers: Mapping[str, Scorer], layouts: LayoutSpace, seed: int = 0) -> None:
        self._scorers, self._encoder, self._seed = dict(scorers), ConfigEncoder(layouts), seed

    def predict(self, configs: Sequence[CompileConfig]) -> np.ndarray:
        scores = [
            scorer(self._encoder.graph_sample(collection, configs))
            for collection, scorer in self._scorers.items()
        ]
        if len(scores) == 1:
            return np.asarray(scores[0], dtype=np.float64)
        return np.sum([average_ranks(s) for s in scores], axis=0)

    def update(self, trials: Sequence[Trial], default_ns: float) -> None:
        from hlotune.evaluation.scorers import ModelScorer

        healthy = [trial for trial in trials if np.isfinite(trial.cost)]
        runtimes = np.array([trial.cost * default_ns for trial in healthy])
        configs = [trial.config for trial in healthy]
        seed = self._seed + len(trials)  # a resumed run fine-tunes as the first did
        for collection, scorer in self._scorers.items():
            if isinstance(scorer, ModelScorer):
                scorer.fine_tune(self._encoder.graph_sample(collection, configs, runtimes), seed=seed)
