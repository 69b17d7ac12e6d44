"""Raw TpuGraphs records (the dataset's `pb/` files) and plain HloModuleProtos, told apart.

A `.pb` holds one of three messages (field numbers in docs/format.md):
- HloModuleProto: a program only;
- ModuleTuningData: a program, its measured runs and, for layouts, `config_index_to_node`;
- TuningData: many ModuleTuningData, one per kernel (the tile collection).
All three start with field 1: the module's name (a string), the module (a message) or a
ModuleTuningData (a message). The depth of field-1 nesting before a string tells them apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hlotune.data.sample import ConfigArrays, LayoutConfigArrays, TileConfigArrays
from hlotune.errors import HlotuneError
from hlotune.hlo import wire
from hlotune.hlo.graph import HloGraph
from hlotune.hlo.proto import graph_from_fields

MODULE, MODULE_TUNING_DATA, TUNING_DATA = "HloModuleProto", "ModuleTuningData", "TuningData"

_TENSOR_SLOTS, _TENSORS = 6, 3  # layout config: (output, input, kernel) x 6 dims
_TILE_SLOTS = 6


@dataclass
class ModuleRecord:
    """One program with the configurations measured on it (None for a bare HloModuleProto)."""

    graph: HloGraph
    configs: ConfigArrays | None
    fingerprint: int = 0


def read_pb(data: bytes, *, name: str = "") -> tuple[str, list[ModuleRecord]]:
    """Parse a `.pb` of any of the three kinds: (kind, one record per module)."""
    if not data:
        raise HlotuneError("empty protobuf file")
    top = wire.decode(data)
    kind = pb_kind(top)
    if kind == MODULE:
        return kind, [ModuleRecord(graph_from_fields(top, name=name), None)]
    if kind == MODULE_TUNING_DATA:
        return kind, [_module_tuning_data(top, name)]
    kernels = wire.messages(top, 1)
    return kind, [_module_tuning_data(k, f"{name}:{i}" if name else "") for i, k in enumerate(kernels)]


def pb_kind(top: wire.Fields) -> str:
    depth, fields = 0, top
    while depth < 3:
        first = fields.get(1)
        if not first or isinstance(first[0], int) or not _is_message_start(first[0]):
            break
        try:
            fields = wire.decode(first[0])
        except wire.WireError:
            break
        depth += 1
    if depth >= 3:
        raise HlotuneError("unrecognised protobuf: not an HloModuleProto or TpuGraphs record")
    return (MODULE, MODULE_TUNING_DATA, TUNING_DATA)[depth]


def _is_message_start(payload: bytes) -> bool:
    """Module names are printable text; a message starts with a field tag (a control byte)."""
    return payload[:1] < b" "


def _module_tuning_data(fields: wire.Fields, name: str) -> ModuleRecord:
    module = wire.message(fields, 1)
    if module is None:
        raise HlotuneError("ModuleTuningData without a module")
    graph = graph_from_fields(module, name=name)
    runs = [run for run in wire.messages(fields, 3) if _usable(run)]
    node_ids = wire.ints(fields, 4, signed=False)
    if any(wire.message(run, 2) is not None for run in runs) or node_ids:
        configs = _layout_configs(runs, node_ids, graph.num_nodes)
    elif runs:
        configs = _tile_configs(runs, graph.name)
    else:
        configs = None  # a kernel with no successful run: its graph alone
    return ModuleRecord(graph, configs, wire.integer(fields, 2, signed=False))


def _usable(run: wire.Fields) -> bool:
    """The official pipeline keeps runs without error that carry a profile."""
    return not wire.integer(run, 3) and wire.message(run, 4) is not None


def _runtime_ns(run: wire.Fields) -> int:
    return wire.integer(wire.message(run, 4), 4)


def _layout_configs(runs: list[wire.Fields], node_ids: list[int], n: int) -> LayoutConfigArrays:
    if any(i >= n for i in node_ids):
        raise HlotuneError(f"config_index_to_node names a node beyond the module's {n} nodes")
    runs = [run for run in runs if wire.message(run, 2) is not None]
    feat = np.full((len(runs), len(node_ids), _TENSORS * _TENSOR_SLOTS), -1, np.float32)
    for c, run in enumerate(runs):
        layout = wire.message(wire.message(run, 2), 1) or {}
        for k, node in enumerate(wire.messages(layout, 1)[: len(node_ids)]):
            for t, tensor in enumerate(wire.messages(node, 1)[:_TENSORS]):
                dims = wire.ints(tensor, 1)[:_TENSOR_SLOTS]
                start = t * _TENSOR_SLOTS
                feat[c, k, start : start + len(dims)] = dims
    return LayoutConfigArrays(
        node_config_ids=np.array(node_ids, np.int64),
        node_config_feat=feat,
        config_runtime=np.array([_runtime_ns(r) for r in runs], np.int64),
    )


def _tile_configs(runs: list[wire.Fields], kernel: str) -> TileConfigArrays:
    runs = [run for run in runs if wire.message(run, 1) is not None]
    defaults = [_runtime_ns(run) for run in runs if wire.integer(run, 5)]
    if not defaults:
        raise HlotuneError(f"kernel {kernel!r} has no successful default run to normalise by")
    rows = []
    for run in runs:
        tile = wire.message(wire.message(run, 1), 1) or {}
        rows.append([v for n in (1, 2, 3) for v in tile_seq(wire.ints(tile, n))])
    runtimes = np.array([_runtime_ns(r) for r in runs], np.int64)
    return TileConfigArrays(
        config_feat=np.array(rows, np.float32).reshape(len(runs), 3 * (_TILE_SLOTS + 2)),
        config_runtime=runtimes,
        config_runtime_normalizers=np.full_like(runtimes, defaults[0]),
    )


def tile_seq(values: list[int]) -> list[int]:
    """Seq<6> of tile bounds; unlike node features, an empty list has product 0."""
    head = values[:_TILE_SLOTS] + [0] * (_TILE_SLOTS - len(values[:_TILE_SLOTS]))
    product = int(np.prod(values, dtype=np.int64)) if values else 0
    return [*head, sum(values), product]
