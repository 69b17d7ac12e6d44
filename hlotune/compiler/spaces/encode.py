"""Configs of one program as a GraphSample: the one encoding that collection writes to disk and
that cost models read while tuning, so a model ranks candidates exactly as it was trained.

The program's graph is featurized once; the configs become flag features (`FlagConfigArrays`, one
named column per option value), per-site layouts (`LayoutConfigArrays`) or per-kernel fusion
decisions (`FusionConfigArrays`), whose graph is the default fused module (fusion_features.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

import numpy as np

from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.configs.flags import FLAG_FEATURE_NAMES, FLAG_FEATURE_NUMERICS
from hlotune.compiler.spaces.fusion_features import FusionSites
from hlotune.compiler.spaces.kernel_space import program_module
from hlotune.compiler.configs.layouts import LayoutSpace
from hlotune.data.collections import COLLECTED
from hlotune.data.sample import FlagConfigArrays, FusionConfigArrays, GraphArrays, GraphSample, LayoutConfigArrays
from hlotune.errors import HlotuneError
from hlotune.hlo.featurize import featurize


class ConfigEncoder:
    """Encodes configs of the program behind `layouts` for the `flags`, `layout` or `fusion`
    collection."""

    def __init__(self, layouts: LayoutSpace) -> None:
        self.layouts = layouts

    @cached_property
    def graph(self) -> GraphArrays:
        return featurize(self.layouts.graph)

    @cached_property
    def fusion(self) -> FusionSites:
        """The kernels of the program's default fused module (compiled on first use)."""
        return FusionSites(program_module(self.layouts))

    @cached_property
    def fused_graph(self) -> GraphArrays:
        return featurize(self.fusion.graph)

    def graph_sample(
        self,
        collection: str,
        configs: Sequence[CompileConfig],
        runtimes: np.ndarray | None = None,
        runtime_samples: np.ndarray | None = None,
    ) -> GraphSample:
        """The program's graph with `configs` (runtimes in ns; 0 where unmeasured)."""
        runtime = np.zeros(len(configs), np.int64) if runtimes is None else np.rint(runtimes).astype(np.int64)
        measured = {} if runtime_samples is None else {"config_runtime_samples": runtime_samples}
        if collection == "flags":
            feat = np.stack([config.flags.features() for config in configs])
            numerics = np.array(FLAG_FEATURE_NUMERICS, np.int64)
            encoded = FlagConfigArrays(feat, np.array(FLAG_FEATURE_NAMES), runtime, **measured,
                                  config_feat_numerics=numerics)
        elif collection == "layout":
            feat = self.layouts.node_config_feat([config.layout for config in configs])
            encoded = LayoutConfigArrays(self.layouts.node_config_ids, feat, runtime, **measured)
        elif collection == "fusion":
            sites = self.fusion
            feat = sites.node_config_feat([config.kernels for config in configs])
            encoded = FusionConfigArrays(sites.node_config_ids, feat, runtime, **measured,
                                    node_config_choices=sites.node_config_choices)
        else:
            raise HlotuneError(f"unknown collection {collection!r}: use {', '.join(COLLECTED)}")
        program = self.layouts.program
        graph = self.fused_graph if collection == "fusion" else self.graph
        return GraphSample(graph, encoded, name=program.slug, source=program.name)
