"""A cheap look at a program, for predicting what tuning its flags may gain (gain_model.py).

Computed from the TpuGraphs arrays alone (the 140 node features, opcodes and edges), so a graph
the flags collection stored and a recorded program featurized at fleet-tune time
(`program_graph`: the same unoptimised lowering the collector featurizes) get the same numbers
the same way. The opcode mix alone ranks programs' gains poorly (issue 49) and cannot tell a
tiny variant from a small one of the same graph; the gains come with tensor sizes (YNN's dot
and reduce fusions, algebraic rewrites of large convolutions), so this adds a roofline of the
graph: each op's bytes (operands read, output written) and flops (hlo/flops.py's rule, the cost
analysis' too), from the shapes in its node features, summed per kind of op, after
hlo/costs.py's model of a core.
"""

from __future__ import annotations

import numpy as np

from hlotune.data.sample import GraphArrays
from hlotune.hlo.costs import CORE_BANDWIDTH, CORE_FLOPS, LAUNCH_S, NO_KERNEL
from hlotune.hlo.featurize import ONE_HOT_ORDER, featurize
from hlotune.hlo.flops import ELEMENTWISE, FlopKind, applications, flop_kind, op_flops
from hlotune.hlo.graph import ELEMENT_BITS
from hlotune.hlo.opcodes import OPCODE_IDS, OPCODE_NAMES
from hlotune.programs.program import Program

# Node feature columns (docs/features.md).
_TYPE, _DIMS, _ELEMENTS = slice(2, 21), slice(21, 27), 28
_DIMENSIONS, _WINDOW_ELEMENTS = 31, 44  # the first `dimensions` entry; the window sizes' product
_OUTPUT_FEATURE = 106  # the output feature dimension of a convolution
# Bytes per element of the element type one-hot's columns (tuples, tokens, opaque: 0).
_TYPE_BYTES = np.array([ELEMENT_BITS.get(t, 0) / 8 for t in ONE_HOT_ORDER], np.float64)
_BF16_COLUMN, _F32_COLUMN = 13, 11
_INTEGER_COLUMNS = [2, 3, 4, 5, 6, 7, 8, 9]

MOVEMENT = frozenset({"copy", "transpose", "concatenate", "slice", "dynamic-slice", "pad",
                      "dynamic-update-slice", "gather", "scatter", "reverse"})
REDUCTIONS = frozenset({"reduce", "reduce-window", "select-and-scatter"})
CONTROL = ("while", "custom-call", "sort", "scatter", "gather")
KINDS = ("dot", "convolution", "elementwise", "reduce", "movement", "other")
_FLOP_KINDS = np.array([flop_kind(op) for op in OPCODE_NAMES])

FEATURE_NAMES: tuple[str, ...] = (
    "log_kernels", "log_flops", "log_bytes", "log_roofline_s", "log_intensity",
    "launch_share", "log_max_tensor_bytes", "log_input_bytes", "log_largest_dot_flops",
    *(f"time_share_{kind}" for kind in KINDS),
    *(f"byte_share_{kind}" for kind in KINDS),
    *(f"count_share_{kind}" for kind in KINDS),
    "bf16_byte_share", "f32_byte_share", "integer_byte_share",
    *(f"log_count_{op.replace('-', '_')}" for op in CONTROL),
)


def program_graph(program: Program) -> GraphArrays:
    """The graph the flags collection stores for `program`: its default build, lowered before
    XLA's passes (compiler/configs/layouts.py), featurized. A lowering: no compile, no run."""
    from hlotune.compiler.configs.layouts import LayoutSpace

    return featurize(LayoutSpace(program).graph, progress=False)


def program_features(graph: GraphArrays) -> np.ndarray:
    """The FEATURE_NAMES of a graph, float64."""
    feat = graph.node_feat.astype(np.float64)
    opcodes = graph.node_opcode.astype(np.int64)
    kernel = ~np.isin(opcodes, _ids(NO_KERNEL))
    out_bytes = feat[:, _ELEMENTS] * (feat[:, _TYPE] @ _TYPE_BYTES)
    consumer, operand = graph.edge_index[:, 0], graph.edge_index[:, 1]
    bytes_in = np.bincount(consumer, out_bytes[operand], minlength=graph.num_nodes)
    traffic = np.where(kernel, bytes_in + out_bytes, 0.0)
    flops = np.where(kernel, _flops(feat, opcodes, graph.edge_index), 0.0)
    seconds = np.where(kernel, np.maximum(flops / CORE_FLOPS, traffic / CORE_BANDWIDTH) + LAUNCH_S, 0.0)
    kinds = _kinds(opcodes)
    type_bytes = feat[:, _TYPE] * out_bytes[:, None]
    total_bytes, total_time = max(traffic.sum(), 1.0), max(seconds.sum(), 1e-12)
    dots = opcodes == OPCODE_IDS["dot"]
    return np.array([
        np.log1p(kernel.sum()), np.log1p(flops.sum()), np.log1p(traffic.sum()),
        np.log(total_time), np.log1p(flops.sum()) - np.log1p(traffic.sum()),
        kernel.sum() * LAUNCH_S / total_time, np.log1p(out_bytes.max(initial=0.0)),
        np.log1p(_input_bytes(opcodes, kernel, out_bytes, graph.edge_index)),
        np.log1p(flops[dots].max(initial=0.0)),
        *(seconds[kinds == k].sum() / total_time for k in range(len(KINDS))),
        *(traffic[kinds == k].sum() / total_bytes for k in range(len(KINDS))),
        *((kernel & (kinds == k)).sum() / max(kernel.sum(), 1) for k in range(len(KINDS))),
        *(type_bytes[:, c].sum() / max(out_bytes.sum(), 1.0) for c in (_BF16_COLUMN, _F32_COLUMN)),
        type_bytes[:, _INTEGER_COLUMNS].sum() / max(out_bytes.sum(), 1.0),
        *(np.log1p((opcodes == OPCODE_IDS[op]).sum()) for op in CONTROL),
    ])


def _input_bytes(opcodes: np.ndarray, kernel: np.ndarray, out_bytes: np.ndarray, edges: np.ndarray) -> float:
    """Bytes of the parameters some kernel reads: the program's inputs, counted once however
    many computations pass them on (an exported program's wrapper adds a `call` and its own)."""
    read = np.zeros(len(opcodes), bool)
    read[edges[kernel[edges[:, 0]], 1]] = True
    return float(out_bytes[read & (opcodes == OPCODE_IDS["parameter"])].sum())


def _flops(feat: np.ndarray, opcodes: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Per node, hlo/flops.py's rule on what the arrays show: a dot contracts one dimension, its
    batch dimensions leading the output; a convolution's kernel is its smaller operand; a lambda
    (not in the arrays) is one flop an application."""
    elements = feat[:, _ELEMENTS]
    rank = (feat[:, _DIMS] > 0).sum(axis=1)
    operands = [[] for _ in range(len(opcodes))]
    for u, v in edges:
        operands[u].append(v)
    kinds = _FLOP_KINDS[opcodes]
    contracted, applied = np.zeros(len(opcodes)), np.zeros(len(opcodes))
    for node in np.flatnonzero(kinds == FlopKind.CONTRACTION):
        contracted[node] = _contracted(feat, rank, opcodes[node] == OPCODE_IDS["dot"], node, operands[node])
    for node in np.flatnonzero(kinds == FlopKind.APPLIES):
        applied[node] = _applications(feat, OPCODE_NAMES[opcodes[node]], node, operands[node])
    return op_flops(kinds, elements, contracted, applied)


def _contracted(feat: np.ndarray, rank: np.ndarray, dot: bool, node: int, operands: list[int]) -> float:
    """A dot's contracted size: lhs x rhs = batch x output x contracted^2 for one contracting
    dimension, the batch dimensions (lhs rank + rhs rank - output rank - 2) leading the output.
    A convolution's: its kernel's elements over its output features (the first 6 dimensions:
    one past them counts 1)."""
    sizes = [feat[v, _ELEMENTS] for v in operands]
    out = max(feat[node, _ELEMENTS], 1.0)
    if not dot:
        dims = feat[node, _DIMS]
        axis = feat[node, _OUTPUT_FEATURE]
        features = max(dims[int(axis)] if axis < len(dims) else 1.0, 1.0)
        return min(sizes, default=0.0) / features
    if len(operands) != 2:
        return 0.0
    batch_rank = max(int(rank[operands[0]] + rank[operands[1]] - rank[node] - 2), 0)
    batch = max(float(np.prod(feat[node, _DIMS][:batch_rank])), 1.0)
    return float(np.sqrt(sizes[0] * sizes[1] / (out * batch)))


def _applications(feat: np.ndarray, opcode: str, node: int, operands: list[int]) -> float:
    """From the largest operand: an edge also reaches the called lambda's root, a scalar."""
    largest = max(operands, key=lambda v: feat[v, _ELEMENTS], default=None)
    if largest is None:
        return 0.0
    axis = int(feat[node, _DIMENSIONS])
    length = feat[largest, _DIMS][axis] if opcode == "sort" and axis < 6 else 1.0
    return applications(opcode, feat[node, _ELEMENTS], feat[largest, _ELEMENTS],
                        window=max(feat[node, _WINDOW_ELEMENTS], 1.0), sort_length=length)


def _kinds(opcodes: np.ndarray) -> np.ndarray:
    """Each node's index in KINDS."""
    kinds = np.full(len(opcodes), KINDS.index("other"))
    for kind, ops in (("elementwise", ELEMENTWISE), ("reduce", REDUCTIONS), ("movement", MOVEMENT),
                      ("dot", {"dot"}), ("convolution", {"convolution"})):
        kinds[np.isin(opcodes, _ids(ops))] = KINDS.index(kind)
    return kinds


def _ids(opcodes) -> list[int]:
    return [OPCODE_IDS[op] for op in opcodes if op in OPCODE_IDS]
