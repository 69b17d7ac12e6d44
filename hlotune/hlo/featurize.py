"""HloGraph -> TpuGraphs arrays, exactly as the official extractor computes them.

The 140 node features are raw integer values stored as float32 (docs/features.md). Sums and
products are int64 arithmetic converted to float32 once, so they round as the original does.
Absent attribute groups still get their aggregates: an empty list has sum 0 and product 1.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from hlotune.data.sample import GraphArrays
from hlotune.hlo.extended_features import extended_row
from hlotune.hlo.graph import HloGraph, Instruction, PaddingDim, SliceDim, WindowDim
from hlotune.hlo.opcodes import opcode_id
from hlotune.progress import progress_bar

NUM_NODE_FEATURES = 140

# The PrimitiveType numbers of the one-hot block (columns 2-20), in column order.
ONE_HOT_ORDER = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 15, 18, 13, 14, 17)
_NO_ONE_HOT = (0,) * len(ONE_HOT_ORDER)
_ONE_HOT = {  # PrimitiveType number -> the block's 19 values, built once
    ptype: tuple(int(j == i) for j in range(len(ONE_HOT_ORDER)))
    for i, ptype in enumerate(ONE_HOT_ORDER)
}
_SPLIT_MARKERS = ("cluster", "while", "cond")
_CHUNK = 8192  # rows built as Python ints before one conversion to int64
_PROGRESS_FROM = 100_000  # nodes: smaller graphs featurize in a second or two


def featurize(graph: HloGraph, *, extended: bool = False, progress: bool = True) -> GraphArrays:
    """The TpuGraphs arrays of a module; `extended` appends docs/features.md's extra columns.
    A bar shows (on a terminal, with `progress`) for graphs that take more than a second or two."""
    is_root = graph.is_root.tolist()
    width = NUM_NODE_FEATURES + (len(extended_row(None)) if extended else 0)
    node_feat = np.empty((graph.num_nodes, width), np.float32)  # filled in place: no copies
    show = progress and graph.num_nodes >= _PROGRESS_FROM
    for start in progress_bar(range(0, graph.num_nodes, _CHUNK), desc="featurize", unit="chunk",
                              show=show, leave=False):
        chunk = graph.instructions[start : start + _CHUNK]
        block = node_feat[start : start + len(chunk)]
        block[:, :NUM_NODE_FEATURES] = _to_float32(
            [node_row(inst, is_root[start + i]) for i, inst in enumerate(chunk)]
        )
        if extended:
            block[:, NUM_NODE_FEATURES:] = np.array([extended_row(i) for i in chunk], np.float32)
    return GraphArrays(
        node_feat=node_feat,
        node_opcode=np.array([opcode_id(i.opcode) for i in graph.instructions], np.uint8),
        edge_index=graph.edge_index(),
        node_splits=node_splits(graph),
    )


def node_splits(graph: HloGraph) -> np.ndarray:
    """0, the cumulative node count after each computation named like a cluster, while or
    cond, then the node count (the official extractor's computation groups)."""
    ends = graph.computation_starts[1:]
    marked = [
        int(end)
        for comp, end in zip(graph.computations, ends)
        if any(marker in comp.name for marker in _SPLIT_MARKERS)
    ]
    return np.array([[0, *marked, graph.num_nodes]], dtype=np.int64)


def node_row(inst: Instruction, is_root: bool) -> list[int]:
    """The 140 features of one instruction, as Python ints."""
    shape = inst.shape
    conv = inst.convolution_dims
    # Most instructions lack windows, slices and padding: those groups come precomputed.
    return [
        int(is_root),
        0,  # element_size_in_bits: always 0 in TpuGraphs
        *_ONE_HOT.get(shape.element_type, _NO_ONE_HOT),
        *seq(shape.dims, 6),
        len(shape.tuple_shapes),
        inst.parameter_number,
        *no_agg(inst.dimensions, 6),
        *(_window(inst.window) if inst.window else _NO_WINDOW),
        *(_convolution(conv) if conv is not None else _NO_CONVOLUTION),
        inst.feature_group_count,
        inst.batch_group_count,
        *(_slices(inst.slice_dims) if inst.slice_dims else _NO_SLICES),
        *seq(inst.dynamic_slice_sizes, 2),
        *(_padding(inst.padding) if inst.padding else _NO_PADDING),
        int(inst.is_stable),
        *no_agg(shape.minor_to_major, 6),
    ]


def seq(values: Sequence[int], k: int) -> list[int]:
    """Seq<k>: the first k values 0-padded, then sum and product over all values."""
    product = 1
    for v in values:
        product *= v
    return [*values[:k], *[0] * (k - len(values)), sum(values), product]


def no_agg(values: Sequence[int], k: int) -> list[int]:
    """NoAgg<k>: the first k values, 0-padded."""
    return [*values[:k], *[0] * (k - len(values))]


def bools(values: Sequence[bool], k: int) -> list[int]:
    """Bools<k>: the first k as 0/1, then the count of true and of false."""
    true = sum(map(bool, values))
    return [*map(int, values[:k]), *[0] * (k - len(values)), true, len(values) - true]


def _window(window: Sequence[WindowDim]) -> list[int]:
    return [
        *seq([w.size for w in window], 6),
        *seq([w.stride for w in window], 6),
        *seq([w.padding_low for w in window], 6),
        *seq([w.padding_high for w in window], 6),
        *seq([w.window_dilation for w in window], 6),
        *seq([w.base_dilation for w in window], 6),
        *bools([w.window_reversal for w in window], 6),
    ]


def _slices(slices: Sequence[SliceDim]) -> list[int]:
    return [
        *seq([s.start for s in slices], 2),
        *seq([s.stride for s in slices], 2),
        *seq([s.limit for s in slices], 2),
    ]


def _padding(padding: Sequence[PaddingDim]) -> list[int]:
    return [*seq([p.low for p in padding], 2), *seq([p.high for p in padding], 2)]


def _convolution(conv) -> list[int]:
    return [
        conv.input_batch,
        conv.input_feature,
        *no_agg(conv.input_spatial, 4),
        conv.kernel_input_feature,
        conv.kernel_output_feature,
        *no_agg(conv.kernel_spatial, 4),
        conv.output_batch,
        conv.output_feature,
    ]


_NO_CONVOLUTION = [0] * 14
_NO_WINDOW = _window(())
_NO_SLICES = _slices(())
_NO_PADDING = _padding(())


def _to_float32(rows: Iterable[list[int]]) -> np.ndarray:
    """Wrap to int64 as C++ arithmetic would, then round to float32 once."""
    try:
        ints = np.array(rows, dtype=np.int64)
    except OverflowError:
        ints = np.array([[_wrap_int64(v) for v in row] for row in rows], dtype=np.int64)
    return ints.astype(np.float32)


def _wrap_int64(value: int) -> int:
    return (value + (1 << 63)) % (1 << 64) - (1 << 63)
