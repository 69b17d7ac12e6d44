"""The tile collection measured on XLA:CPU: balanced per-kernel draws, samples relative to the
batch's default, and TpuGraphs tile files a reader accepts."""

from __future__ import annotations

import json
import random
from collections import Counter

import numpy as np

from hlotune.compiler.xla.kernels import Kernel
from hlotune.compiler.spaces.space import PARTITION_CHOICES
from hlotune.data.npz import read_sample
from hlotune.kernels.sample import config_features
from hlotune.kernels.tile_collection import (
    KernelSample,
    TileFolder,
    TileSettings,
    collect_tiles,
    draw_kernel_configs,
    tile_rows,
)
from hlotune.kernels.tile_files import write_tile_files


def _kernel(name: str) -> Kernel:
    return Kernel(name, f"{name}#0", "0", "kLoop", "c", "f32[8]", {})


def test_draws_give_each_kernel_every_choice_equally_often_and_independently():
    kernels = [_kernel(f"k{i}") for i in range(6)]
    configs = draw_kernel_configs(kernels, 4 * len(PARTITION_CHOICES), random.Random(0))
    columns = {k.key: [dict(c.kernels.partitions)[k.key] for c in configs] for k in kernels}
    for column in columns.values():
        assert Counter(column) == {choice: 4 for choice in PARTITION_CHOICES}
    assert len({tuple(column) for column in columns.values()}) == len(kernels)  # own orders


def _sample(parts, ns, default_ns, replica=False):
    return KernelSample("fp", "zoo:x@tiny", "k", parts, ns, default_ns, "b", (2,), replica)


def test_rows_are_relative_to_the_batch_default_and_keep_equal_counts():
    samples = [_sample((1,), 200, 100), _sample((1,), 330, 110), _sample((1,), 150, 100),
               _sample((2,), 100, 100, True), _sample((2,), 120, 120)]
    parts, runtimes, normalizer = tile_rows(samples)
    assert parts == [(1,), (2,)] and normalizer == 100  # the median default
    assert runtimes.shape == (2, 2)  # (2,) has two samples: (1,)'s third is dropped, none invented
    assert runtimes[0].tolist() == [200, 300] and runtimes[1].tolist() == [100, 100]
    feat = config_features(parts, (2,))
    assert feat.shape == (2, 24) and feat[:, 0].tolist() == [1, 2] and feat[:, 7].tolist() == [0, 1]


def test_a_program_collects_into_valid_tile_files_and_resumes(tmp_path):
    settings = TileSettings(configs=5, batch=5, profile_runs=3, min_kernel_ns=0)
    first = collect_tiles("zoo:mlp@tiny", settings, tmp_path, progress=False)
    assert first.kernels > 0 and first.samples > 0 and first.failed == 0
    again = collect_tiles("zoo:mlp@tiny", settings, tmp_path, progress=False)
    assert again.resumed and len(TileFolder(tmp_path).samples) == first.samples  # nothing twice
    summary = write_tile_files(tmp_path)
    assert summary.kernels > 0 and summary.programs == 1
    path = next(tmp_path.glob("*.npz"))
    sample = read_sample(path)
    assert sample.collection == "tile" and sample.graph.node_feat.shape[1] == 140
    configs = sample.configs
    assert np.array_equal(configs.config_runtime, np.median(configs.config_runtime_samples, axis=1).round())
    card = json.loads(path.with_suffix(".json").read_text())
    assert card["programs"] == ["zoo:mlp@tiny"] and card["families"] == ["zoo:mlp"]


def test_inspecting_the_shipped_tile_collection_lists_its_kernels_by_family():
    from hlotune.data.builtin import EDITION
    from hlotune.hlo.inspection import inspect

    found = list(inspect("builtin:tile/test"))
    test_families = {family.partition(":")[2] for family in EDITION.splits["test"]}
    assert found and all(str(i.path).endswith(".npz") and i.collection == "tile" for i in found)
    assert {i.family for i in found} <= test_families
