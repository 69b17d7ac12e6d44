"""Composed modules: valid for hlotune and for XLA's own parser, and made of exact copies."""

from __future__ import annotations

import numpy as np
import pytest
from jaxlib import _hlo

from hlotune.errors import HlotuneError
from hlotune.hlo import wire
from hlotune.hlo.compose import compose_modules, zoo_protos
from hlotune.hlo.featurize import NUM_NODE_FEATURES, featurize
from hlotune.hlo.graph import HloGraph
from hlotune.hlo.proto import graph_from_proto

TINY = ("zoo:mlp@tiny-train", "zoo:cnn@tiny-train", "zoo:transformer@tiny")
TARGET = 5000


@pytest.fixture(scope="module")
def protos() -> list[bytes]:
    return list(zoo_protos(TINY))


@pytest.fixture(scope="module")
def composed(protos) -> bytes:
    return compose_modules(protos, TARGET)


def test_composed_module_parses_and_featurizes(protos, composed):
    graph = graph_from_proto(composed)
    largest = max(graph_from_proto(p).num_nodes for p in protos)
    assert TARGET <= graph.num_nodes < TARGET + largest  # stops at the first copy past it
    assert graph.name == "composed"
    arrays = featurize(graph)
    n = graph.num_nodes
    assert arrays.node_feat.shape == (n, NUM_NODE_FEATURES)
    assert arrays.node_opcode.shape == (n,)
    assert len(arrays.edge_index) > n // 2
    assert arrays.edge_index.min() >= 0 and arrays.edge_index.max() < n


def test_xla_accepts_the_composed_module(composed):
    module = _hlo.HloModule.from_serialized_hlo_module_proto(composed)
    assert len(module.computations()) == len(graph_from_proto(composed).computations)


def test_copies_keep_the_features_and_edges_of_their_source(protos, composed):
    sources = [graph_from_proto(p) for p in protos]
    whole = featurize(graph_from_proto(composed))
    start = 0
    for copy in range(2 * len(sources)):
        source = sources[copy % len(sources)]
        want = featurize(source)
        end = start + source.num_nodes
        np.testing.assert_array_equal(whole.node_feat[start:end], want.node_feat)
        np.testing.assert_array_equal(whole.node_opcode[start:end], want.node_opcode)
        inside = (whole.edge_index[:, 0] >= start) & (whole.edge_index[:, 0] < end)
        np.testing.assert_array_equal(whole.edge_index[inside] - start, want.edge_index)
        start = end


def test_entry_is_the_first_module_and_ids_are_unique(protos, composed):
    graph = graph_from_proto(composed)
    first = graph_from_proto(protos[0])
    assert graph.entry_computation_id == first.entry_computation_id
    assert graph.computations[: len(first.computations)] == first.computations
    ids = [comp.id for comp in graph.computations]
    assert len(set(ids)) == len(ids)


def test_unpacked_called_computation_ids_are_moved_too(protos):
    unpacked = _unpack_calls(protos[0])
    assert unpacked != protos[0]
    want = _called(graph_from_proto(compose_modules(protos[:1], TARGET)))
    assert _called(graph_from_proto(compose_modules([unpacked], TARGET))) == want


def test_small_target_gives_the_first_module(protos):
    graph = graph_from_proto(compose_modules(protos, 1, name="one"))
    assert graph.name == "one"
    assert graph.computations == graph_from_proto(protos[0]).computations


def test_modules_are_read_only_as_far_as_the_target_needs(protos):
    """zoo_protos lowers each program as it is read: a small composition lowers one."""
    read = []

    def reading():
        for index, proto in enumerate(protos):
            read.append(index)
            yield proto

    compose_modules(reading(), 1)
    assert read == [0]
    read.clear()
    assert compose_modules(reading(), TARGET) == compose_modules(protos, TARGET)
    assert read == [0, 1, 2]


def test_no_modules_is_an_error():
    with pytest.raises(HlotuneError):
        compose_modules([], TARGET)


def test_the_tpugraphs_fixture_composes(tpugraphs_dir):
    fixture = tpugraphs_dir / "pb/layout/xla/default/valid/unet_3d.4x4.bf16.hlo_module.pb"
    composed = compose_modules([fixture.read_bytes()], 3 * 3163)
    assert graph_from_proto(composed).num_nodes == 3 * 3163
    _hlo.HloModule.from_serialized_hlo_module_proto(composed)


def _called(graph: HloGraph) -> list[tuple[int, ...]]:
    return [inst.called_computation_ids for inst in graph.instructions]


def _unpack_calls(proto: bytes) -> bytes:
    """The module with every called_computation_ids list stored unpacked (one varint each)."""
    rest, fields = wire.partition(proto, (3,))
    return rest + b"".join(wire.field_bytes(3, _unpack_computation(c)) for c in fields[3])


def _unpack_computation(data: bytes) -> bytes:
    rest, fields = wire.partition(data, (2,))
    return rest + b"".join(wire.field_bytes(2, _unpack_instruction(i)) for i in fields[2])


def _unpack_instruction(data: bytes) -> bytes:
    rest, fields = wire.partition(data, (38,))
    return rest + b"".join(wire.field_varint(38, c) for c in wire.ints(fields, 38))
