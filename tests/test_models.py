"""The cost model: feature scaling, pruning, config reuse, layout encoding and model files."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from hlotune.data.sample import FlagConfigArrays, GraphArrays, GraphSample, LayoutConfigArrays, TileConfigArrays
from hlotune.errors import HlotuneError
from hlotune.models import (
    GraphCostModel,
    ModelSettings,
    data_fields,
    fit_feature_stats,
    graph_inputs,
    predict_scores,
)
from hlotune.models.files import CONFIG_FILE, WEIGHTS_FILE
from hlotune.models.layout_embedding import LayoutEmbedding
from hlotune.models.normalizer import RunningMoments, SignLogNormalizer
from hlotune.models.prune import neighbourhood, prune

pytestmark = pytest.mark.usefixtures("one_thread")

SMALL = dict(hidden_dim=8, opcode_dim=4, num_layers=2)


def _graph(rng: np.random.Generator, n: int, width: int = 140) -> GraphArrays:
    """A chain (node i consumes node i - 1) plus a few random back edges; TpuGraphs-like features."""
    edges = {(i, i - 1) for i in range(1, n)}
    edges |= {(int(u), int(rng.integers(0, u))) for u in rng.integers(2, n, size=n // 3)}
    feat = rng.integers(0, 5, size=(n, width)).astype(np.float32)
    feat[:, 28] = rng.integers(1, 10**9, size=n)  # a product column: huge values
    return GraphArrays(
        node_feat=feat,
        node_opcode=rng.integers(0, 121, size=n).astype(np.uint8),
        edge_index=np.array(sorted(edges), dtype=np.int64),
    )


def _runtimes(rng: np.random.Generator, c: int) -> np.ndarray:
    return rng.integers(1000, 5000, size=c).astype(np.int64)


def layout_sample(seed: int = 0, n: int = 30, c: int = 6, config_nodes=(3, 4, 20)) -> GraphSample:
    rng = np.random.default_rng(seed)
    feat = rng.integers(-1, 6, size=(c, len(config_nodes), 18)).astype(np.float32)
    configs = LayoutConfigArrays(np.array(config_nodes, dtype=np.int64), feat, _runtimes(rng, c))
    return GraphSample(_graph(rng, n), configs, name=f"layout{seed}")


def flags_sample(seed: int = 0, n: int = 15, c: int = 5) -> GraphSample:
    rng = np.random.default_rng(seed)
    feat = rng.integers(0, 3, size=(c, 4)).astype(np.float32)
    feat[:, 3] = 7.0  # a constant column
    names = np.array(["a", "b", "c", "d"])
    return GraphSample(_graph(rng, n), FlagConfigArrays(feat, names, _runtimes(rng, c)), name=f"flags{seed}")


def tile_sample(seed: int = 0, n: int = 6, c: int = 5) -> GraphSample:
    rng = np.random.default_rng(seed)
    feat = rng.integers(0, 64, size=(c, 24)).astype(np.float32)
    runtimes = _runtimes(rng, c)
    configs = TileConfigArrays(feat, runtimes, np.full(c, runtimes[0]))
    return GraphSample(_graph(rng, n), configs, name=f"tile{seed}")


def make_model(sample: GraphSample, seed: int = 0, **options) -> GraphCostModel:
    torch.manual_seed(seed)
    config = ModelSettings(**{**SMALL, **options}).with_data(**data_fields(sample))
    model = GraphCostModel(config)
    model.set_feature_stats(fit_feature_stats([sample]))
    return model.eval()


VARIANTS = {
    "tile-late": (tile_sample, {}),
    "flags-early-attention": (flags_sample, {"join": "early", "cross_config_attention": True, "attention_heads": 2}),
    "layout-pruned": (layout_sample, {"prune_hops": 2}),
    "layout-late": (layout_sample, {"layout_join": "late"}),
    "layout-gps": (layout_sample, {"conv": "gps", "attention_heads": 2}),
    "layout-sites": (layout_sample, {"layout_join": "sites", "attention_heads": 2}),
    "flags-kaggle": (flags_sample, {"config_softmax": True, "instance_norm": True, "residual": True,
                                    "test_group_size": 2, "test_permutations": 2}),
}


# Normalisation


def test_normalizer_sign_logs_and_standardises_with_constant_columns_at_zero():
    rows = np.array([[1.0, -5.0, 3.0], [1e30, 5.0, 3.0], [0.0, 0.0, 3.0]], dtype=np.float32)
    moments = RunningMoments(3)
    moments.add(rows[:2])
    moments.add(rows[2:])  # streamed in two parts = fitted at once
    scaled = np.sign(rows) * np.log1p(np.abs(rows.astype(np.float64)))
    np.testing.assert_allclose(moments.mean, scaled.mean(axis=0))
    np.testing.assert_allclose(moments.std[:2], scaled.std(axis=0)[:2])
    normalizer = SignLogNormalizer(3)
    normalizer.set_stats(moments)
    out = normalizer(torch.from_numpy(rows))
    assert torch.all(out[:, 2] == 0)
    torch.testing.assert_close(out.mean(dim=0), torch.zeros(3), atol=1e-6, rtol=0)
    assert set(normalizer.state_dict()) == {"mean", "std"}  # stored with the weights


# Pruning


def test_prune_keeps_seeds_and_k_hop_neighbours_in_both_directions():
    # 0 <- 1 <- 2 <- 3 <- 4 (u consumes v), and 5 consumes 2
    edge_index = torch.tensor([[1, 2, 3, 4, 5], [0, 1, 2, 3, 2]])
    seeds = torch.tensor([2])
    assert neighbourhood(edge_index, seeds, 6, 0).nonzero().flatten().tolist() == [2]
    assert neighbourhood(edge_index, seeds, 6, 1).nonzero().flatten().tolist() == [1, 2, 3, 5]
    sub = prune(edge_index, seeds, 6, 1)
    assert sub.nodes.tolist() == [1, 2, 3, 5]
    assert sub.seeds.tolist() == [1]
    assert sub.edge_index.t().tolist() == [[1, 0], [2, 1], [3, 1]]  # renumbered
    assert sub.boundary_edge_index.t().tolist() == [[1, 0], [4, 3]]  # original ids
    assert prune(edge_index, seeds, 6, 2).is_whole_graph


def test_pruning_is_exact_when_every_node_is_within_k_hops():
    sample = layout_sample(n=8, config_nodes=(2, 5))
    full = predict_scores(make_model(sample, prune_hops=None), sample)
    pruned = predict_scores(make_model(sample, prune_hops=8), sample)
    np.testing.assert_allclose(pruned, full, rtol=1e-5, atol=1e-5)


def test_pruning_with_hops_at_least_layers_is_exact_on_a_larger_graph():
    sample = layout_sample(n=60, config_nodes=(3, 4))
    model = make_model(sample, prune_hops=None)
    full = predict_scores(model, sample)
    model.config = replace(model.config, prune_hops=SMALL["num_layers"])
    context = model.encode_graph(graph_inputs(sample, model.config, "cpu"))
    assert context.rows_per_config < 60  # nodes were dropped
    np.testing.assert_allclose(predict_scores(model, sample), full, rtol=1e-5, atol=1e-5)


def test_config_layers_run_config_free_layers_once_and_prune_exactly():
    sample = layout_sample(n=60, config_nodes=(3, 4))
    model = make_model(sample, num_layers=3, config_layers=1, prune_hops=60)  # the whole graph
    context = model.encode_graph(graph_inputs(sample, model.config, "cpu"))
    assert model.shared_layers == 2 and context.rows_per_config == 60
    whole = predict_scores(model, sample)
    model.config = replace(model.config, prune_hops=None)  # pruned to config_layers hops
    context = model.encode_graph(graph_inputs(sample, model.config, "cpu"))
    assert context.rows_per_config < 20 and len(context.outside) == 1
    np.testing.assert_allclose(predict_scores(model, sample), whole, rtol=1e-5, atol=1e-5)
    joined_first = make_model(sample, num_layers=3)
    assert not np.allclose(predict_scores(joined_first, sample), whole)  # another computation


def test_late_joined_sites_attend_to_each_other_with_layout_join_sites():
    """Late join adds up what each site's layout does alone; with "sites" a site's effect
    depends on the other sites' layouts, so changes at two sites no longer add up."""
    sample = layout_sample(c=4)
    feat = sample.configs.node_config_feat
    feat[1], feat[2], feat[3] = feat[0], feat[0], feat[0]
    feat[1, 0, 0], feat[2, 1, 0] = (feat[0, 0, 0] + 1) % 6, (feat[0, 1, 0] + 1) % 6
    feat[3, 0, 0], feat[3, 1, 0] = feat[1, 0, 0], feat[2, 1, 0]  # both changes
    for join, additive in (("late", True), ("sites", False)):
        model = make_model(sample, layout_join=join, attention_heads=2, hidden_dim=32)
        context = model.encode_graph(graph_inputs(sample, model.config, "cpu"))
        total = model.site_sum(context.sites, torch.as_tensor(feat)).detach()
        assert torch.allclose(total[3] - total[0], (total[1] - total[0]) + (total[2] - total[0]),
                              atol=1e-5) == additive


@pytest.mark.parametrize("join", ["late", "sites"])
def test_a_site_is_computed_once_per_distinct_layout_and_the_sums_are_exact(join):
    """What site_sum gathers from the distinct (site, layout) pairs equals the site encoder on
    every site of every config, joined as its docstring says, then attended and summed."""
    from hlotune.models.gnn import distinct_site_layouts

    sample = layout_sample(c=6)
    feat = torch.as_tensor(sample.configs.node_config_feat)
    feat = torch.cat((feat, feat[:3]))  # repeated configs: their sites are pairs seen before
    feat[-1, 0] = feat[0, 0]
    pair_sites, pair_layouts, index = distinct_site_layouts(feat)
    assert len(pair_sites) == 6 * 3 < feat.shape[0] * feat.shape[1]
    assert torch.equal(pair_layouts[index], feat) and torch.equal(pair_sites[index], torch.arange(3).expand(9, 3))
    model = make_model(sample, layout_join=join, attention_heads=2, hidden_dim=32, dropout=0.1)
    sites = model.encode_graph(graph_inputs(sample, model.config, "cpu")).sites
    with torch.no_grad():
        each = model.site_encoder(torch.cat((sites.expand(9, -1, -1), model.config_encoder(feat)), dim=-1))
        expected = (model.site_attention(each) if join == "sites" else each).sum(dim=-2)
        torch.testing.assert_close(model.site_sum(sites, feat), expected, rtol=1e-5, atol=1e-5)


def test_residuals_keep_pruning_exact():
    sample = layout_sample(n=60, config_nodes=(3, 4))
    model = make_model(sample, residual=True)
    full = predict_scores(model, sample)
    model.config = replace(model.config, prune_hops=SMALL["num_layers"])
    assert model.encode_graph(graph_inputs(sample, model.config, "cpu")).rows_per_config < 60
    np.testing.assert_allclose(predict_scores(model, sample), full, rtol=1e-5, atol=1e-5)
    assert not np.allclose(full, predict_scores(make_model(sample), sample))  # another model


def test_instance_norm_standardises_each_layer_over_the_nodes():
    """As torch's own instance norm over a (1, features, nodes) batch, then the learnt affine."""
    sample = layout_sample()
    model = make_model(sample, instance_norm=True)
    graph = graph_inputs(sample, model.config, "cpu")
    nodes = model._encode_nodes(graph)
    raw = model.convs[0](nodes, graph.edge_index)
    expected = torch.nn.functional.instance_norm(raw.T.unsqueeze(0), eps=1e-5)[0].T
    states = model._propagate(nodes, graph.edge_index, range(1))
    torch.testing.assert_close(states, expected, atol=1e-5, rtol=1e-5)
    with torch.no_grad():
        model.norms[0].weight.fill_(3.0)
        model.norms[0].bias.fill_(2.0)
    states = model._propagate(nodes, graph.edge_index, range(1))
    torch.testing.assert_close(states, 3.0 * expected + 2.0, atol=1e-4, rtol=1e-4)


def test_config_softmax_compares_the_configs_of_a_batch_and_learns_its_temperature():
    sample = flags_sample(c=6)
    model = make_model(sample, config_softmax=True)
    together = predict_scores(model, sample)
    alone = [predict_scores(model, sample, indices=np.array([i]))[0] for i in range(6)]
    assert not np.allclose(together, alone)  # a score depends on the configs beside it
    reordered = predict_scores(model, sample, indices=np.arange(6)[::-1])[::-1]
    np.testing.assert_allclose(reordered, together, rtol=1e-5, atol=1e-6)  # not on their order
    model.train()
    graph = graph_inputs(sample, model.config, "cpu")
    model(graph, torch.as_tensor(sample.configs.config_feat)).var().backward()
    assert model.config_softmax.log_inverse_temperature.grad is not None


def test_test_time_averaging_scores_random_groups_as_trained():
    """With test_group_size, configs are scored in groups of that many, several draws averaged:
    deterministic, the same as plain scoring when one group holds them all, different (and
    closer to how the model was trained) when groups are smaller."""
    sample = flags_sample(c=8)
    model = make_model(sample, config_softmax=True)
    plain = predict_scores(model, sample)
    model.config = replace(model.config, test_group_size=8, test_permutations=3)
    np.testing.assert_allclose(predict_scores(model, sample), plain, rtol=1e-5, atol=1e-6)
    model.config = replace(model.config, test_group_size=2)
    grouped = predict_scores(model, sample)
    np.testing.assert_array_equal(grouped, predict_scores(model, sample))
    assert not np.allclose(grouped, plain)
    model.config = replace(model.config, test_permutations=1)
    assert not np.allclose(predict_scores(model, sample), grouped)  # three draws, not one
    independent = make_model(sample, test_group_size=2, test_permutations=3)
    np.testing.assert_array_equal(predict_scores(independent, sample),
                                  predict_scores(make_model(sample), sample))


def test_the_analytical_prior_adds_a_learnt_multiple_of_the_rule():
    from hlotune.models.baselines.analytical import analytical_scores

    sample = layout_sample()
    rule = analytical_scores(sample)
    assert np.ptp(rule) > 0
    model, plain = make_model(sample, analytical_prior=True), make_model(sample)
    np.testing.assert_allclose(predict_scores(model, sample), predict_scores(plain, sample), rtol=1e-6)
    with torch.no_grad():
        model.prior_weight.fill_(2.0)
    np.testing.assert_allclose(predict_scores(model, sample) - predict_scores(plain, sample), 2 * rule,
                               rtol=1e-4, atol=1e-4)
    graph = graph_inputs(sample, model.config, "cpu")
    configs = torch.as_tensor(sample.configs.node_config_feat)
    model.train()
    model(graph, configs, torch.as_tensor(rule, dtype=torch.float32)).sum().backward()
    assert model.prior_weight.grad is not None
    with pytest.raises(HlotuneError, match="analytical prior"):
        model(graph, configs)


def test_the_neighbour_sum_is_pygs_sum_aggregation_over_config_batches():
    """sage.py sums messages with index_add rather than PyG (to skip PyG's import when
    scoring): the same sums, each config's over the shared edges, into receivers beyond the
    senders' rows too (a pruned subgraph's outside messages)."""
    from torch_geometric.utils import scatter

    from hlotune.models.sage import NeighbourSum

    x = torch.randn(3, 7, 5)  # 3 configs, 7 sending nodes
    edges = torch.tensor([[0, 1, 1, 6, 2, 2], [1, 0, 4, 4, 4, 8]])  # receiver 8: past the senders
    summed = NeighbourSum()(x, edges, num_nodes=9)
    expected = scatter(x[:, edges[0]], edges[1], dim=-2, dim_size=9, reduce="sum")
    torch.testing.assert_close(summed, expected)
    assert summed[:, [3, 5, 6, 7]].abs().sum() == 0  # no messages in: zero


def test_drop_edge_drops_edges_in_training_only():
    sample = layout_sample()
    model = make_model(sample, drop_edge=0.5)
    plain = make_model(sample)  # the same weights without DropEdge
    np.testing.assert_array_equal(predict_scores(model, sample), predict_scores(plain, sample))
    graph = graph_inputs(sample, model.config, "cpu")
    configs = torch.as_tensor(sample.configs.node_config_feat)
    model.train()
    torch.manual_seed(0)
    first, second = model(graph, configs), model(graph, configs)
    assert not torch.allclose(first, second)  # each step drops other edges
    assert model.encode_graph(graph).edge_index.shape[1] < graph.edge_index.shape[1]


# Reuse and encodings


@pytest.mark.parametrize(
    "variant",
    ["tile-late", "flags-early", "layout-pruned", "layout-full", "layout-late", "layout-gat",
     "layout-gin", "layout-gps", "flags-early-gps", "layout-config-layers", "flags-config-layers",
     "layout-sites", "layout-norm-residual", "layout-pruned-residual"],
)
def test_scoring_configs_together_equals_one_at_a_time(variant):
    make, options = {
        "tile-late": (tile_sample, {}),
        "flags-early": (flags_sample, {"join": "early"}),
        "layout-pruned": (layout_sample, {"prune_hops": 1}),
        "layout-full": (layout_sample, {}),
        "layout-late": (layout_sample, {"layout_join": "late"}),
        "layout-gat": (layout_sample, {"conv": "gat", "attention_heads": 2}),
        "layout-gin": (layout_sample, {"conv": "gin"}),
        "layout-gps": (layout_sample, {"conv": "gps", "attention_heads": 2}),
        "flags-early-gps": (flags_sample, {"join": "early", "conv": "gps", "attention_heads": 2}),
        "layout-config-layers": (layout_sample, {"config_layers": 1}),
        "layout-sites": (layout_sample, {"layout_join": "sites", "attention_heads": 2}),
        "flags-config-layers": (flags_sample, {"join": "early", "config_layers": 1}),
        "layout-norm-residual": (layout_sample, {"instance_norm": True, "residual": True}),
        "layout-pruned-residual": (layout_sample, {"prune_hops": 1, "residual": True}),
    }[variant]
    sample = make()
    model = make_model(sample, **options)
    together = predict_scores(model, sample)
    alone = [predict_scores(model, sample, indices=np.array([i]))[0] for i in range(sample.num_configs)]
    np.testing.assert_allclose(together, alone, rtol=1e-5, atol=1e-6)
    assert np.ptp(together) > 0  # configs are told apart


def test_each_conv_is_its_own_layer_and_trains():
    sample = layout_sample()
    scores, layers = {}, {}
    for conv in ("sage", "gat", "gin", "gps"):
        model = make_model(sample, conv=conv, attention_heads=2).train()
        graph = graph_inputs(sample, model.config, "cpu")
        configs = torch.as_tensor(sample.configs.node_config_feat)
        model(graph, configs).sum().backward()
        assert all(p.grad is not None for p in model.convs.parameters())
        layers[conv] = type(model.convs[0]).__name__ + str(sorted(model.convs[0].state_dict()))
        scores[conv] = tuple(predict_scores(model.eval(), sample))
    assert len(set(layers.values())) == 4 and len(set(scores.values())) == 4


def test_layout_padding_minus_one_is_not_dimension_zero():
    embedding = LayoutEmbedding(4)
    pad, zero = torch.full((18,), -1.0), torch.full((18,), -1.0)
    zero[7] = 0.0
    assert not torch.allclose(embedding(pad), embedding(zero))
    sample = layout_sample(c=2)
    sample.configs.node_config_feat[:] = -1
    sample.configs.node_config_feat[1, 0, 0] = 0
    scores = predict_scores(make_model(sample, hidden_dim=32), sample)  # 8 ReLUs may all be off
    assert scores[0] != scores[1]


def test_layout_values_outside_minus_one_to_five_are_rejected():
    sample = layout_sample()
    model = make_model(sample)
    sample.configs.node_config_feat[0, 0, 0] = 6
    with pytest.raises(HlotuneError, match="-1..5"):
        predict_scores(model, sample)


# Model files


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_save_load_round_trip_gives_identical_scores(tmp_path, variant):
    make, options = VARIANTS[variant]
    sample = make()
    model = make_model(sample, **options)
    model.save(tmp_path / "m")
    loaded = GraphCostModel.load(tmp_path / "m")
    assert loaded.config == model.config
    np.testing.assert_array_equal(predict_scores(loaded, sample), predict_scores(model, sample))
    assert json.loads((tmp_path / "m" / CONFIG_FILE).read_text())["model"]["collection"] == sample.collection


def test_a_model_file_from_before_conv_existed_loads_as_sage(tmp_path):
    sample = layout_sample()
    model = make_model(sample)
    model.save(tmp_path / "m")
    document = json.loads((tmp_path / "m" / CONFIG_FILE).read_text())
    del document["model"]["conv"]
    (tmp_path / "m" / CONFIG_FILE).write_text(json.dumps(document))
    loaded = GraphCostModel.load(tmp_path / "m")
    assert loaded.config.conv == "sage"
    np.testing.assert_array_equal(predict_scores(loaded, sample), predict_scores(model, sample))


def _corrupt(folder, how):
    config, weights = folder / CONFIG_FILE, folder / WEIGHTS_FILE
    if how == "missing weights":
        weights.unlink()
    elif how == "missing config":
        config.unlink()
    elif how == "truncated weights":
        data = weights.read_bytes()
        weights.write_bytes(data[: len(data) // 2])
    elif how == "bad json":
        config.write_text("{not json")
    elif how == "other format":
        config.write_text('{"format": "something-else"}')
    else:
        document = json.loads(config.read_text())
        if how == "other shapes":
            document["model"]["hidden_dim"] = 12
        elif how == "unknown key":
            document["model"]["colour"] = "blue"
        elif how == "wrong type":
            document["model"]["num_layers"] = "two"
        elif how == "missing tensors":
            document["model"]["cross_config_attention"] = True
            document["model"]["attention_heads"] = 2
        config.write_text(json.dumps(document))


@pytest.mark.parametrize(
    "how",
    ["missing weights", "missing config", "truncated weights", "bad json", "other format",
     "other shapes", "unknown key", "wrong type", "missing tensors"],
)
def test_corrupt_model_folder_is_a_one_line_error(tmp_path, how):
    sample = flags_sample()
    make_model(sample).save(tmp_path)
    _corrupt(tmp_path, how)
    with pytest.raises(HlotuneError) as caught:
        GraphCostModel.load(tmp_path)
    assert "\n" not in str(caught.value)
    assert str(tmp_path) in str(caught.value)


def test_missing_model_folder(tmp_path):
    with pytest.raises(HlotuneError, match="no such model folder"):
        GraphCostModel.load(tmp_path / "absent")


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda s: replace(s, graph=replace(s.graph, node_feat=np.zeros((s.graph.num_nodes, 150), np.float32))),
         "150 node features"),
        (lambda s: replace(s, configs=replace(s.configs, config_feat=s.configs.config_feat[:, :3],
                                              config_feat_names=s.configs.config_feat_names[:3])),
         "3 config features"),
        (lambda s: replace(s, configs=replace(s.configs, config_feat_names=np.array(["a", "b", "x", "d"]))),
         "config feature 2"),
        (lambda s: tile_sample(), "a tile graph"),
    ],
)
def test_data_that_does_not_fit_the_model_is_a_clean_error(change, message):
    sample = flags_sample()
    model = make_model(sample)
    with pytest.raises(HlotuneError, match=message):
        predict_scores(model, change(sample))


def test_model_settings_rejects_bad_values():
    with pytest.raises(HlotuneError, match="join"):
        ModelSettings(join="middle")
    with pytest.raises(HlotuneError, match="layout_join"):
        ModelSettings(layout_join="early")
    with pytest.raises(HlotuneError, match="conv must be"):
        ModelSettings(conv="gcn")
    with pytest.raises(HlotuneError, match="needs conv 'sage'"):
        ModelSettings(conv="gat", prune_hops=3)
    with pytest.raises(HlotuneError, match="needs conv 'sage'"):
        ModelSettings(conv="gin", config_layers=1).with_data("layout", 140, 18)
    with pytest.raises(HlotuneError, match="config_layers must be"):
        ModelSettings(config_layers=4)
    with pytest.raises(HlotuneError, match="config_layers applies"):
        ModelSettings(layout_join="late", config_layers=1).with_data("layout", 140, 18)
    with pytest.raises(HlotuneError, match="prune_hops applies"):
        ModelSettings(layout_join="late", prune_hops=2)
    with pytest.raises(HlotuneError, match="cannot be pruned"):
        ModelSettings(instance_norm=True, prune_hops=3).with_data("layout", 140, 18)
    with pytest.raises(HlotuneError, match="test_permutations must be positive"):
        ModelSettings(test_permutations=0)
    with pytest.raises(HlotuneError, match="test_group_size must be positive"):
        ModelSettings(test_group_size=0)
    with pytest.raises(HlotuneError, match="set"):
        GraphCostModel(ModelSettings())
    with pytest.raises(HlotuneError, match="node_feat_dim"):
        ModelSettings(node_feat_dim=150).with_data("tile", 140, 24)
    config = ModelSettings(prune_hops=2).with_data("layout", 140, 18)
    assert ModelSettings.from_dict(json.loads(json.dumps(config.to_dict()))) == config

