"""Making large graphs and config sets cheaper to train on, without changing what is ranked.

Three compressions, each an option of `hlotune train`:

    --prune-hops K             layout: configs propagate only within K hops of the configurable
                               nodes; the rest is computed once per graph (`prune.py`)
    --collapse-chains          plain chains collapsed, in training and inference (`collapse_chains`)
    --drop-duplicate-configs   identical configs of a training graph kept once (`drop_duplicate_configs`)
"""

from __future__ import annotations

from dataclasses import fields, replace

import numpy as np

from hlotune.data.sample import GraphArrays, GraphSample, LayoutConfigArrays

# Config fields with one row per config (the rest, like node_config_ids, describe the graph).
_PER_CONFIG = {
    "node_config_feat", "config_feat", "config_runtime", "config_runtime_normalizers",
    "config_runtime_samples",
}


def drop_duplicate_configs(sample: GraphSample) -> GraphSample:
    """The sample with each set of identical configs (same feature rows) kept once.

    The member kept is the one with the median runtime of the group's measured members (the
    lower median for an even count), so the target is the group's typical measurement rather
    than its luckiest or unluckiest; duplicates otherwise only weight some pairs of the ranking
    loss several times over. Its own arrays are kept as they are, nothing is averaged.
    """
    configs = sample.configs
    if configs is None or sample.num_configs < 2:
        return sample
    feat = configs.node_config_feat if isinstance(configs, LayoutConfigArrays) else configs.config_feat
    _, group = np.unique(feat.reshape(len(feat), -1), axis=0, return_inverse=True)
    group = group.reshape(-1)
    runtime = configs.config_runtime
    order = np.lexsort((runtime, runtime <= 0, group))  # by group, measured first, by runtime
    starts = np.flatnonzero(np.r_[True, group[order][1:] != group[order][:-1]])
    measured = np.add.reduceat((runtime[order] > 0).astype(np.int64), starts)
    keep = np.sort(order[starts + (np.maximum(measured, 1) - 1) // 2])
    return sample if keep.size == sample.num_configs else select_configs(sample, keep)


def select_configs(sample: GraphSample, keep: np.ndarray) -> GraphSample:
    """The sample with only the configs at `keep` (every per-config array taken alike)."""
    configs = sample.configs
    chosen = {
        f.name: getattr(configs, f.name)[keep]
        for f in fields(configs)
        if f.name in _PER_CONFIG and getattr(configs, f.name) is not None
    }
    return replace(sample, configs=replace(configs, **chosen))


def collapse_chains(sample: GraphSample) -> GraphSample:
    """The sample with every plain node removed and its operand wired to its user.

    A plain node has exactly one operand and one user and is not configurable: it neither
    branches nor carries a config, so a chain of them only relays one value (converts, bitcasts,
    copies, elementwise ops on one input). Removing it shortens message paths and the node count;
    its own features are lost, which `hlotune eval` shows the ranking does not need (docs/scale.md).
    """
    graph = sample.graph
    n = graph.num_nodes
    users, operands = graph.edge_index[:, 0], graph.edge_index[:, 1]
    removable = (np.bincount(users, minlength=n) == 1) & (np.bincount(operands, minlength=n) == 1)
    removable[users[users == operands]] = False
    configs = sample.configs
    if isinstance(configs, LayoutConfigArrays):
        removable[configs.node_config_ids] = False
    if not removable.any():
        return sample
    source = np.arange(n)  # a removable node's one operand, followed to the first kept node
    relays = removable[users]
    source[users[relays]] = operands[relays]
    while not np.array_equal(source[source], source):
        source = source[source]
    kept = np.flatnonzero(~removable)
    position = np.cumsum(~removable) - 1
    edges = np.stack((position[users[~relays]], position[source[operands[~relays]]]), axis=1)
    splits = graph.node_splits
    arrays = GraphArrays(
        node_feat=graph.node_feat[kept],
        node_opcode=graph.node_opcode[kept],
        edge_index=edges.astype(graph.edge_index.dtype),
        node_splits=None if splits is None else np.searchsorted(kept, splits).astype(splits.dtype),
    )
    if isinstance(configs, LayoutConfigArrays):
        ids = position[configs.node_config_ids].astype(configs.node_config_ids.dtype)
        configs = replace(configs, node_config_ids=ids)
    return replace(sample, graph=arrays, configs=configs)
