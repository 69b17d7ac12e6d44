"""Graph Segment Training, partitioning and graph compression, on the built-in layout graphs."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from hlotune.data.builtin import resolve
from hlotune.data.dataset import Dataset
from hlotune.data.npz import write_sample
from hlotune.data.sample import FlagConfigArrays, GraphArrays, GraphSample, LayoutConfigArrays
from hlotune.errors import HlotuneError
from hlotune.models import (
    GraphCostModel,
    ModelSettings,
    config_inputs,
    data_fields,
    fit_feature_stats,
    graph_inputs,
)
from hlotune.models.compress import collapse_chains, drop_duplicate_configs
from hlotune.models.segments import PARTITIONS, Segmentation, partition
from hlotune.train import TrainSettings, train
from hlotune.train.gst import GSTSettings, SegmentTraining
from hlotune.train.losses import pairwise_hinge_loss
from hlotune.train.targets import log_targets

pytestmark = pytest.mark.usefixtures("one_thread")

BUILTIN_TRAIN = resolve("builtin:layout/train")
SMALL = ModelSettings(hidden_dim=16, opcode_dim=8, num_layers=2)


@pytest.fixture(scope="module")
def layout_sample() -> GraphSample:
    """A built-in layout training graph of 1,220 nodes."""
    return Dataset(BUILTIN_TRAIN / "resnet@tiny-train.npz")[0]


def _model(sample: GraphSample, **config) -> GraphCostModel:
    torch.manual_seed(0)
    model = GraphCostModel(replace(SMALL, **config).with_data(**data_fields(sample)))
    return model.eval()


def _copies(sample: GraphSample, count: int) -> GraphSample:
    """`count` disconnected copies of a graph, whose configs set every copy alike."""
    graph, configs, n = sample.graph, sample.configs, sample.graph.num_nodes
    arrays = GraphArrays(
        node_feat=np.concatenate([graph.node_feat] * count),
        node_opcode=np.concatenate([graph.node_opcode] * count),
        edge_index=np.concatenate([graph.edge_index + k * n for k in range(count)]),
        node_splits=np.array([[0, count * n]]),
    )
    layout = LayoutConfigArrays(
        node_config_ids=np.concatenate([configs.node_config_ids + k * n for k in range(count)]),
        node_config_feat=np.concatenate([configs.node_config_feat] * count, axis=1),
        config_runtime=configs.config_runtime,
    )
    return GraphSample(arrays, layout, name=f"{sample.name}x{count}")


@pytest.mark.parametrize("method", PARTITIONS)
def test_partitions_cover_every_node_in_segments_of_about_the_size(layout_sample, method):
    graph = layout_sample.graph
    segmentation = partition(graph.edge_index, graph.num_nodes, method, segment_size=300,
                             node_splits=graph.node_splits)
    counts = np.bincount(segmentation.assignment)
    assert counts.sum() == graph.num_nodes and counts.min() > 0
    assert 2 <= segmentation.num_segments <= 5  # ceil(1220 / 300) = 5 asked
    if method == "topological":  # operands come no later than their users
        users, operands = graph.edge_index.T
        assert np.all(segmentation.assignment[operands] <= segmentation.assignment[users])


def test_segments_cut_only_the_edges_between_them(layout_sample):
    graph = graph_inputs(layout_sample, _model(layout_sample).config, "cpu")
    segmentation = partition(layout_sample.graph.edge_index, graph.num_nodes, "metis",
                             segment_size=400)
    segments = segmentation.segments(graph)
    assert sum(s.num_nodes for s in segments) == graph.num_nodes
    assignment = segmentation.assignment
    users, operands = layout_sample.graph.edge_index.T
    internal = int((assignment[users] == assignment[operands]).sum())
    assert sum(s.inputs.edge_index.shape[1] for s in segments) == internal
    slots = torch.cat([s.config_slots for s in segments]).sort().values
    assert torch.equal(slots, torch.arange(layout_sample.configs.node_config_ids.size))


@pytest.mark.parametrize("join", ["layout", "late", "early"])
def test_segments_without_cut_edges_give_the_full_graph_scores(layout_sample, join):
    """Two disconnected copies, one segment each: GST's readout is the full model's."""
    sample = _copies(layout_sample, 2)
    if join != "layout":  # the same graph with graph-level configs (flags-like)
        feat = sample.configs.node_config_feat[:, :4, :].reshape(sample.num_configs, -1)
        names = np.array([f"f{i}" for i in range(feat.shape[1])])
        sample = replace(sample, configs=FlagConfigArrays(feat, names, sample.configs.config_runtime))
    model = _model(sample, **({} if join == "layout" else {"join": join}))
    graph = graph_inputs(sample, model.config, "cpu")
    configs = config_inputs(sample, np.arange(6), "cpu")
    n = layout_sample.graph.num_nodes
    halves = Segmentation(np.repeat([0, 1], n), "components")
    with torch.no_grad():
        total = sum(model.segment_sum(s.inputs, s.configs(configs))
                    for s in halves.segments(graph))
        segmented = model.score_segments(total, graph.num_nodes, configs)
        whole = model(graph, configs)
    torch.testing.assert_close(segmented, whole, rtol=1e-4, atol=1e-4)


def test_history_table_fills_as_segments_are_visited(layout_sample):
    model = _model(layout_sample)
    gst = SegmentTraining(GSTSettings(segment_size=300, segments_sampled=1))
    graph = graph_inputs(layout_sample, model.config, "cpu")
    rng = np.random.default_rng(0)
    picked = np.array([0, 1, 2, 3])
    gst.scores(model, "g", layout_sample, graph, config_inputs(layout_sample, picked, "cpu"),
               picked, rng)
    segments = len(gst.segments("g", layout_sample, graph, model))
    assert segments > 1
    assert gst.table.written("g") == segments * len(picked)  # sampled + the stale ones computed
    more = np.array([3, 4, 5])
    gst.scores(model, "g", layout_sample, graph, config_inputs(layout_sample, more, "cpu"),
               more, rng)
    assert gst.table.written("g") == segments * 6
    segment = gst.segments("g", layout_sample, graph, model)[0]
    with torch.no_grad():
        fresh = model.segment_sum(segment.inputs,
                                  segment.configs(config_inputs(layout_sample, more, "cpu")))
    torch.testing.assert_close(gst.table.read("g", 0, torch.as_tensor(more)),
                               fresh.expand(3, -1))


def test_gst_steps_lower_the_full_graph_loss(layout_sample):
    sample = _copies(layout_sample, 3)  # 3,660 nodes, in 4 segments of which 1 is trained
    model = _model(sample)
    model.set_feature_stats(fit_feature_stats([sample]))
    model.train()
    gst = SegmentTraining(GSTSettings(segment_size=1000, segments_sampled=1, dropout=0.25))
    graph = graph_inputs(sample, model.config, "cpu")
    picked = np.arange(0, 48, 3)
    configs = config_inputs(sample, picked, "cpu")
    targets = torch.as_tensor(log_targets(sample)[picked])

    def full_loss() -> float:
        with torch.no_grad():
            return pairwise_hinge_loss(model(graph, configs), targets).item()

    before = full_loss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    rng = np.random.default_rng(0)
    for _ in range(5):
        loss = pairwise_hinge_loss(gst.scores(model, 0, sample, graph, configs, picked, rng),
                                   targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert full_loss() < before


def test_training_with_gst_and_compression_end_to_end(tmp_path, layout_sample):
    data = tmp_path / "data"
    data.mkdir()
    for name in ("cnn@small", "gpt@tiny"):
        write_sample(data / f"{name}.npz", Dataset(BUILTIN_TRAIN / f"{name}.npz")[0])
    settings = TrainSettings(
        epochs=2, configs_per_batch=8, drop_duplicate_configs=True,
        gst=GSTSettings(segment_size=200, segments_sampled=2, partition="topological"),
    )
    result = train(data, data, tmp_path / "run", settings, progress=False,
                   model_settings=replace(SMALL, collapse_chains=True))
    assert result.epochs_run == 2 and result.best_value is not None
    model = GraphCostModel.load(result.model_dir)
    assert model.config.collapse_chains  # eval and predict collapse the graph the same way


def test_collapse_chains_rewires_plain_chains():
    # 0 <- 1 <- 2 <- 3 and 0 <- 4 (edges [user, operand]); 3 is configurable.
    edges = np.array([[1, 0], [2, 1], [3, 2], [4, 0]])
    sample = GraphSample(
        GraphArrays(np.arange(10, dtype=np.float32).reshape(5, 2), np.arange(5, dtype=np.uint8),
                    edges, np.array([[0, 5]])),
        LayoutConfigArrays(np.array([3]), np.zeros((2, 1, 18), np.float32), np.array([5, 7])),
    )
    collapsed = collapse_chains(sample)
    # 1 and 2 have one operand and one user and no config: gone; 3 now consumes 0.
    assert collapsed.graph.node_opcode.tolist() == [0, 3, 4]
    assert collapsed.graph.edge_index.tolist() == [[1, 0], [2, 0]]
    assert collapsed.configs.node_config_ids.tolist() == [1]
    assert collapsed.graph.node_splits.tolist() == [[0, 3]]
    assert collapse_chains(collapsed) is collapsed  # nothing left to collapse


def test_drop_duplicate_configs_keeps_the_median_runtime(layout_sample):
    configs = layout_sample.configs
    feat = np.concatenate([configs.node_config_feat[:3], configs.node_config_feat[:1].repeat(3, 0)])
    runtime = np.array([50, 60, 70, 10, 40, 0])  # config 0 is measured as 50, 10, 40 (and 0)
    sample = replace(layout_sample, configs=LayoutConfigArrays(configs.node_config_ids, feat, runtime))
    kept = drop_duplicate_configs(sample).configs
    assert sorted(kept.config_runtime.tolist()) == [40, 60, 70]  # median of 10, 40, 50
    assert drop_duplicate_configs(layout_sample) is layout_sample  # no duplicates: unchanged


def test_bad_segment_options_are_clean_errors(layout_sample):
    graph = layout_sample.graph
    with pytest.raises(HlotuneError, match="at least 1 node"):
        GSTSettings(segment_size=0)
    with pytest.raises(HlotuneError, match="segments for a graph of"):
        partition(graph.edge_index, graph.num_nodes, "metis", num_segments=graph.num_nodes + 1)
    with pytest.raises(HlotuneError, match="partition must be"):
        GSTSettings(segment_size=10, partition="random")


@pytest.mark.parametrize("args, fragment", [
    (["--segment-size", "0"], "segment_size must be at least 1 node"),
    (["--segments-sampled", "2"], "need --segment-size"),
    (["--segment-size", "100", "--segment-dropout", "1.5"], "segment dropout) must be in"),
    (["--segment-size", "100", "--layout-join", "late"], "needs layout_join 'nodes'"),
])
def test_cli_rejects_bad_segment_options(tmp_path, args, fragment, cli):
    result = cli("train", "--data", "builtin:layout/valid", "--out", tmp_path / "run", *args)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines == [f"hlotune: error: {lines[0].removeprefix('hlotune: error: ')}"]
    assert fragment in lines[0]
