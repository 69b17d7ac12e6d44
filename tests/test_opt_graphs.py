"""GO-scale graphs (hlotune.programs.go), the shipped pretrained policy and the fusion head.

Graphs are built at size tiny (a few hundred ops); the pretrained policy is applied zero-shot
to a graph it was not trained on. Step times are the simulator's."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest

from conftest import compile_and_run
from hlotune.errors import HlotuneError
from hlotune.opt.baselines import greedy_fusion, metis_placement, random_placement
from hlotune.opt.commands import PRETRAINED_DIR, load_graphs, policy_folder
from hlotune.opt.device import DeviceModel
from hlotune.opt.policy import GOPolicy
from hlotune.opt.ppo import Problem, search
from hlotune.opt.simulator import honoured_fusion
from hlotune.programs import is_program_spec, load_program
from hlotune.programs.go import GO_WORKLOADS

GO_GRAPHS = ("rnnlm", "nmt", "txl", "inception", "amoebanet", "wavenet")


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def pretrained() -> GOPolicy:
    return GOPolicy.load(policy_folder("pretrained"))[0]


@pytest.fixture(scope="module")
def unseen():
    """A GO architecture the pretrained policy never trained on (see its config.json)."""
    return load_graphs("go:amoebanet@tiny")[0][1]


def test_every_go_architecture_is_registered_with_three_sizes():
    assert set(GO_WORKLOADS) == set(GO_GRAPHS)
    assert all(set(w.sizes) == {"tiny", "small", "large"} for w in GO_WORKLOADS.values())


@pytest.mark.parametrize("name", GO_GRAPHS)
def test_go_graph_builds_a_valid_op_graph(name):
    (spec, graph), = load_graphs(f"go:{name}@tiny")
    n = graph.num_ops
    assert spec == f"go:{name}@tiny" and 40 <= n <= 1000
    assert graph.num_edges >= n - 1  # connected enough to be one program
    assert 0 <= graph.edge_src.min() and max(graph.edge_src.max(), graph.edge_dst.max()) < n
    assert sorted(graph.order.tolist()) == list(range(n))  # acyclic: a full topological order
    assert np.all(graph.depth[graph.edge_dst] > graph.depth[graph.edge_src])
    assert graph.flops.sum() > 0 and (graph.launches > 0).sum() > n // 4


def test_go_specs_resolve_through_the_common_registry_with_runnable_arguments():
    assert is_program_spec("go:rnnlm@tiny")
    program = load_program("go:rnnlm@tiny")
    assert program.name == "go:rnnlm@tiny" and program.slug == "rnnlm@tiny"
    assert all(isinstance(leaf, jax.Array) for leaf in jax.tree_util.tree_leaves(program.args))
    assert np.isfinite(np.asarray(compile_and_run(program.fn, program.args))).all()


def test_featurize_cli_builds_a_go_graph(cli):
    result = cli("featurize", "go:rnnlm@tiny", "--json")
    assert result.returncode == 0, result.stderr
    graph = json.loads(result.stdout)
    assert graph["path"] == "rnnlm@tiny" and graph["valid"]
    assert graph["nodes"] > 40 and graph["edges"] >= graph["nodes"] - 1


def test_training_variant_adds_the_backward_pass_and_abstract_arguments_are_shapes_only():
    inference, train = (load_program(f"go:rnnlm@tiny{v}", abstract=True) for v in ("", "-train"))
    assert len(train.args) == 4 and len(inference.args) == 2
    assert all(not hasattr(leaf, "device") for leaf in inference.args[1:])  # ShapeDtypeStruct
    sizes = [load_graphs(f"go:rnnlm@tiny{v}")[0][1].num_ops for v in ("", "-train")]
    assert sizes[1] > 2 * sizes[0]


@pytest.mark.parametrize("spec, message", [
    ("go:resnet", "unknown GO graph"),
    ("go:rnnlm@huge", "unknown variant"),
])
def test_bad_go_specs_are_user_errors(spec, message):
    with pytest.raises(HlotuneError, match=message):
        load_program(spec)


def test_pretrained_policy_ships_and_places_an_unseen_graph_on_2_4_8_devices(pretrained, unseen):
    assert policy_folder("pretrained") == PRETRAINED_DIR
    training = GOPolicy.load(PRETRAINED_DIR)[1]
    assert not any("amoebanet" in spec for spec in training["programs"])
    assert set(training["devices"]) == {2, 4, 8}
    for n in (2, 4, 8):
        problem = Problem.make(unseen, DeviceModel.uniform(n), "place")
        found = search(pretrained, problem, samples=4, seed=0)
        assert found.placement.shape == (unseen.num_ops,)
        assert 0 <= found.placement.min() and found.placement.max() < n
        assert found.result.step_time_s > 0 and not found.result.oom


def test_pretrained_fusion_head_gives_valid_scored_fuse_bits(pretrained, unseen):
    problem = Problem.make(unseen, DeviceModel.uniform(2), "fuse")
    found = search(pretrained, problem, samples=4, seed=0)
    assert found.fuse.shape == (unseen.num_ops,) and found.fuse.dtype == bool
    honoured = honoured_fusion(unseen, problem.fixed_placement, found.fuse)
    assert honoured.any()  # the head fuses, and the simulator accepts some of it
    greedy = problem.simulate(fuse=greedy_fusion(unseen, problem.fixed_placement))
    assert found.result.step_time_s < problem.default_step_time_s  # faster than no fusion
    assert found.result.step_time_s > 0 and greedy.step_time_s > 0


def test_pretrained_policy_beats_random_and_metis_on_an_unseen_graph(pretrained, unseen):
    """Zero-shot (no training on the graph, a few samples) the shipped policy places an
    architecture it never saw faster than METIS and random placement (simulated)."""
    for n in (2, 4):
        problem = Problem.make(unseen, DeviceModel.uniform(n), "place")
        found = search(pretrained, problem, samples=16, seed=0)
        for baseline in (metis_placement(unseen, problem.devices),
                         random_placement(unseen, problem.devices, seed=0)):
            assert found.result.step_time_s < problem.simulate(baseline).step_time_s
