"""Fixed-width rows for the GBDT baseline: a summary of the graph, then the config (TenSet style).

Trees cannot read a graph, so each graph becomes one vector: its opcode mix (the share of
nodes with each opcode), its size (log node and edge counts) and the mean and max of each
sign-log node feature. Every config of the graph shares that vector and appends its own part:

- flags: the config_feat columns, picked by name so files that order them differently agree;
- tile: the 24 config_feat columns;
- layout: aggregates of node_config_feat, since configs of different graphs have different
  sites: the log of the elements each kind of tensor moves (`layout_changes.py`), and the
  number of sites moved away from row-major, by rank and by the opcode of the site's node.

Columns enter raw: LightGBM bins each feature by its quantiles, so a monotone rescaling (the
sign-log the GNN needs) would change nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hlotune.data.sample import FlagConfigArrays, GraphArrays, GraphSample
from hlotune.errors import HlotuneError
from hlotune.hlo.opcodes import NUM_OPCODES, OPCODE_NAMES
from hlotune.models.baselines.layout_changes import TENSORS, change_levels, site_tensors

NODE_FEATURES = 140  # the TpuGraphs columns; extended ones are left out, so both kinds of file fit
MAX_RANK = 6
TILE_NAMES = tuple(
    f"tile_{tensor}_{part}"
    for tensor in ("kernel", "output", "input")
    for part in (*map(str, range(6)), "sum", "product")
)


def feature_names(collection: str, flag_names: Sequence[str] = ()) -> list[str]:
    """The column names of `feature_matrix` for a collection (flags: its config columns)."""
    graph = [f"opcode_{name}" for name in OPCODE_NAMES] + ["log_nodes", "log_edges"]
    graph += [f"{stat}_node_feat_{i}" for stat in ("mean", "max") for i in range(NODE_FEATURES)]
    if collection == "flags":
        return graph + [f"flag:{name}" for name in flag_names]
    if collection == "tile":
        return graph + list(TILE_NAMES)
    if collection == "layout":
        return graph + [
            *(f"layout_log_moved_{tensor}" for tensor in TENSORS),
            "layout_moved_sites",
            *(f"layout_moved_rank_{rank}" for rank in range(MAX_RANK + 1)),
            *(f"layout_moved_{name}" for name in OPCODE_NAMES),
        ]
    raise HlotuneError(f"no GBDT features for collection {collection!r}")


def flag_names_of(sample: GraphSample) -> tuple[str, ...]:
    """The flag columns a model fitted on `sample`'s collection reads by name: the sample's own
    (flags); none for the other collections, whose config features are not named flags."""
    return tuple(map(str, sample.configs.config_feat_names)) if sample.collection == "flags" else ()


def feature_matrix(sample: GraphSample, flag_names: Sequence[str] = ()) -> np.ndarray:
    """(c, features) float64, columns as `feature_names(sample.collection, flag_names)`."""
    configs = config_features(sample, flag_names)
    graph = graph_features(sample.graph)
    return np.concatenate((np.broadcast_to(graph, (len(configs), graph.size)), configs), axis=1)


def graph_features(graph: GraphArrays) -> np.ndarray:
    n = max(graph.num_nodes, 1)
    opcodes = np.bincount(graph.node_opcode.astype(np.int64), minlength=NUM_OPCODES) / n
    feat = graph.node_feat[:, :NODE_FEATURES].astype(np.float64)
    if not len(feat):  # no nodes: one row of zeros keeps the statistics defined
        feat = np.zeros((1, NODE_FEATURES))
    feat = np.sign(feat) * np.log1p(np.abs(feat))
    sizes = np.log1p([graph.num_nodes, graph.num_edges])
    return np.concatenate((opcodes, sizes, feat.mean(axis=0), feat.max(axis=0)))


def config_features(sample: GraphSample, flag_names: Sequence[str] = ()) -> np.ndarray:
    collection = sample.collection
    if collection == "flags":
        return _flag_columns(sample.configs, flag_names)
    if collection == "tile":
        return sample.configs.config_feat.astype(np.float64)
    if collection == "layout":
        return _layout_aggregates(sample)
    raise HlotuneError(f"{sample.name or 'graph'}: the graph has no configs to score")


def _flag_columns(configs: FlagConfigArrays, names: Sequence[str]) -> np.ndarray:
    columns = {str(name): j for j, name in enumerate(configs.config_feat_names)}
    missing = [name for name in names if name not in columns]
    if missing:
        raise HlotuneError(f"flags file without config column {missing[0]!r} the model needs")
    return configs.config_feat[:, [columns[name] for name in names]].astype(np.float64)


def _layout_aggregates(sample: GraphSample) -> np.ndarray:
    tensors = site_tensors(sample)
    levels = change_levels(sample.configs.node_config_feat, tensors.ranks)  # (c, nc, 3)
    moved_elements = np.log1p((levels * tensors.sizes).sum(axis=1))  # (c, 3)
    moved_sites = (levels > 0).any(axis=2).astype(np.float64)  # (c, nc)
    rank = np.minimum(tensors.ranks[:, 0], MAX_RANK)
    opcode = sample.graph.node_opcode[tensors.nodes[:, 0]].astype(np.int64)
    by_rank = moved_sites @ _one_hot(rank, MAX_RANK + 1)
    by_opcode = moved_sites @ _one_hot(opcode, NUM_OPCODES)
    total = moved_sites.sum(axis=1, keepdims=True)
    return np.concatenate((moved_elements, total, by_rank, by_opcode), axis=1)


def _one_hot(values: np.ndarray, width: int) -> np.ndarray:
    return np.eye(width)[values]
