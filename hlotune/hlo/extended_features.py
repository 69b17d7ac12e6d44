"""Opt-in node features beyond TpuGraphs' 140 (appended as columns 140 and up).

The official 140 miss what Kaggle teams found predictive: dot dimension numbers, gather and
scatter dimension numbers, the tuple index, and sizes on a scale a network can use. Columns
and meanings are listed in `EXTENDED_FEATURE_NAMES` and docs/features.md. Absent values are 0,
as in the 140; counts tell a present 0 from an absent one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from hlotune.hlo.graph import Instruction

_DIM_SLOTS = 3  # leading entries kept of each dimension-number list

_DIM_LISTS = (
    "dot_lhs_contracting",
    "dot_rhs_contracting",
    "dot_lhs_batch",
    "dot_rhs_batch",
    "gather_offset_dims",
    "gather_collapsed_slice_dims",
    "gather_start_index_map",
    "scatter_update_window_dims",
    "scatter_inserted_window_dims",
    "scatter_dims_to_operand_dims",
)


def _list_columns(name: str) -> list[str]:
    return [f"{name}_{i}" for i in range(_DIM_SLOTS)] + [f"{name}_count"]


EXTENDED_FEATURE_NAMES: tuple[str, ...] = (
    *(column for name in _DIM_LISTS for column in _list_columns(name)),
    "gather_index_vector_dim",
    "scatter_index_vector_dim",
    "gather_slice_sizes_slog_product",
    "tuple_index",
    "operand_count",
    "slog_output_elements",
    "slog_output_bytes",
    "slog_window_elements",
)


def extended_row(inst: Instruction | None) -> list[float]:
    """The extended features of one instruction (None gives a row of the right width)."""
    if inst is None:
        return [0.0] * len(EXTENDED_FEATURE_NAMES)
    dot, gather, scatter = inst.dot_dims, inst.gather_dims, inst.scatter_dims
    lists: list[Sequence[int]] = [
        *((dot.lhs_contracting, dot.rhs_contracting, dot.lhs_batch, dot.rhs_batch)
          if dot else [()] * 4),
        *((gather.offset_dims, gather.collapsed_slice_dims, gather.start_index_map)
          if gather else [()] * 3),
        *((scatter.update_window_dims, scatter.inserted_window_dims,
           scatter.scatter_dims_to_operand_dims) if scatter else [()] * 3),
    ]
    window_elements = math.prod(w.size for w in inst.window) if inst.window else 0
    return [
        *(value for values in lists for value in _dim_list(values)),
        gather.index_vector_dim if gather else 0,
        scatter.index_vector_dim if scatter else 0,
        sign_log(math.prod(inst.gather_slice_sizes)) if inst.gather_slice_sizes else 0.0,
        inst.tuple_index,
        len(inst.operand_ids),
        sign_log(inst.shape.elements),
        sign_log(inst.shape.nbytes),
        sign_log(window_elements),
    ]


def sign_log(value: float) -> float:
    """sign(x) * log1p(|x|): keeps order and sign, tames products of dimensions."""
    return math.copysign(math.log1p(abs(value)), value)


def _dim_list(values: Sequence[int]) -> list[int]:
    head = list(values[:_DIM_SLOTS])
    return head + [0] * (_DIM_SLOTS - len(head)) + [len(values)]


