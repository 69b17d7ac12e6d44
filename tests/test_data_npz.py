"""The npz reader, writer and Dataset against the real TpuGraphs fixtures and broken files."""

from __future__ import annotations

import io
import os
import zipfile
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

import hlotune.data.dataset as dataset_module
from hlotune.data import schema
from hlotune.data.dataset import Dataset, split_info
from hlotune.data.npz import CONFIG_TYPES, peek, read_sample, validate_arrays, write_sample
from hlotune.data.sample import FlagConfigArrays, GraphArrays, GraphSample
from hlotune.errors import HlotuneError

REPO = Path(__file__).resolve().parents[1]
Arrays = dict[str, np.ndarray]


def npz_files(tpugraphs_dir: Path) -> list[Path]:
    return sorted((tpugraphs_dir / "npz").rglob("*.npz"))


def first_npz(tpugraphs_dir: Path, folder: str) -> Path:
    return min((tpugraphs_dir / "npz" / folder).glob("*.npz"))


def load(path: Path) -> Arrays:
    with np.load(path, allow_pickle=False) as archive:
        return dict(archive)


def assert_same_arrays(got: Arrays, want: Arrays) -> None:
    assert got.keys() == want.keys()
    for key, array in want.items():
        assert got[key].dtype == array.dtype, key
        assert got[key].shape == array.shape, key
        assert got[key].tobytes() == array.tobytes(), key


def flags_sample(graph: GraphArrays) -> GraphSample:
    """A plausible hlotune flags sample: 4 configs of 3 named options, 3 timings each."""
    samples = np.array([[900, 1000, 1100], [2000, 2100, 2050], [400, 420, 410], [0, 5, 7]])
    configs = FlagConfigArrays(
        config_feat=np.array([[0, 1, 2], [1, 0, 2], [1, 1, 0], [0, 0, 1]], dtype=np.float32),
        config_feat_names=np.array(["xla_opt_level", "xla_fusion", "xla_cpu_fast_math"]),
        config_runtime=np.median(samples, axis=1).astype(np.int64),
        config_runtime_samples=samples.astype(np.int64),
    )
    return GraphSample(graph, configs, name="flags")


def arrays_of(sample: GraphSample) -> Arrays:
    parts = [sample.graph] if sample.configs is None else [sample.graph, sample.configs]
    return {
        f.name: getattr(part, f.name)
        for part in parts
        for f in fields(part)
        if getattr(part, f.name) is not None
    }


# --- real files -----------------------------------------------------------------------------


def test_every_fixture_reads_and_validates(tpugraphs_dir: Path) -> None:
    paths = npz_files(tpugraphs_dir)
    assert len(paths) >= 6
    for path in paths:
        info = split_info(path)
        sample = read_sample(path)
        assert validate_arrays(load(path), path) == [], path
        assert sample.name == path.stem
        assert sample.collection == info.collection == schema.detect_collection(load(path))
        assert sample.labelled == (info.split != "test"), path
        assert_same_arrays(arrays_of(sample), load(path))


def test_peek_matches_np_load(tpugraphs_dir: Path) -> None:
    for path in npz_files(tpugraphs_dir):
        stored = load(path)
        headers = peek(path)
        assert list(headers) == list(stored)
        for key, info in headers.items():
            assert (info.shape, info.dtype) == (stored[key].shape, stored[key].dtype), key


def test_headers_of_every_kind_read_as_numpy_reads_them(tmp_path: Path) -> None:
    """Plain headers take hlotune's quick parser, the rest (a record's) numpy's own; both must
    agree with np.load."""
    arrays = {
        "scalar": np.float32(3), "vector": np.arange(5), "matrix": np.ones((3, 4), np.float32),
        "fortran": np.asfortranarray(np.ones((3, 4))), "big_endian": np.arange(3, dtype=">f8"),
        "bool": np.array([True, False]), "empty": np.zeros((0, 140), np.float32),
        "cube": np.zeros((2, 3, 4), np.uint8), "record": np.zeros(2, dtype=[("a", "<i4"), ("b", "<f8")]),
        "text": np.array(["ab", "c"]), "many_dims": np.zeros((1,) * 30),
    }
    np.savez(tmp_path / "kinds.npz", **arrays)
    headers = peek(tmp_path / "kinds.npz")
    for key, array in arrays.items():
        assert (headers[key].shape, headers[key].dtype) == (np.shape(array), np.asarray(array).dtype), key


def test_a_header_past_numpys_limit_is_numpys_one_line_error(tmp_path: Path) -> None:
    """A header numpy refuses to parse (over 10,000 bytes: 600 record fields) is refused with
    numpy's reason, in one line."""
    record = np.zeros(1, [(f"field_{i:04d}", "<f4") for i in range(600)])
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, record)
    with zipfile.ZipFile(tmp_path / "big.npz", "w") as archive:
        archive.writestr("x.npy", buffer.getvalue())
    with pytest.raises(HlotuneError, match=r"big.npz: x: unreadable array \(Header info length \(\d+\) is large") as raised:
        peek(tmp_path / "big.npz")
    assert "\n" not in str(raised.value)


def test_detect_collection() -> None:
    graph = ["node_feat", "node_opcode", "edge_index"]
    assert schema.detect_collection(graph) is None
    assert schema.detect_collection([*graph, "config_runtime_normalizers"]) == "tile"
    assert schema.detect_collection([*graph, "node_config_feat"]) == "layout"
    assert schema.detect_collection([*graph, "config_feat_names"]) == "flags"
    with pytest.raises(HlotuneError, match="several collections"):
        schema.detect_collection(["node_config_feat", "config_feat_names"])


def test_schema_keys_are_the_sample_fields() -> None:
    graph_fields = {f.name for f in fields(GraphArrays)}
    for collection, config_type in CONFIG_TYPES.items():
        keys = {spec.name for spec in schema.keys_of(collection)}
        assert keys == graph_fields | {f.name for f in fields(config_type)}, collection


def test_docs_describe_every_key() -> None:
    text = (REPO / "docs" / "format.md").read_text()
    for collection in CONFIG_TYPES:
        for spec in schema.keys_of(collection):
            assert f"`{spec.name}`" in text, spec.name


# --- round trips ----------------------------------------------------------------------------


@pytest.mark.parametrize("folder", ["tile/xla/train", "tile/xla/test", "layout/xla/random/train"])
def test_round_trip_is_bit_identical(tpugraphs_dir: Path, tmp_path: Path, folder: str) -> None:
    original = first_npz(tpugraphs_dir, folder)
    copy = tmp_path / original.name
    write_sample(copy, read_sample(original))
    assert_same_arrays(load(copy), load(original))
    assert_same_arrays(arrays_of(read_sample(copy)), load(original))


def test_flags_and_graph_only_round_trip(tpugraphs_dir: Path, tmp_path: Path) -> None:
    graph = read_sample(first_npz(tpugraphs_dir, "layout/xla/random/train")).graph
    for sample in (flags_sample(graph), GraphSample(graph, None)):
        path = tmp_path / "sub" / "sample.npz"
        write_sample(path, sample)
        again = read_sample(path)
        assert again.collection == sample.collection
        assert again.name == "sample"
        assert_same_arrays(arrays_of(again), arrays_of(sample))
    assert list(tmp_path.joinpath("sub").iterdir()) == [path]


@pytest.mark.parametrize("folder", ["tile/xla/train", "layout/xla/random/train"])
def test_to_pyg_gives_a_valid_data_with_configs_and_runtimes(tpugraphs_dir: Path, folder: str) -> None:
    from torch_geometric.data import Batch

    sample = read_sample(first_npz(tpugraphs_dir, folder))
    data = sample.to_pyg()
    assert data.validate() and data.num_nodes == sample.graph.num_nodes
    u, v = sample.graph.edge_index[0]
    assert data.edge_index[:, 0].tolist() == [v, u]  # operand sends to its consumer
    np.testing.assert_array_equal(data.x.numpy(), sample.graph.node_feat)
    np.testing.assert_array_equal(data.config_runtime.numpy(), sample.configs.config_runtime)
    layout = sample.collection == "layout"
    feat = sample.configs.node_config_feat if layout else sample.configs.config_feat
    np.testing.assert_array_equal(data.config_feat.numpy(), feat)
    if layout:
        ids = sample.configs.node_config_ids
        batch = Batch.from_data_list([data, data])
        assert batch.node_config_index.tolist() == [*ids, *(ids + data.num_nodes)]
    assert "config_feat" not in GraphSample(sample.graph, None).to_pyg()


def test_read_converts_to_canonical_dtypes(tpugraphs_dir: Path, tmp_path: Path) -> None:
    arrays = load(first_npz(tpugraphs_dir, "tile/xla/train"))
    arrays["edge_index"] = arrays["edge_index"].astype(np.int32)
    arrays["node_feat"] = arrays["node_feat"].astype(np.float64)
    np.savez(tmp_path / "narrow.npz", **arrays)
    graph = read_sample(tmp_path / "narrow.npz").graph
    assert graph.edge_index.dtype == np.int64
    assert graph.node_feat.dtype == np.float32


def test_failed_write_keeps_the_old_file(
    tpugraphs_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sample = read_sample(first_npz(tpugraphs_dir, "tile/xla/train"))
    path = tmp_path / "kept.npz"
    write_sample(path, sample)
    before = path.read_bytes()

    def crash(stream, **arrays) -> None:
        stream.write(b"PK half an archive")
        raise RuntimeError("power cut")

    monkeypatch.setattr(np, "savez_compressed", crash)
    with pytest.raises(RuntimeError):
        write_sample(path, sample)
    assert path.read_bytes() == before
    assert list(tmp_path.iterdir()) == [path]


def test_write_refuses_an_invalid_sample(tpugraphs_dir: Path, tmp_path: Path) -> None:
    sample = read_sample(first_npz(tpugraphs_dir, "tile/xla/train"))
    sample.graph.edge_index = sample.graph.edge_index + sample.graph.num_nodes
    with pytest.raises(HlotuneError, match="edge_index"):
        write_sample(tmp_path / "bad.npz", sample)
    assert not any(tmp_path.iterdir())


# --- broken files ---------------------------------------------------------------------------


def test_missing_empty_truncated_and_text_files(tpugraphs_dir: Path, tmp_path: Path) -> None:
    real = first_npz(tpugraphs_dir, "layout/xla/default/valid").read_bytes()
    (tmp_path / "empty.npz").write_bytes(b"")
    (tmp_path / "truncated.npz").write_bytes(real[: len(real) // 2])
    (tmp_path / "notes.npz").write_text("node_feat,node_opcode\n1,2\n")
    cases = {"missing.npz": "no such file", "empty.npz": "empty file"}
    cases |= {"truncated.npz": "not an npz archive", "notes.npz": "not an npz archive"}
    for name, why in cases.items():
        path = tmp_path / name
        with pytest.raises(HlotuneError, match=why) as raised:
            read_sample(path)
        assert str(path) in str(raised.value)
        assert "\n" not in str(raised.value)
        with pytest.raises(HlotuneError, match=why):
            peek(path)


def test_flipped_byte_inside_an_array(tpugraphs_dir: Path, tmp_path: Path) -> None:
    arrays = load(first_npz(tpugraphs_dir, "tile/xla/valid"))
    path = tmp_path / "flipped.npz"
    np.savez(path, **arrays)  # stored uncompressed: the flipped byte decodes, only the CRC sees it
    data = bytearray(path.read_bytes())
    data[data.index(arrays["node_feat"].tobytes()) + 10] ^= 0xFF
    path.write_bytes(data)
    with pytest.raises(HlotuneError, match="flipped.npz: node_feat: unreadable array"):
        read_sample(path)


def test_forged_header_is_refused_before_allocating(tmp_path: Path) -> None:
    path = tmp_path / "forged.npz"
    with zipfile.ZipFile(path, "w") as archive, archive.open("node_feat.npy", "w") as member:
        header = {"descr": "<f4", "fortran_order": False, "shape": (10**9, 140)}
        np.lib.format.write_array_header_1_0(member, header)
    with pytest.raises(HlotuneError, match="forged.npz: node_feat: .*header claims"):
        peek(path)


def test_missing_key(tpugraphs_dir: Path, tmp_path: Path) -> None:
    arrays = load(first_npz(tpugraphs_dir, "tile/xla/train"))
    del arrays["config_runtime"]
    path = tmp_path / "nokey.npz"
    np.savez(path, **arrays)
    with pytest.raises(HlotuneError, match=f"{path}: config_runtime: missing"):
        read_sample(path, validate=False)


def _set(key: str, value: Callable[[np.ndarray], np.ndarray]) -> Callable[[Arrays], None]:
    def change(arrays: Arrays) -> None:
        arrays[key] = value(arrays[key])

    return change


def _poke(key: str, index: tuple[int, ...], value: float) -> Callable[[Arrays], None]:
    def change(arrays: Arrays) -> None:
        arrays[key] = arrays[key].copy()
        arrays[key][index] = value

    return change


def _add(key: str, value: np.ndarray) -> Callable[[Arrays], None]:
    def change(arrays: Arrays) -> None:
        arrays[key] = value

    return change


BROKEN = {
    "node_feat 139 columns": (
        "tile/xla/train",
        _set("node_feat", lambda a: a[:, :139]),
        "node_feat: expected shape (n, >=140) with n=2, got (2, 139)",
    ),
    "edge out of range": (
        "tile/xla/train",
        _poke("edge_index", (0, 1), 2),
        "edge_index: expected values in [0, n) with n=2, got 2 at [0, 1]",
    ),
    "float opcodes": (
        "tile/xla/train",
        _set("node_opcode", lambda a: a.astype(np.float32)),
        "node_opcode: expected a uint8 dtype (read as uint8), got float32",
    ),
    "opcode 121": ("tile/xla/train", _poke("node_opcode", (0,), 121), "node_opcode: expected"),
    "zero normalizer": (
        "tile/xla/train",
        _poke("config_runtime_normalizers", (1,), 0),
        "config_runtime_normalizers: expected values > 0, got 0 at [1]",
    ),
    "negative runtime": ("tile/xla/test", _poke("config_runtime", (3,), -5), "config_runtime: "),
    "config ids unsorted": (
        "layout/xla/random/train",
        _set("node_config_ids", lambda a: a[::-1]),
        "node_config_ids: expected strictly increasing values",
    ),
    "layout dim 6": (
        "layout/xla/random/train",
        _poke("node_config_feat", (0, 0, 0), 6),
        "node_config_feat: expected values in [0, 5] or -1, got 6.0 at [0, 0, 0]",
    ),
    "runtime rows": (
        "layout/xla/random/train",
        _set("config_runtime", lambda a: a[:-1]),
        "config_runtime: expected shape (c,) with c=20, got (19,)",
    ),
    "unknown key": ("tile/xla/train", _add("extra", np.zeros(3)), "extra: not a key"),
}


@pytest.mark.parametrize("case", BROKEN)
def test_broken_array_is_named(tpugraphs_dir: Path, tmp_path: Path, case: str) -> None:
    folder, change, message = BROKEN[case]
    arrays = load(first_npz(tpugraphs_dir, folder))
    change(arrays)
    path = tmp_path / "broken.npz"
    np.savez(path, **arrays)
    assert any(f"{path}: {message}" in problem for problem in validate_arrays(arrays, path))
    with pytest.raises(HlotuneError, match="broken.npz") as raised:
        read_sample(path)
    assert message in str(raised.value)


def test_duplicate_flag_names(tpugraphs_dir: Path, tmp_path: Path) -> None:
    graph = read_sample(first_npz(tpugraphs_dir, "tile/xla/train")).graph
    arrays = arrays_of(flags_sample(graph))
    arrays["config_feat_names"] = np.array(["a", "b", "a"])
    problems = validate_arrays(arrays, "f.npz")
    assert problems == ["f.npz: config_feat_names: expected unique values, got 'a' more than once"]


class Tripwire:
    """Unpickling this creates a folder: the proof that a reader ran pickle."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Callable[[str], None], tuple[str]]:
        return os.mkdir, (str(self.marker),)


@pytest.mark.parametrize("key", ["node_feat", "smuggled"])
def test_pickled_arrays_are_refused_unread(
    tpugraphs_dir: Path, tmp_path: Path, key: str
) -> None:
    marker = tmp_path / "unpickled"
    arrays: dict[str, np.ndarray] = load(first_npz(tpugraphs_dir, "tile/xla/train"))
    arrays[key] = np.empty(1, dtype=object)
    arrays[key][0] = Tripwire(marker)
    path = tmp_path / "pickle.npz"
    np.savez(path, **arrays)  # numpy's default allows pickles when saving
    for validate in (True, False):
        with pytest.raises(HlotuneError, match=f"pickle.npz: {key}: "):
            read_sample(path, validate=validate)
    assert peek(path)[key].dtype == object
    assert not marker.exists()


# --- Dataset ------------------------------------------------------------------------------


def test_dataset_is_sorted_and_lazy(tpugraphs_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[Path] = []

    def counting_read(path: Path, *, validate: bool = True) -> GraphSample:
        reads.append(path)
        return read_sample(path, validate=validate)

    monkeypatch.setattr(dataset_module, "read_sample", counting_read)
    data = Dataset(tpugraphs_dir / "npz")
    assert len(data) == len(npz_files(tpugraphs_dir))
    assert data.paths == npz_files(tpugraphs_dir)
    assert reads == []
    samples = iter(data)
    first = next(samples)
    assert reads == [data.paths[0]] and first.name == data.paths[0].stem
    assert data[-1].name == data.paths[-1].stem
    assert sum(1 for _ in samples) == len(data) - 1


def test_dataset_split_info(tpugraphs_dir: Path) -> None:
    layout = Dataset(tpugraphs_dir / "npz" / "layout" / "xla" / "random")
    assert layout.collection == "layout"
    assert layout.info == dataset_module.SplitInfo("layout", "xla", "random", None)
    assert layout.info_of(0) == dataset_module.SplitInfo("layout", "xla", "random", "train")
    tile = Dataset(tpugraphs_dir / "npz" / "tile")
    assert tile.collection == "tile"
    assert [tile.info_of(i).split for i in range(len(tile))] == ["test", "train", "valid"]
    assert {tile.info_of(i).source for i in range(len(tile))} == {"xla"}
    assert split_info("runs/today/graph.npz") == dataset_module.SplitInfo()


def test_dataset_refuses_missing_or_empty_folders(tmp_path: Path) -> None:
    with pytest.raises(HlotuneError, match="no such file or folder"):
        Dataset(tmp_path / "absent")
    with pytest.raises(HlotuneError, match="no .npz files"):
        Dataset(tmp_path)
