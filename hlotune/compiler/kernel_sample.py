"""A kernel as a TpuGraphs tile sample: what the tile collection writes and a tile model ranks.

The graph is the kernel's fused computation standing alone (kernels.HloText.module_of),
featurized with the same 140 features as every hlotune graph; each config is one partitioning
of its outer dimensions. Collection (collect/tile_files.py) labels the configs with measured
runtimes; the tile tuner (tuning/kernelwise.py) asks a model to rank them unlabelled.
"""

from __future__ import annotations

import numpy as np

from hlotune.data.sample import GraphSample, TileConfigs
from hlotune.hlo.graph import HloGraph
from hlotune.opt.costs import op_graph

TILE_FEATURES = 24  # config_feat width of the TpuGraphs tile collection
MAX_DIMS = 6  # partitions per outer dimension in config_feat[:, :6]


def kernel_sample(hlo: HloGraph, parts: list[tuple[int, ...]], xla: tuple[int, ...], *,
                  runtimes: np.ndarray | None = None, normalizer: int = 1, name: str = "kernel") -> GraphSample:
    """One kernel as a TpuGraphs tile sample: its fused computation (a module of its own)
    featurized, one config per partitioning; with `runtimes` (c, s) measured, without them
    unlabelled, for a model to rank (the tile tuner)."""
    from hlotune.hlo.featurize import featurize  # its tables load on first use

    labelled = runtimes is not None
    configs = TileConfigs(
        config_feat=config_features(parts, xla),
        config_runtime=np.median(runtimes, axis=1).round().astype(np.int64) if labelled
        else np.zeros(len(parts), dtype=np.int64),
        config_runtime_normalizers=np.full(len(parts), normalizer, dtype=np.int64),
        config_runtime_samples=runtimes,
        kernel_roofline=kernel_roofline(hlo),
    )
    return GraphSample(featurize(hlo, progress=False), configs, name, f"kernel {name}")


def kernel_roofline(hlo: HloGraph) -> np.ndarray:
    """The kernel's flops and bytes (operands read, outputs written), counted by opt/costs.py's
    HloCostAnalysis-like rules: the analytical baseline's roofline inputs."""
    costs = op_graph(hlo)
    return np.array([costs.flops.sum(), (costs.bytes_in + costs.bytes_out).sum()])


def config_features(parts: list[tuple[int, ...]], xla_choice: tuple[int, ...]) -> np.ndarray:
    """config_feat (c, 24): partitions per outer dimension [0:6] (0 past the last), their
    product [6], 1 where the row is XLA's own choice [7]; the rest 0."""
    feat = np.zeros((len(parts), TILE_FEATURES), dtype=np.float32)
    for row, part in enumerate(parts):
        feat[row, :min(len(part), MAX_DIMS)] = part[:MAX_DIMS]
        feat[row, MAX_DIMS] = float(np.prod(part)) if part else 1.0
        feat[row, MAX_DIMS + 1] = float(part == xla_choice)
    return feat
