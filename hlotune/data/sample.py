"""The in-memory form of one TpuGraphs file: a graph plus the configurations measured on it.

These dataclasses are the boundary between the featurizer (which produces them), the npz
reader/writer, and everything that trains or evaluates on them. Arrays keep the exact dtypes
and shapes of the TpuGraphs files (see docs/format.md), so a sample written and read back is
bit-identical.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from torch_geometric.data import Data


@dataclass
class GraphArrays:
    """A tensor program as TpuGraphs arrays.

    `edge_index[i] = [u, v]` means node u consumes the output of node v.
    `node_splits` (1, k) holds the first node of each computation group, then the node count.
    """

    node_feat: np.ndarray  # (n, 140) float32; wider when extended features are on
    node_opcode: np.ndarray  # (n,) uint8
    edge_index: np.ndarray  # (m, 2) int64
    node_splits: np.ndarray | None = None  # (1, k) int64

    @property
    def num_nodes(self) -> int:
        return int(self.node_opcode.shape[0])

    @property
    def num_edges(self) -> int:
        return int(self.edge_index.shape[0])


@dataclass
class TileConfigArrays:
    """Kernel-level configs: one tile-size vector per config (TpuGraphs tile collection)."""

    config_feat: np.ndarray  # (c, 24) float32
    config_runtime: np.ndarray  # (c,) int64 ns
    config_runtime_normalizers: np.ndarray  # (c,) int64 ns, runtime of the default tile config
    config_runtime_samples: np.ndarray | None = None  # (c, s) int64 ns: hlotune's own kernels
    # (2,) flops and bytes of hlotune's own XLA:CPU kernels, whose config_feat are
    # outer-dimension partitions (kernels/tile_collection.py), not TPU tile sizes
    kernel_roofline: np.ndarray | None = None


@dataclass
class LayoutConfigArrays:
    """Per-node layout configs (TpuGraphs layout collection).

    `config_runtime_samples` is hlotune's addition for data it measured itself.
    """

    node_config_ids: np.ndarray  # (nc,) int64, indices into the graph's nodes
    node_config_feat: np.ndarray  # (c, nc, 18) float32, -1 pads, all -1 = compiler default
    config_runtime: np.ndarray  # (c,) int64 ns
    config_runtime_samples: np.ndarray | None = None  # (c, s) int64 ns


@dataclass(kw_only=True)
class FusionConfigArrays(LayoutConfigArrays):
    """hlotune's fusion collection: per-node configs as in layout, on the kernels of XLA:CPU's
    default fused module. `node_config_feat` is (c, nc, 5), one-hot: keep, merge, split at the
    kernel's 1st, 2nd or 3rd offered point; a row of keeps is XLA's own fusion
    (compiler/spaces/fusion_features.py)."""

    node_config_choices: np.ndarray  # (nc, 5) int64: the node each decision acts on, -1 if not offered


@dataclass
class FlagConfigArrays:
    """hlotune's graph-level config collection: one row of named features per config.

    Used for module-level compiler options (XLA flags) measured by hlotune itself.
    `config_runtime_samples` optionally keeps every measured sample (ns) behind the median.
    """

    config_feat: np.ndarray  # (c, f) float32
    config_feat_names: np.ndarray  # (f,) unicode
    config_runtime: np.ndarray  # (c,) int64 ns (median)
    config_runtime_samples: np.ndarray | None = None  # (c, s) int64 ns
    config_feat_numerics: np.ndarray | None = None  # (f,) int64: 1 = a numerics-changing option


ConfigArrays = TileConfigArrays | LayoutConfigArrays | FusionConfigArrays | FlagConfigArrays


@dataclass
class GraphSample:
    """One TpuGraphs file: a graph, its configurations and where it came from."""

    graph: GraphArrays
    configs: ConfigArrays | None
    name: str = ""
    source: str = ""  # path or program spec it was built from

    @property
    def collection(self) -> str | None:
        return collection_of(self.configs)

    @property
    def num_configs(self) -> int:
        return 0 if self.configs is None else int(self.configs.config_runtime.shape[0])

    @property
    def labelled(self) -> bool:
        """Test splits of TpuGraphs carry runtimes that are all 0: their labels are secret."""
        return self.num_configs > 0 and bool(np.any(self.configs.config_runtime != 0))

    def to_pyg(self) -> Data:
        """This sample as a PyTorch Geometric `Data`, for PyG models and loaders.

        `x` node features, `node_opcode`, `edge_index` in PyG's sender-first order (operand ->
        consumer, the TpuGraphs [u, v] rows flipped); with configs, `config_feat` (tile, flags:
        `(c, f)`, layout: `(c, nc, 18)`, fusion: `(c, nc, 5)`), `config_runtime` `(c,)` ns and,
        for layout and fusion, `node_config_index` (TpuGraphs' node_config_ids, named so that
        batching offsets it).
        """
        import torch
        from torch_geometric.data import Data

        graph = self.graph
        data = Data(
            x=torch.as_tensor(graph.node_feat, dtype=torch.float32),
            node_opcode=torch.as_tensor(graph.node_opcode.astype(np.int64)),
            edge_index=torch.as_tensor(graph.edge_index.T[::-1].astype(np.int64)),
            num_nodes=graph.num_nodes,
        )
        configs = self.configs
        if configs is not None:
            data.config_runtime = torch.as_tensor(configs.config_runtime)
            layout = isinstance(configs, LayoutConfigArrays)
            feat = configs.node_config_feat if layout else configs.config_feat
            data.config_feat = torch.as_tensor(feat, dtype=torch.float32)
            if layout:
                data.node_config_index = torch.as_tensor(configs.node_config_ids)
        return data


def collection_of(configs: ConfigArrays | None) -> str | None:
    return {TileConfigArrays: "tile", LayoutConfigArrays: "layout", FusionConfigArrays: "fusion",
            FlagConfigArrays: "flags"}.get(type(configs))
