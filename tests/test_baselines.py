"""The analytical and GBDT baselines: rules that rank hand-made cases right, and trees that
train, save as text, reload to the same scores and plug into `load_scorer`."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hlotune.compiler.configs.flags import DEFAULT_FLAGS, FLAG_FEATURE_NAMES, FlagConfig
from hlotune.data.dataset import Dataset
from hlotune.data.npz import write_sample
from hlotune.data.sample import FlagConfigArrays, GraphArrays, GraphSample, LayoutConfigArrays, TileConfigArrays
from hlotune.errors import HlotuneError
from hlotune.evaluation.evaluate import evaluate
from hlotune.hlo.opcodes import OPCODE_NAMES
from hlotune.models.baselines import GbdtBaseline, analytical_scores
from hlotune.models.baselines.gbdt import FEATURES_FILE, MODEL_FILE, cache_folder
from hlotune.models.baselines.layout_changes import MAJOR_MOVED, MINOR_MOVED, change_levels
from hlotune.evaluation.scorers import load_scorer


def _graph(shapes: list[tuple[int, ...]]) -> GraphArrays:
    """A chain of nodes with the given output shapes: node i consumes node i - 1."""
    feat = np.zeros((len(shapes), 140), np.float32)
    for i, shape in enumerate(shapes):
        feat[i, 21 : 21 + len(shape)] = shape
        feat[i, 27], feat[i, 28] = sum(shape), np.prod(shape)
    edges = np.array([[i, i - 1] for i in range(1, len(shapes))], np.int64).reshape(-1, 2)
    return GraphArrays(feat, np.full(len(shapes), OPCODE_NAMES.index("dot"), np.uint8), edges)


def _layout_sample(outputs: list[list[list[int]]]) -> GraphSample:
    """Sites at nodes 1 (a 4x4 matrix) and 2 (1024x1024); one config per row of output layouts."""
    feat = np.full((len(outputs), 2, 18), -1, np.float32)
    for c, sites in enumerate(outputs):
        for s, layout in enumerate(sites):
            feat[c, s, : len(layout)] = layout
    configs = LayoutConfigArrays(np.array([1, 2]), feat, np.arange(1, len(outputs) + 1, dtype=np.int64))
    return GraphSample(_graph([(4, 4), (4, 4), (1024, 1024)]), configs, name="hand-made")


def test_change_levels_compare_the_set_positions_with_row_major():
    layouts = np.full((1, 4, 18), -1, np.float32)
    layouts[0, 0, :3] = [2, 1, 0]  # row-major
    layouts[0, 1, :3] = [2, 0, 1]  # same minor-most dimension, majors swapped
    layouts[0, 2, :3] = [0, 1, 2]  # a new minor-most dimension
    layouts[0, 3, 6:8] = [2, 1]  # an input layout given as a row-major prefix
    levels = change_levels(layouts, np.full((4, 3), 3))
    assert levels[0, :, 0].tolist() == [0.0, MAJOR_MOVED, MINOR_MOVED, 0.0]
    assert levels[0, 3].tolist() == [0.0, 0.0, 0.0]


def test_analytical_layout_ranks_fewer_and_smaller_transposes_faster():
    default, row_major, transposed = [], [1, 0], [0, 1]
    sample = _layout_sample([
        [default, default],
        [row_major, row_major],
        [transposed, default],
        [default, transposed],
        [transposed, transposed],
    ])
    scores = analytical_scores(sample)
    assert scores[0] == scores[1] == 0.0  # default and explicit row-major: nothing moves
    assert scores[0] < scores[2] < scores[3] < scores[4]  # a small, a big, both transposed
    assert np.array_equal(scores, analytical_scores(sample))


def test_analytical_tile_and_flags_rules():
    graph = _graph([(8, 8)])
    feat = np.zeros((2, 24), np.float32)
    feat[:, 15] = [16, 256]  # output tile product: the larger tile does more work per step
    tile = GraphSample(graph, TileConfigArrays(feat, np.ones(2, np.int64), np.ones(2, np.int64)))
    assert np.argmin(analytical_scores(tile)) == 1
    rows = [DEFAULT_FLAGS, FlagConfig.from_dict({"xla_backend_optimization_level": 0}),
            FlagConfig((), ("fusion",)), FlagConfig.from_dict({"xla_cpu_max_isa": "AVX"})]
    flags = GraphSample(graph, FlagConfigArrays(np.stack([r.features() for r in rows]),
                                           np.array(FLAG_FEATURE_NAMES), np.ones(4, np.int64)))
    scores = analytical_scores(flags)
    assert scores[0] == scores[3] == 0.0  # the ISA's effect depends on the machine: no penalty
    assert scores[1] > scores[2] > scores[0]


def _flags_folder(folder, graphs=range(4)) -> Dataset:
    """Graphs of random config rows whose runtimes follow two columns, plus noise."""
    level = FLAG_FEATURE_NAMES.index("xla_backend_optimization_level")
    fusion = FLAG_FEATURE_NAMES.index("xla_disable_hlo_passes=fusion")
    for g in graphs:
        rng = np.random.default_rng(g)
        feat = rng.integers(0, 2, (50, len(FLAG_FEATURE_NAMES))).astype(np.float32)
        feat[:, level] = rng.integers(0, 4, 50)
        log_runtime = 10 + g + 0.5 * (feat[:, level] == 0) + 0.2 * feat[:, fusion]
        runtimes = np.exp(log_runtime + rng.normal(0, 0.01, 50)).astype(np.int64)
        configs = FlagConfigArrays(feat, np.array(FLAG_FEATURE_NAMES), runtimes)
        write_sample(folder / f"g{g}.npz", GraphSample(_graph([(4 + g, 8)] * (g + 2)), configs))
    return Dataset(folder)


def test_gbdt_learns_saves_as_text_and_reloads(tmp_path):
    train = _flags_folder(tmp_path / "train", range(3))
    held_out = _flags_folder(tmp_path / "test", [3])
    model = GbdtBaseline.fit(train, rounds=50)
    sample = held_out[0]
    scores = model.scores(sample)
    assert scores.shape == (sample.num_configs,)
    assert np.array_equal(scores, GbdtBaseline.fit(train, rounds=50).scores(sample))
    assert evaluate(held_out, model.scores).kendall_tau > 0.5  # a graph it never saw
    model.save(tmp_path / "model")
    assert (tmp_path / "model" / MODEL_FILE).read_text().startswith("tree")
    document = json.loads((tmp_path / "model" / FEATURES_FILE).read_text())
    assert document["collection"] == "flags"
    assert document["flag_names"] == list(FLAG_FEATURE_NAMES)
    assert np.array_equal(GbdtBaseline.load(tmp_path / "model").scores(sample), scores)
    (tmp_path / "model" / MODEL_FILE).write_text("not a model")
    with pytest.raises(HlotuneError, match="not a LightGBM model"):
        GbdtBaseline.load(tmp_path / "model")


def test_gbdt_fits_the_tile_and_layout_fixtures(tpugraphs_dir):
    for folder in ("npz/tile/xla", "npz/layout/xla"):
        data = Dataset(tpugraphs_dir / folder)
        model = GbdtBaseline.fit(data, rounds=5)
        for sample in data:
            scores = model.scores(sample)
            assert scores.shape == (sample.num_configs,) and np.isfinite(scores).all()


def test_load_scorer_baselines(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    train = _flags_folder(tmp_path / "train")
    sample = train[1]
    analytical = load_scorer("baseline:analytical")
    assert np.array_equal(analytical(sample), analytical_scores(sample))
    gbdt = load_scorer(f"baseline:gbdt@{tmp_path / 'train'}")
    scores = gbdt(sample)
    assert (cache_folder(train) / MODEL_FILE).is_file()  # trained at the first graph, cached
    assert np.array_equal(load_scorer(f"baseline:gbdt@{tmp_path / 'train'}")(sample), scores)
    for name in ("baseline:nope", "baseline:gbdt@", "baseline:random@x"):
        with pytest.raises(HlotuneError, match="unknown baseline"):
            load_scorer(name)


def test_gbdt_rank_learns_each_graphs_order_and_reloads_as_a_ranker(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    train = _flags_folder(tmp_path / "train", range(3))
    held_out = _flags_folder(tmp_path / "test", [3])
    model = GbdtBaseline.fit(train, rounds=50, objective="lambdarank")
    ranked = evaluate(held_out, model.scores)  # lower scores = faster, as for every scorer
    assert ranked.kendall_tau > 0.3 and ranked.opa > 0.65  # chance: 0 and 0.5
    model.save(tmp_path / "model")
    reloaded = GbdtBaseline.load(tmp_path / "model")
    assert reloaded.objective == "lambdarank"
    assert np.array_equal(reloaded.scores(held_out[0]), model.scores(held_out[0]))
    scorer = load_scorer(f"baseline:gbdt-rank@{tmp_path / 'train'}")
    assert evaluate(held_out, scorer).kendall_tau > 0.3
    with pytest.raises(HlotuneError, match="objective"):
        GbdtBaseline.fit(train, objective="poisson")
