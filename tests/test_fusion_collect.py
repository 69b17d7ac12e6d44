"""The fusion collection: XLA:CPU's default fused module measured under per-kernel fusion
decisions, written as a TpuGraphs-style npz that the reader, `hlotune inspect` and the Dataset
know as "fusion"."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hlotune.compiler.spaces.encode import ConfigEncoder
from hlotune.compiler.spaces.fusion_features import DECISIONS, FIRST_SPLIT, KEEP, MERGE_COLUMN
from hlotune.compiler.configs.kernel_config import KernelConfig
from hlotune.compiler.configs.layouts import LayoutSpace
from hlotune.compiler.measurement.measure import OK
from hlotune.data import schema
from hlotune.data.dataset import Dataset, split_info
from hlotune.data.npz import read_sample
from hlotune.data.sample import FusionConfigArrays
from hlotune.errors import HlotuneError
from hlotune.hlo.opcodes import opcode_id
from hlotune.programs import load_program

PROGRAM = "zoo:gnn@tiny"


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    """(the written file's path, its summary): 3 drawn configs of the tiny GNN."""
    from hlotune.collect.collector import CollectSettings, collect

    out = tmp_path_factory.mktemp("fusion")
    settings = CollectSettings(space="fusion", configs=3, samples=3, batch=4)
    result = collect(PROGRAM, settings, out, progress=False)
    assert collect(PROGRAM, settings, out, progress=False).resumed  # read off its summary
    return result.path, json.loads((out / "gnn@tiny.json").read_text())


def test_the_file_holds_the_fused_graph_and_one_hot_decisions(collected):
    path, summary = collected
    sample = read_sample(path)
    configs = sample.configs
    assert isinstance(configs, FusionConfigArrays) and sample.collection == summary["space"] == "fusion"
    healthy = [r for r in summary["configs"] if r["status"] == OK]
    c, nc = sample.num_configs, configs.node_config_ids.shape[0]
    assert c == len(healthy) + 1 >= 2 and nc > 0  # the default first
    assert sample.graph.node_feat.shape == (sample.graph.num_nodes, 140)
    assert configs.node_config_feat.shape == (c, nc, DECISIONS)
    assert configs.node_config_choices.shape == (nc, DECISIONS)
    assert configs.config_runtime_samples.shape == (c, 3) and (configs.config_runtime > 0).all()
    assert (configs.node_config_feat.sum(axis=2) == 1).all()  # one decision per kernel
    assert (configs.node_config_feat[0, :, KEEP] == 1).all()  # the default: XLA's fusion
    moved = [len(r["config"]["kernels"]) for r in healthy]
    assert (configs.node_config_feat[1:, :, KEEP] == 0).sum(axis=1).tolist() == moved


def test_configurable_nodes_are_the_kernels_and_choices_name_their_nodes(collected):
    sample = read_sample(collected[0])
    ids, choices = sample.configs.node_config_ids, sample.configs.node_config_choices
    assert (sample.graph.node_opcode[ids] == opcode_id("fusion")).all()
    assert (choices[:, KEEP] == ids).all()
    assert np.isin(choices[:, MERGE_COLUMN], [-1, *ids]).all()
    assert (choices[:, MERGE_COLUMN] == ids).any() and (choices[:, FIRST_SPLIT] >= 0).all()
    splits = choices[:, FIRST_SPLIT:]
    cut_at = sample.graph.node_opcode[splits[splits >= 0]]
    assert not np.isin(cut_at, [opcode_id("fusion"), opcode_id("parameter")]).any()
    chosen = sample.configs.node_config_feat.argmax(axis=2)  # (c, nc): each one was offered
    assert (choices[np.arange(len(ids)), chosen] >= 0).all()


def test_inspect_and_the_dataset_know_the_fusion_collection_and_eval_refuses_it(collected, cli, tmp_path):
    path, _ = collected
    result = cli("inspect", path, "--json")
    report = json.loads(result.stdout)
    assert result.returncode == 0 and report["valid"], report["errors"]
    assert report["collection"] == "fusion" and report["family"] == "gnn"
    assert report["configurable_nodes"] == read_sample(path).configs.node_config_ids.shape[0]
    assert ": fusion, valid" in cli("inspect", path).stdout
    assert Dataset(path).collection == "fusion"
    assert split_info(tmp_path / "fusion" / "train" / "x.npz").collection == "fusion"
    refused = cli("eval", "--model", "baseline:analytical", "--data", path)  # no model ranks it yet
    assert refused.returncode != 0 and "a fusion graph; hlotune eval scores" in refused.stderr


def test_a_layout_file_is_not_taken_for_fusion():
    graph = ["node_feat", "node_opcode", "edge_index"]
    assert schema.detect_collection([*graph, "node_config_feat", "node_config_choices"]) == "fusion"
    assert schema.detect_collection([*graph, "node_config_feat"]) == "layout"
    with pytest.raises(HlotuneError, match="several collections"):
        schema.detect_collection(["node_config_feat", "node_config_choices", "config_feat_names"])


@pytest.fixture(scope="module")
def encoder():
    return ConfigEncoder(LayoutSpace(load_program(PROGRAM)))


def test_collection_draws_fusion_decisions_of_the_fused_module(encoder):
    from hlotune.collect.collector import CollectSettings, draw_configs

    offered = {(key, value) for key, values in encoder.fusion.choices.items() for value in values}
    for search in ("random", "default"):
        drawn = draw_configs(encoder, CollectSettings(space="fusion", configs=6, search=search))
        assert len(set(drawn)) == 6
        for config in drawn:
            assert config.kernels.fusion and set(config.kernels.fusion) <= offered
            assert config.flags.is_default and config.layout.is_default and not config.kernels.partitions


def test_a_decision_the_kernel_does_not_offer_is_an_error(encoder):
    sites = encoder.fusion
    key = sites.keys[0]
    feat = sites.node_config_feat([KernelConfig(fusion=((key, sites.choices[key][0]),))])
    assert feat[0, 0, KEEP] == 0 and feat.shape == (1, len(sites.keys), DECISIONS)
    with pytest.raises(HlotuneError, match="not one of its fusion choices"):
        sites.node_config_feat([KernelConfig(fusion=((key, "split:no_such_instruction"),))])
