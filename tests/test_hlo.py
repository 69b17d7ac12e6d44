"""HLO import and the TpuGraphs featurizer, checked against the official arrays."""

from __future__ import annotations

import numpy as np
import pytest

from hlotune.data.sample import LayoutConfigArrays, TileConfigArrays
from hlotune.errors import HlotuneError
from hlotune.hlo import wire
from hlotune.hlo.extended_features import EXTENDED_FEATURE_NAMES
from hlotune.hlo.featurize import NUM_NODE_FEATURES, featurize
from hlotune.hlo.proto import graph_from_proto
from hlotune.hlo.records import MODULE, MODULE_TUNING_DATA, TUNING_DATA, read_pb
from hlotune.hlo.sources import from_jax, from_text, read_file
from hlotune.programs import load_program

UNET = "unet_3d.4x4.bf16"


@pytest.fixture(scope="module")
def unet(tpugraphs_dir):
    valid = "layout/xla/default/valid"
    return {
        "module": (tpugraphs_dir / "pb" / valid / f"{UNET}.hlo_module.pb").read_bytes(),
        "record": (tpugraphs_dir / "pb" / valid / f"{UNET}.pb").read_bytes(),
        "npz": dict(np.load(tpugraphs_dir / "npz" / valid / f"{UNET}.npz")),
    }


def test_featurizer_reproduces_the_official_arrays(unet):
    arrays = featurize(graph_from_proto(unet["module"]))
    official = unet["npz"]
    assert arrays.num_nodes == 3163
    np.testing.assert_array_equal(arrays.node_opcode, official["node_opcode"])
    np.testing.assert_array_equal(arrays.edge_index, official["edge_index"])
    np.testing.assert_array_equal(arrays.node_splits, official["node_splits"])
    assert arrays.node_feat.shape == (3163, NUM_NODE_FEATURES)
    assert arrays.node_feat.dtype == np.float32
    mismatched = np.argwhere(arrays.node_feat != official["node_feat"])
    assert mismatched.size == 0, f"{len(mismatched)} entries differ, first at {mismatched[:5]}"


def test_raw_layout_record_gives_the_official_configs(unet):
    kind, records = read_pb(unet["record"])
    assert kind == MODULE_TUNING_DATA and len(records) == 1
    configs = records[0].configs
    assert isinstance(configs, LayoutConfigArrays)
    official = unet["npz"]
    np.testing.assert_array_equal(configs.node_config_ids, official["node_config_ids"])
    # 122 runs in the record, 10 with errors: 112 successful configs.
    assert configs.config_runtime.shape == (112,)
    assert np.isin(configs.config_runtime, official["config_runtime"]).all()
    # The npz row order is a shuffle: compare (runtime, layout) pairs as sets.
    ours = {(t, f.tobytes()) for t, f in zip(configs.config_runtime, configs.node_config_feat)}
    theirs = {(t, f.tobytes()) for t, f in zip(official["config_runtime"], official["node_config_feat"])}
    assert ours <= theirs
    np.testing.assert_array_equal(
        featurize(records[0].graph).node_feat, official["node_feat"]
    )


def test_pb_kinds_are_told_apart(unet):
    assert read_pb(unet["module"])[0] == MODULE
    assert read_pb(unet["record"])[0] == MODULE_TUNING_DATA


def _tile_run(kernel, output, inputs, runtime_ns, *, default=False, error=False) -> bytes:
    tile = b"".join(wire.field_packed(n, v) for n, v in ((1, kernel), (2, output), (3, inputs)) if v)
    profile = wire.field_varint(4, runtime_ns)
    return (
        wire.field_bytes(1, wire.field_bytes(1, tile))
        + (wire.field_varint(3, 1) if error else b"")
        + wire.field_bytes(4, profile)
        + (wire.field_varint(5, 1) if default else b"")
    )


def test_tile_tuning_data_gives_config_features_and_normalisers():
    module = _zoo_proto("zoo:mlp@tiny")
    runs = [
        _tile_run([8, 128], [8, 128], [8, 64], 2000, default=True),
        _tile_run([16, 64, 2], [16, 64], [], 1500),
        _tile_run([4, 4], [4, 4], [4, 4], 900, error=True),  # dropped: the run failed
    ]
    kernel = wire.field_bytes(1, module) + wire.field_varint(2, 42) + b"".join(
        wire.field_bytes(3, run) for run in runs
    )
    tuning_data = wire.field_bytes(1, kernel) + wire.field_bytes(1, kernel)
    kind, records = read_pb(tuning_data)
    assert kind == TUNING_DATA and len(records) == 2
    configs = records[0].configs
    assert isinstance(configs, TileConfigArrays)
    assert records[0].fingerprint == 42
    assert records[0].graph.num_nodes == graph_from_proto(module).num_nodes
    np.testing.assert_array_equal(configs.config_runtime, [2000, 1500])
    np.testing.assert_array_equal(configs.config_runtime_normalizers, [2000, 2000])
    # Seq<6> per bound list: 6 padded values, sum, product; an empty list has product 0.
    np.testing.assert_array_equal(
        configs.config_feat[1],
        [16, 64, 2, 0, 0, 0, 82, 2048, 16, 64, 0, 0, 0, 0, 80, 1024] + [0] * 8,
    )
    assert configs.config_feat.shape == (2, 24)


def test_tile_kernel_without_default_run_is_an_error():
    module = _zoo_proto("zoo:mlp@tiny")
    kernel = wire.field_bytes(1, module) + wire.field_bytes(3, _tile_run([1], [1], [1], 5))
    with pytest.raises(HlotuneError, match="no successful default run"):
        read_pb(wire.field_bytes(1, kernel))


def _zoo_proto(spec: str) -> bytes:
    from hlotune.hlo.lowering import lowered_proto

    program = load_program(spec, abstract=True)
    return lowered_proto(program.fn, program.args)


@pytest.mark.parametrize("optimized", [False, True])
def test_jax_program_before_and_after_optimisation(optimized):
    program = load_program("zoo:cnn@tiny", abstract=True)
    graph = from_jax(program.fn, *program.args, optimized=optimized)
    arrays = featurize(graph)
    opcodes = {inst.opcode for inst in graph.instructions}
    assert "convolution" in opcodes
    assert ("fusion" in opcodes) == optimized  # XLA's passes fuse; the lowered module does not
    assert arrays.edge_index.min() >= 0 and arrays.edge_index.max() < graph.num_nodes
    assert np.all(arrays.edge_index[:, 0] != arrays.edge_index[:, 1])
    # The entry computation's root is a root; so is every computation's.
    assert arrays.node_feat[:, 0].sum() == len(graph.computations)


def test_hlo_text_and_its_proto_give_the_same_graph():
    import jax
    import jax.numpy as jnp

    lowered = jax.jit(lambda x, w: jnp.tanh(x @ w).sum()).lower(jnp.ones((4, 8)), jnp.ones((8, 3)))
    text = lowered.as_text(dialect="hlo")
    from_hlo_text = featurize(from_text(text))
    from_hlo_proto = featurize(graph_from_proto(lowered.compiler_ir("hlo").as_serialized_hlo_module_proto()))
    np.testing.assert_array_equal(from_hlo_text.node_feat, from_hlo_proto.node_feat)
    np.testing.assert_array_equal(from_hlo_text.edge_index, from_hlo_proto.edge_index)
    dot = [i for i, op in enumerate(from_hlo_text.node_opcode) if op == 34]
    assert len(dot) == 1
    # f32[4,3] output: one-hot F32 (column 13), dims 4 and 3, sum 7, product 12.
    row = from_hlo_text.node_feat[dot[0]]
    assert row[13] == 1 and list(row[21:29]) == [4, 3, 0, 0, 0, 0, 7, 12]


def test_extended_features_add_named_columns():
    program = load_program("zoo:mlp@tiny", abstract=True)
    graph = from_jax(program.fn, *program.args)
    arrays = featurize(graph, extended=True)
    assert arrays.node_feat.shape == (graph.num_nodes, NUM_NODE_FEATURES + len(EXTENDED_FEATURE_NAMES))
    np.testing.assert_array_equal(arrays.node_feat[:, :NUM_NODE_FEATURES], featurize(graph).node_feat)
    dots = [i for i, inst in enumerate(graph.instructions) if inst.opcode == "dot"]
    lhs_count = EXTENDED_FEATURE_NAMES.index("dot_lhs_contracting_count")
    rhs_0 = EXTENDED_FEATURE_NAMES.index("dot_rhs_contracting_0")
    for i in dots:  # x @ w: lhs contracts dim 1 (one dim), rhs contracts dim 0
        extra = arrays.node_feat[i, NUM_NODE_FEATURES:]
        assert extra[lhs_count] == 1 and extra[rhs_0] == 0


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "empty file"),
        (b"\xff\xfe\x00garbage", "not HLO text"),
        (b"HloModule broken\nENTRY main { x = f32[] parameter(0)", "not valid HLO text"),
    ],
)
def test_bad_hlo_text_files(tmp_path, content, message):
    path = tmp_path / "module.hlo"
    path.write_bytes(content)
    with pytest.raises(HlotuneError, match=message):
        read_file(path)


def test_bad_pb_files(tmp_path, unet):
    cases = {
        "truncated.pb": unet["module"][: len(unet["module"]) // 2],
        "garbage.pb": b"\x07\x00\x01\x02garbage",
        "text.pb": b"this is not a protobuf at all",
    }
    for name, content in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(HlotuneError, match=name):
            read_file(path)
    with pytest.raises(HlotuneError, match="no such file"):
        read_file(tmp_path / "missing.pb")
