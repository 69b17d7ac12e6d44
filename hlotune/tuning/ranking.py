"""Cost models in the tuning loop: they score candidate configs so only the best get measured.

A model reads the same GraphSample that collection writes (collector.py): the program's
featurized graph, computed once, with the candidates as flag features (`FlagConfigs`) or
per-site layouts (`LayoutConfigs`). A model knows one collection, so the flags space is ranked
by a flags model, the layout space by a layout model, and the combined space by both: each
ranks the candidates by its own part and a candidate's score is the sum of its two ranks.

By default the shipped pretrained models rank (`pretrained:flags`, `pretrained:layout`), and
`fine_tune` adapts them to the program with its own measurements (hlotune.train.fine_tune).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property

import numpy as np
from scipy.stats import rankdata

from hlotune.compiler.config import CompileConfig
from hlotune.compiler.flags import FLAG_FEATURE_NAMES
from hlotune.compiler.layouts import LayoutSpace
from hlotune.data.sample import FlagConfigs, GraphArrays, GraphSample, LayoutConfigs
from hlotune.errors import HlotuneError
from hlotune.evaluate import Scorer
from hlotune.hlo.featurize import featurize

COLLECTIONS = {"flags": ("flags",), "layout": ("layout",), "all": ("flags", "layout")}
DEFAULT_MODEL = "pretrained"


def load_scorers(model: str | Scorer, space_kind: str) -> dict[str, Scorer]:
    """The scorer of each collection the space needs: `model` is a scorer, a name for
    `hlotune.scorers.load_scorer`, or "pretrained" (the shipped model of each collection)."""
    from hlotune.scorers import load_scorer

    collections = COLLECTIONS[space_kind]
    if model == DEFAULT_MODEL:
        return {c: load_scorer(f"pretrained:{c}") for c in collections}
    if len(collections) > 1:
        raise HlotuneError(
            "the all space is ranked by a flags and a layout model: use --model pretrained"
        )
    return {collections[0]: load_scorer(model) if isinstance(model, str) else model}


class ModelRanker:
    """Scores configs of one program with a scorer per collection (lower = predicted faster)."""

    def __init__(self, scorers: Mapping[str, Scorer], layouts: LayoutSpace) -> None:
        self._scorers, self._layouts = dict(scorers), layouts

    @cached_property
    def _graph(self) -> GraphArrays:
        return featurize(self._layouts.graph)

    def __call__(self, configs: Sequence[CompileConfig]) -> np.ndarray:
        scores = [scorer(self.sample(collection, configs)) for collection, scorer in self._scorers.items()]
        if len(scores) == 1:
            return np.asarray(scores[0], dtype=np.float64)
        return np.sum([rankdata(s) for s in scores], axis=0)

    def fine_tune(self, costs: Mapping[CompileConfig, float], default_ns: float, seed: int) -> None:
        """Adapts every model that can learn (a trained GNN, not a baseline) to the measured
        `costs` (runtime relative to the default, which ran in `default_ns`)."""
        from hlotune.train.fine_tune import fine_tune

        healthy = {c: cost for c, cost in costs.items() if np.isfinite(cost)}
        runtimes = np.array([cost * default_ns for cost in healthy.values()])
        for collection, scorer in self._scorers.items():
            model = getattr(scorer, "model", None)
            if model is not None:
                fine_tune(model, self.sample(collection, list(healthy), runtimes), seed=seed)

    def sample(
        self, collection: str, configs: Sequence[CompileConfig], runtimes: np.ndarray | None = None
    ) -> GraphSample:
        """The program's graph with `configs` as `collection` configs (runtimes 0: unmeasured)."""
        runtime = np.zeros(len(configs), np.int64) if runtimes is None else runtimes.astype(np.int64)
        if collection == "flags":
            feat = np.stack([config.flags.features() for config in configs])
            candidates = FlagConfigs(feat, np.array(FLAG_FEATURE_NAMES), runtime)
        else:
            feat = self._layouts.node_config_feat([config.layout for config in configs])
            candidates = LayoutConfigs(self._layouts.node_config_ids, feat, runtime)
        program = self._layouts.program
        return GraphSample(self._graph, candidates, name=program.slug, source=program.name)
