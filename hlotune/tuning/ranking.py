"""A cost model in the tuning loop: it scores candidate configs so only the best get measured.

The model reads the same GraphSample that collection writes (collector.py): the program's
featurized graph, computed once, with the candidates as flag features (`FlagConfigs`) or
per-site layouts (`LayoutConfigs`) and zero runtimes, since nothing is measured yet. A model
scores one collection, so the "all" space is ranked by its flag part.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

import numpy as np

from hlotune.compiler.config import CompileConfig
from hlotune.compiler.flags import FLAG_FEATURE_NAMES
from hlotune.compiler.layouts import LayoutSpace
from hlotune.data.sample import FlagConfigs, GraphArrays, GraphSample, LayoutConfigs
from hlotune.evaluate import Scorer
from hlotune.hlo.featurize import featurize


class ModelRanker:
    """Scores configs of one program with `scorer` (lower = predicted faster)."""

    def __init__(self, scorer: Scorer, layouts: LayoutSpace, space_kind: str) -> None:
        self._scorer, self._layouts = scorer, layouts
        self.collection = "layout" if space_kind == "layout" else "flags"

    @cached_property
    def _graph(self) -> GraphArrays:
        return featurize(self._layouts.graph)

    def __call__(self, configs: Sequence[CompileConfig]) -> np.ndarray:
        runtimes = np.zeros(len(configs), np.int64)
        if self.collection == "flags":
            feat = np.stack([config.flags.features() for config in configs])
            candidates = FlagConfigs(feat, np.array(FLAG_FEATURE_NAMES), runtimes)
        else:
            feat = self._layouts.node_config_feat([config.layout for config in configs])
            candidates = LayoutConfigs(self._layouts.node_config_ids, feat, runtimes)
        program = self._layouts.program
        sample = GraphSample(self._graph, candidates, name=program.slug, source=program.name)
        return np.asarray(self._scorer(sample), dtype=np.float64)
