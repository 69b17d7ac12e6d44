"""A GraphSample as the tensors a cost model reads, after checking the model can read it.

Data and model come from different places (a user's folder, a model trained months ago), so
every mismatch a model would otherwise hit as a shape error deep in torch is caught here and
reported as a one-line HlotuneError naming the graph.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from hlotune.data.sample import FlagConfigArrays, GraphSample, LayoutConfigArrays
from hlotune.errors import HlotuneError
from hlotune.hlo.opcodes import NUM_OPCODES
from hlotune.models.compress import collapse_chains, select_configs
from hlotune.models.settings import LAYOUT_CONFIG_DIM, ModelSettings


@dataclass
class GraphInputs:
    """The config-independent part of one graph.

    `edge_index` is `(2, m)`: row 0 the consuming node, row 1 the operand (TpuGraphs' [u, v]).
    """

    node_opcode: Tensor  # (n,) long
    node_feat: Tensor  # (n, F) float32, raw (the model normalises)
    edge_index: Tensor  # (2, m) long
    node_config_ids: Tensor | None = None  # (nc,) long, layout only

    @property
    def num_nodes(self) -> int:
        return int(self.node_opcode.shape[0])


def graph_inputs(
    sample: GraphSample, config: ModelSettings, device: torch.device | str
) -> GraphInputs:
    check_compatible(sample, config)
    if config.collapse_chains:
        sample = collapse_chains(sample)
    graph = sample.graph
    largest = int(graph.node_opcode.max()) if graph.num_nodes else 0
    if largest >= NUM_OPCODES:
        raise HlotuneError(f"{_name(sample)}: opcode {largest} is not a TpuGraphs opcode")
    ids = sample.configs.node_config_ids if isinstance(sample.configs, LayoutConfigArrays) else None

    def long(array: np.ndarray) -> Tensor:
        return torch.as_tensor(array.astype(np.int64), device=device)

    return GraphInputs(
        node_opcode=long(graph.node_opcode),
        node_feat=torch.as_tensor(graph.node_feat, dtype=torch.float32, device=device),
        edge_index=long(graph.edge_index.T).reshape(2, -1),
        node_config_ids=None if ids is None else long(ids),
    )


def config_inputs(
    sample: GraphSample, indices: np.ndarray | slice, device: torch.device | str
) -> Tensor:
    """Features of the configs at `indices`: `(C, config_dim)`, or `(C, nc, 18)` for layout."""
    configs = sample.configs
    if isinstance(configs, LayoutConfigArrays):
        feat = configs.node_config_feat[indices]
        if feat.size and (feat.min() < -1 or feat.max() > 5 or not np.all(feat == np.round(feat))):
            raise HlotuneError(f"{_name(sample)}: node_config_feat must hold integers in -1..5")
    else:
        feat = configs.config_feat[indices]
    return torch.as_tensor(feat, dtype=torch.float32, device=device)


def prior_inputs(
    sample: GraphSample, config: ModelSettings, indices: np.ndarray | None = None
) -> np.ndarray | None:
    """The analytical baseline's cost of the configs at `indices` (all by default), for a model
    with `analytical_prior` (None otherwise); only those configs are costed."""
    if not config.analytical_prior:
        return None
    from hlotune.models.baselines.analytical import analytical_scores

    chosen = sample if indices is None else select_configs(sample, np.asarray(indices))
    return analytical_scores(chosen).astype(np.float32)


def prior_rows(prior: np.ndarray | None, indices, device: torch.device | str) -> Tensor | None:
    """The rows of `prior_inputs` at `indices`, as a tensor (None stays None)."""
    return None if prior is None else torch.as_tensor(prior[indices], device=device)


def data_fields(sample: GraphSample) -> dict[str, Any]:
    """The data fields of a ModelSettings for this sample: `config.with_data(**data_fields(s))`."""
    configs = sample.configs
    if sample.collection is None:
        raise HlotuneError(f"{_name(sample)}: the graph has no configs to learn from")
    layout = isinstance(configs, LayoutConfigArrays)
    return {
        "collection": sample.collection,
        "node_feat_dim": int(sample.graph.node_feat.shape[1]),
        "config_dim": LAYOUT_CONFIG_DIM if layout else int(configs.config_feat.shape[1]),
        "config_feat_names": (
            tuple(map(str, configs.config_feat_names)) if isinstance(configs, FlagConfigArrays) else ()
        ),
    }


def check_compatible(sample: GraphSample, config: ModelSettings) -> None:
    """Raise HlotuneError unless the model of `config` can score `sample`'s configs."""
    name = _name(sample)
    if sample.collection is None:
        raise HlotuneError(f"{name}: the graph has no configs to score")
    if sample.collection != config.collection:
        raise HlotuneError(
            f"{name}: a {sample.collection} graph, but the model scores {config.collection} configs"
        )
    width = sample.graph.node_feat.shape[1]
    if width != config.node_feat_dim:
        raise HlotuneError(
            f"{name}: {width} node features per node, the model was trained on "
            f"{config.node_feat_dim}"
        )
    configs = sample.configs
    if isinstance(configs, LayoutConfigArrays):
        width = configs.node_config_feat.shape[2]
        expected = LAYOUT_CONFIG_DIM
    else:
        width = configs.config_feat.shape[1]
        expected = config.config_dim
    if width != expected:
        raise HlotuneError(
            f"{name}: {width} config features per config, the model was trained on {expected}"
        )
    if isinstance(configs, FlagConfigArrays) and config.config_feat_names:
        names = tuple(map(str, configs.config_feat_names))
        if names != config.config_feat_names:
            pairs = zip(names, config.config_feat_names)
            column = next(i for i, (mine, model) in enumerate(pairs) if mine != model)
            raise HlotuneError(
                f"{name}: config feature {column} is {names[column]!r}, "
                f"the model was trained on {config.config_feat_names[column]!r}"
            )


def _name(sample: GraphSample) -> str:
    return sample.source or sample.name or "graph"
