"""HloGraph: one XLA HLO module as a graph of instructions, in the order of its proto.

Every importer (JAX, HLO text, HloModuleProto, raw TpuGraphs record) produces this object, and
every consumer (featurizer, compiler backends, graph optimiser) reads it. Node index = position
in the proto walk: computations as stored, instructions as stored; ids only resolve references.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from hlotune.errors import HlotuneError


TUPLE = 13  # the xla PrimitiveType number of a tuple
# Bits per element of each xla PrimitiveType number; 0 for TUPLE, OPAQUE, TOKEN and unknowns.
ELEMENT_BITS = {1: 8, 2: 8, 3: 16, 4: 32, 5: 64, 6: 8, 7: 16, 8: 32, 9: 64, 10: 16, 11: 32,
                12: 64, 15: 64, 16: 16, 18: 128, 19: 8, 20: 8, 21: 4, 22: 4, 23: 8, 24: 8,
                25: 8, 28: 8, 29: 8, 32: 4, 33: 8}


@dataclass(frozen=True, slots=True)
class Shape:
    element_type: int  # xla PrimitiveType number (F32 = 11, TUPLE = 13, ...)
    dims: tuple[int, ...] = ()
    tuple_shapes: tuple[Shape, ...] = ()
    minor_to_major: tuple[int, ...] = ()  # empty when the shape carries no layout

    @property
    def elements(self) -> int:
        """Element count; a tuple counts the elements of its leaves."""
        if self.tuple_shapes:
            return sum(s.elements for s in self.tuple_shapes)
        return math.prod(self.dims)

    @property
    def nbytes(self) -> int:
        """Bytes of the buffer (a tuple: of its leaves)."""
        if self.tuple_shapes:
            return sum(s.nbytes for s in self.tuple_shapes)
        return math.prod(self.dims) * ELEMENT_BITS.get(self.element_type, 0) // 8


@dataclass(frozen=True, slots=True)
class WindowDim:
    size: int = 0
    stride: int = 0
    padding_low: int = 0
    padding_high: int = 0
    window_dilation: int = 0
    base_dilation: int = 0
    window_reversal: bool = False


@dataclass(frozen=True, slots=True)
class ConvolutionDims:
    input_batch: int = 0
    input_feature: int = 0
    input_spatial: tuple[int, ...] = ()
    kernel_input_feature: int = 0
    kernel_output_feature: int = 0
    kernel_spatial: tuple[int, ...] = ()
    output_batch: int = 0
    output_feature: int = 0
    output_spatial: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class SliceDim:
    start: int = 0
    limit: int = 0
    stride: int = 0


@dataclass(frozen=True, slots=True)
class PaddingDim:
    low: int = 0
    high: int = 0
    interior: int = 0


@dataclass(frozen=True, slots=True)
class DotDims:
    lhs_contracting: tuple[int, ...] = ()
    rhs_contracting: tuple[int, ...] = ()
    lhs_batch: tuple[int, ...] = ()
    rhs_batch: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class GatherDims:
    offset_dims: tuple[int, ...] = ()
    collapsed_slice_dims: tuple[int, ...] = ()
    start_index_map: tuple[int, ...] = ()
    index_vector_dim: int = 0


@dataclass(frozen=True, slots=True)
class ScatterDims:
    update_window_dims: tuple[int, ...] = ()
    inserted_window_dims: tuple[int, ...] = ()
    scatter_dims_to_operand_dims: tuple[int, ...] = ()
    index_vector_dim: int = 0


@dataclass(slots=True)
class Instruction:
    """One HLO instruction with the attributes the featurizers read.

    Unset proto fields keep the proto's zero value (not an opcode's semantic default), as the
    official TpuGraphs extractor does.
    """

    name: str
    opcode: str
    id: int
    shape: Shape
    op_name: str = ""  # metadata: the framework op it came from (JAX name scopes included)
    operand_ids: tuple[int, ...] = ()
    called_computation_ids: tuple[int, ...] = ()
    parameter_number: int = 0
    tuple_index: int = 0
    dimensions: tuple[int, ...] = ()
    window: tuple[WindowDim, ...] = ()
    convolution_dims: ConvolutionDims | None = None
    slice_dims: tuple[SliceDim, ...] = ()
    dynamic_slice_sizes: tuple[int, ...] = ()
    padding: tuple[PaddingDim, ...] = ()
    dot_dims: DotDims | None = None
    gather_dims: GatherDims | None = None
    gather_slice_sizes: tuple[int, ...] = ()
    scatter_dims: ScatterDims | None = None
    feature_group_count: int = 0
    batch_group_count: int = 0
    is_stable: bool = False


@dataclass(slots=True)
class Computation:
    name: str
    id: int
    root_id: int
    instructions: list[Instruction] = field(default_factory=list)


@dataclass
class HloGraph:
    """An HLO module: computations in proto order, each with its instructions in proto order."""

    name: str
    computations: list[Computation]
    entry_computation_id: int = 0

    @cached_property
    def instructions(self) -> list[Instruction]:
        return [inst for comp in self.computations for inst in comp.instructions]

    @property
    def num_nodes(self) -> int:
        return len(self.instructions)

    @cached_property
    def computation_starts(self) -> np.ndarray:
        """Node index of the first instruction of each computation, then the node count."""
        sizes = [len(comp.instructions) for comp in self.computations]
        return np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)

    @cached_property
    def is_root(self) -> np.ndarray:
        """Whether each node is the root of its own computation."""
        roots = np.zeros(self.num_nodes, dtype=bool)
        for comp, start, local in self._walk():
            roots[start + local[comp.root_id]] = True
        return roots

    @cached_property
    def operands(self) -> list[tuple[int, ...]]:
        """Node indices of each node's distinct operands, in first-use order."""
        out: list[tuple[int, ...]] = []
        for comp, start, local in self._walk():
            for inst in comp.instructions:
                try:
                    out.append(tuple(dict.fromkeys(start + local[i] for i in inst.operand_ids)))
                except KeyError as missing:
                    raise HlotuneError(
                        f"instruction {inst.name!r} uses operand id {missing} "
                        f"that is not in computation {comp.name!r}"
                    ) from None
        return out

    @cached_property
    def called_roots(self) -> list[tuple[int, ...]]:
        """Node indices of the roots of the computations each node calls."""
        root_of = {comp.id: int(start + local[comp.root_id]) for comp, start, local in self._walk()}
        out = []
        for inst in self.instructions:
            try:
                out.append(tuple(root_of[c] for c in inst.called_computation_ids))
            except KeyError as missing:
                raise HlotuneError(
                    f"instruction {inst.name!r} calls unknown computation id {missing}"
                ) from None
        return out

    def resolve_references(self) -> None:
        """Resolve every id now, so that a dangling one fails at import, not in a later stage."""
        _ = self.is_root, self.operands, self.called_roots

    def edge_index(self) -> np.ndarray:
        """TpuGraphs edges [u, v] = "u consumes v": operands, then caller -> callee root; sorted."""
        pairs = [
            (u, v)
            for u, (ops, roots) in enumerate(zip(self.operands, self.called_roots))
            for v in (*ops, *roots)
            if u != v
        ]
        edges = np.array(pairs, dtype=np.int64).reshape(-1, 2)
        return edges[np.lexsort((edges[:, 1], edges[:, 0]))]

    @cached_property
    def _local_indices(self) -> list[dict[int, int]]:
        """Per computation, instruction id -> position (ids are only unique per computation)."""
        indices = []
        for comp in self.computations:
            index = {inst.id: i for i, inst in enumerate(comp.instructions)}
            if comp.root_id not in index:
                raise HlotuneError(
                    f"computation {comp.name!r} has no root instruction with id {comp.root_id}"
                )
            indices.append(index)
        return indices

    def _walk(self):
        return zip(self.computations, self.computation_starts, self._local_indices)
