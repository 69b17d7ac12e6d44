"""Read a serialized XLA HloModuleProto into an HloGraph, by the field numbers of hlo.proto.

Field numbers are facts of XLA's public `hlo.proto` / `xla_data.proto` (listed in
docs/format.md). Only the fields that graphs and features need are read.
"""

from __future__ import annotations

import sys
from functools import lru_cache

from hlotune.errors import HlotuneError
from hlotune.hlo import wire
from hlotune.hlo.graph import (
    Computation,
    ConvolutionDims,
    DotDims,
    GatherDims,
    HloGraph,
    Instruction,
    PaddingDim,
    ScatterDims,
    Shape,
    SliceDim,
    WindowDim,
)


def graph_from_proto(data: bytes, *, name: str = "") -> HloGraph:
    """Parse HloModuleProto bytes. Raises HlotuneError on anything that is not such a proto."""
    if not data:
        raise HlotuneError("empty HloModuleProto")
    return graph_from_fields(wire.decode(data), name=name)


def graph_from_fields(module: wire.Fields, *, name: str = "") -> HloGraph:
    computations = [_computation(c) for c in wire.iter_messages(module, 3)]
    if not computations or not any(c.instructions for c in computations):
        raise HlotuneError("not an HloModuleProto: it holds no computations with instructions")
    graph = HloGraph(
        name=name or wire.string(module, 1),
        computations=computations,
        entry_computation_id=wire.integer(module, 6),
    )
    graph.resolve_references()
    return graph


def _computation(fields: wire.Fields) -> Computation:
    return Computation(
        name=wire.string(fields, 1),
        id=wire.integer(fields, 5),
        root_id=wire.integer(fields, 6),
        instructions=[_instruction(i) for i in wire.iter_messages(fields, 2)],
    )


def _instruction(f: wire.Fields) -> Instruction:
    opcode = wire.string(f, 2)
    if not opcode:
        raise HlotuneError(f"instruction {wire.string(f, 1)!r} has no opcode")
    shape = wire.raw(f, 3)
    return Instruction(
        name=wire.string(f, 1),
        opcode=sys.intern(opcode),  # a few dozen opcodes: one string each, not one per node
        id=wire.integer(f, 35),
        shape=_cached_shape(shape) if shape is not None else Shape(0),
        op_name=_op_name(wire.raw(f, 7)),
        operand_ids=tuple(wire.ints(f, 36)),
        called_computation_ids=tuple(wire.ints(f, 38)),
        parameter_number=wire.integer(f, 9),
        tuple_index=wire.integer(f, 13),
        dimensions=tuple(wire.ints(f, 14)),
        window=_window(wire.message(f, 15)),
        convolution_dims=_optional(_convolution_dims, wire.message(f, 16)),
        slice_dims=tuple(_slice_dim(s) for s in wire.messages(f, 17)),
        dynamic_slice_sizes=tuple(wire.ints(f, 20)),
        padding=_padding(wire.message(f, 21)),
        dot_dims=_optional(_dot_dims, wire.message(f, 30)),
        gather_dims=_optional(_gather_dims, wire.message(f, 33)),
        gather_slice_sizes=tuple(wire.ints(f, 34)),
        scatter_dims=_optional(_scatter_dims, wire.message(f, 48)),
        feature_group_count=wire.integer(f, 50),
        batch_group_count=wire.integer(f, 58),
        is_stable=bool(wire.integer(f, 60)),
    )


def _op_name(metadata: bytes | None) -> str:
    """OpMetadata.op_name (field 2): where JAX records the op and its name scopes."""
    return "" if metadata is None else wire.string(wire.decode(metadata), 2)


def _optional(parse, fields: wire.Fields | None):
    return None if fields is None else parse(fields)


@lru_cache(maxsize=4096)
def _cached_shape(data: bytes) -> Shape:
    """Modules repeat a few shapes many times: parse each once and share it (Shape is frozen)."""
    return _shape(wire.decode(data))


def _shape(f: wire.Fields) -> Shape:
    layout = wire.message(f, 5)
    return Shape(
        element_type=wire.integer(f, 2),
        dims=tuple(wire.ints(f, 3)),
        tuple_shapes=tuple(_shape(t) for t in wire.messages(f, 4)),
        minor_to_major=tuple(wire.ints(layout, 1)) if layout is not None else (),
    )


def _window(f: wire.Fields | None) -> tuple[WindowDim, ...]:
    if f is None:
        return ()
    return tuple(
        WindowDim(*(wire.integer(d, n) for n in range(1, 7)), bool(wire.integer(d, 7)))
        for d in wire.messages(f, 1)
    )


def _convolution_dims(f: wire.Fields) -> ConvolutionDims:
    return ConvolutionDims(
        input_batch=wire.integer(f, 7),
        input_feature=wire.integer(f, 8),
        input_spatial=tuple(wire.ints(f, 11)),
        kernel_input_feature=wire.integer(f, 3),
        kernel_output_feature=wire.integer(f, 4),
        kernel_spatial=tuple(wire.ints(f, 6)),
        output_batch=wire.integer(f, 9),
        output_feature=wire.integer(f, 10),
        output_spatial=tuple(wire.ints(f, 12)),
    )


def _slice_dim(f: wire.Fields) -> SliceDim:
    return SliceDim(start=wire.integer(f, 1), limit=wire.integer(f, 2), stride=wire.integer(f, 3))


def _padding(f: wire.Fields | None) -> tuple[PaddingDim, ...]:
    if f is None:
        return ()
    return tuple(
        PaddingDim(wire.integer(d, 1), wire.integer(d, 2), wire.integer(d, 3))
        for d in wire.messages(f, 1)
    )


def _dot_dims(f: wire.Fields) -> DotDims:
    return DotDims(*(tuple(wire.ints(f, n)) for n in range(1, 5)))


def _gather_dims(f: wire.Fields) -> GatherDims:
    return GatherDims(*(tuple(wire.ints(f, n)) for n in range(1, 4)), wire.integer(f, 4))


def _scatter_dims(f: wire.Fields) -> ScatterDims:
    return ScatterDims(*(tuple(wire.ints(f, n)) for n in range(1, 4)), wire.integer(f, 4))
