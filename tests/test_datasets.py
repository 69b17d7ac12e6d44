"""The built-in datasets as shards: packed deterministically, unpacked once and atomically,
checked against the manifest, exported as the public TpuGraphs files, and absent with a
one-line error."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from hlotune.cli import main
from hlotune.data.builtin import resolve
from hlotune.data.npz import read_sample
from hlotune.data.schema import TPUGRAPHS_FEATURES, TPUGRAPHS_KEYS
from hlotune.data.store import ENV, MANIFEST, Store, pack
from hlotune.errors import HlotuneError


@pytest.fixture
def tree(tmp_path):
    """A small tree of two parts, with a data card."""
    root = tmp_path / "tree"
    (root / "flags" / "train").mkdir(parents=True)
    (root / "flags" / "train" / "a.json").write_text('{"program": "zoo:mlp@tiny"}')
    (root / "flags" / "train" / "a.npz").write_bytes(bytes(range(256)) * 40)
    (root / "kernels" / "flags" / ".kernels").mkdir(parents=True)
    (root / "kernels" / "flags" / ".kernels" / "f00d.hlo").write_text("HloModule m\n")
    (root / "DATACARD.md").write_text("# card\n")
    return root


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_pack_then_unpack_gives_the_same_files(tree, tmp_path, cache):
    store = pack(tree, tmp_path / "datasets")
    assert sorted(store.shards) == ["flags", "kernels/flags"]
    assert store.tree.is_relative_to(cache)
    unpacked = store.unpacked_all()
    for path in (p for p in tree.rglob("*") if p.is_file()):
        assert (unpacked / path.relative_to(tree)).read_bytes() == path.read_bytes()
    again = pack(tree, tmp_path / "again")  # no times or owners in the shards
    assert {s.sha256 for s in again.shards.values()} == {s.sha256 for s in store.shards.values()}
    assert again.edition == store.edition


def test_concurrent_unpacks_both_succeed(tree, tmp_path, cache):
    store = pack(tree, tmp_path / "datasets")
    errors = []

    def unpack():
        try:
            store.unpacked("flags")
        except Exception as error:  # noqa: BLE001 - the test reports whatever a thread raised
            errors.append(error)

    threads = [threading.Thread(target=unpack) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert sorted(p.name for p in (store.tree / "flags" / "train").iterdir()) == ["a.json", "a.npz"]
    assert not list(store.tree.glob(".unpack-*"))


def test_a_corrupt_shard_is_named(tree, tmp_path, cache):
    store = pack(tree, tmp_path / "datasets")
    shard = store.folder / store.shards["flags"].file
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    with pytest.raises(HlotuneError, match=r"flags\.tar\.xz: corrupt shard"):
        store.unpacked("flags")
    assert not (store.tree / "flags").exists()


def test_missing_datasets_say_where_to_get_them(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(ENV, str(tmp_path))
    assert main(["eval", "--model", "pretrained:flags", "--data", "builtin:flags/test"]) == 1
    error = capsys.readouterr().err.strip()
    assert error.startswith("hlotune: error: the built-in datasets are not installed: set HLOTUNE_DATA")
    assert "\n" not in error and MANIFEST in error


def test_hlotune_data_finds_a_copy_of_the_datasets(tmp_path, monkeypatch):
    """A wheel has no checkout: HLOTUNE_DATA names a copy of datasets/."""
    checkout = Store.find()
    copy = tmp_path / "copy"
    copy.mkdir()
    for path in checkout.folder.iterdir():
        (copy / path.name).symlink_to(path)
    monkeypatch.setenv(ENV, str(copy))
    assert Store.find().folder == copy and Store.find().edition == checkout.edition


@pytest.mark.parametrize("spec, collection", [("builtin:layout/valid", "layout"), ("builtin:tile/valid", "tile")])
def test_export_writes_the_official_arrays(spec, collection, tmp_path, capsys):
    assert main(["data", "export", spec, "--out", str(tmp_path), "--json"]) == 0
    folder = tmp_path / "npz" / collection / "xla" / ("random/valid" if collection == "layout" else "valid")
    written = sorted(folder.glob("*.npz"))
    assert len(written) == len(list(resolve(spec).glob("*.npz"))) > 0
    with np.load(written[0]) as arrays:
        assert set(arrays.files) == set(TPUGRAPHS_KEYS[collection])
        assert arrays["node_feat"].shape[1] == TPUGRAPHS_FEATURES
    assert read_sample(written[-1]).graph.node_feat.shape[1] == TPUGRAPHS_FEATURES


def test_export_refuses_a_collection_without_a_public_counterpart(tmp_path, capsys):
    assert main(["data", "export", "builtin:flags/test", "--out", str(tmp_path)]) == 1
    assert "flags graphs have no TpuGraphs counterpart" in capsys.readouterr().err
