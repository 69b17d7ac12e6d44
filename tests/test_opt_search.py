"""GO's search side: policy-guided hill climbing, time budgets, the curriculum, the step-time
bound, and the simulator's ranking of placements across device models. Step times are the
simulator's; graphs are real zoo programs at size tiny."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hlotune.errors import HlotuneError
from hlotune.opt import baselines
from hlotune.opt.commands import load_graphs
from hlotune.opt.costs import OpGraph
from hlotune.opt.device import DeviceModel
from hlotune.opt.local_search import hill_climb
from hlotune.opt.policy import ActionDistribution, GOPolicy
from hlotune.opt.ppo import PPOSettings, Problem, search, train
from hlotune.opt.simulator import simulate

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def transformer() -> OpGraph:
    return load_graphs("zoo:transformer@tiny")[0][1]


def test_hill_climb_keeps_only_moves_that_are_no_slower_and_improves_on_sampling(transformer):
    problem = Problem.make(transformer, DeviceModel.uniform(4), "place")
    policy = GOPolicy(seed=0)
    sampled = search(policy, problem, samples=4, seed=0)
    with torch.no_grad():
        actions = policy(problem.inputs, problem.devices, problem.tasks).actions
    start = {"placement": sampled.placement, "priority": None, "fuse": None}
    climb = hill_climb(problem, actions, start, sampled.reward, budget_s=60.0, max_moves=60,
                       seed=1)
    assert climb.moves == 60 and 0 < climb.kept <= climb.moves
    assert climb.reward > sampled.reward  # random groups leave room a climb finds
    assert climb.reward == problem.reward(problem.simulate(**climb.arrays))
    again = hill_climb(problem, actions, start, sampled.reward, budget_s=60.0, max_moves=60,
                       seed=1)
    np.testing.assert_array_equal(again.arrays["placement"], climb.arrays["placement"])
    group = problem.inputs.group.numpy()  # moves relocate whole placement groups
    for g in np.unique(group):
        assert len(set(climb.arrays["placement"][group == g].tolist())) == 1


def test_hill_climb_skips_empty_placement_groups(transformer):
    """METIS may leave a part empty: group ids with no ops are never moved."""
    problem = Problem.make(transformer, DeviceModel.uniform(2), "place")
    group = problem.inputs.group * 2  # every odd group id is empty
    actions = ActionDistribution(torch.zeros(int(group.max()) + 1, 2), None, torch.zeros(()),
                                 None, group)
    start = {"placement": np.zeros(transformer.num_ops, dtype=np.int64), "priority": None,
             "fuse": None}
    reward = problem.reward(problem.simulate(**start))
    climb = hill_climb(problem, actions, start, reward, budget_s=60.0, max_moves=20)
    assert climb.moves == 20 and climb.reward >= reward


def test_search_budget_buys_hill_climbing_for_every_task(transformer):
    problem = Problem.make(transformer, DeviceModel.uniform(2), "place+schedule+fuse")
    policy = GOPolicy(seed=0)
    sampled = search(policy, problem, samples=2, seed=0)
    budgeted = search(policy, problem, samples=2, seed=0, budget_s=1.0)
    assert budgeted.samples > sampled.samples == 3
    assert budgeted.reward >= sampled.reward and budgeted.search_s >= 1.0
    assert budgeted.priority.shape == budgeted.fuse.shape == (transformer.num_ops,)


def test_training_stops_at_its_time_budget(transformer):
    problem = Problem.make(transformer, DeviceModel.uniform(2), "place")
    logs = train(GOPolicy(seed=0), [problem], PPOSettings(iterations=1000, samples=4, epochs=1),
                 budget_s=0.0)
    assert len(logs) == 1  # one iteration at least, then the budget is spent


def test_curriculum_starts_small_and_covers_every_problem():
    sizes = (40, 10, 30, 20, 60, 50, 80, 70)
    problems = [Problem.make(OpGraph.from_edges(np.full(k, 1e6), np.full(k, 1e3),
                                                [[i, i + 1] for i in range(k - 1)], name=str(k)),
                             DeviceModel.uniform(2), "place") for k in sizes]
    seen = []
    config = PPOSettings(iterations=16, samples=2, epochs=1, curriculum=True)
    train(GOPolicy(seed=0), problems, config, progress=lambda log: seen.append(int(log.problem)))
    assert set(seen[:2]) == {10, 20}  # the smallest quarter first
    assert max(seen[:4]) < 80 and set(seen) == set(sizes)
    with pytest.raises(HlotuneError, match="advantage must be one of"):
        PPOSettings(advantage="mean")


def test_step_time_bound_holds_for_every_placement(transformer):
    for n in (1, 2, 4):
        devices = DeviceModel.uniform(n)
        bound = transformer.step_time_bound(devices)
        assert bound > 0
        for placement in (None, baselines.metis_placement(transformer, devices),
                          baselines.random_placement(transformer, devices),
                          baselines.expert_placement(transformer, devices)):
            assert simulate(transformer, devices, placement).step_time_s >= bound * (1 - 1e-9)
    one = DeviceModel.uniform(1)  # one device: the bound is the whole work, as simulated
    assert transformer.step_time_bound(one) == pytest.approx(simulate(transformer, one).step_time_s)


def heterogeneous() -> DeviceModel:
    """Two fast devices on a fast link and two slower ones: speeds, memory bandwidths and
    links differ, as in a mixed machine."""
    fast, slow = 25e9, 10e9
    links = np.array([[fast, 2 * fast, slow, slow], [2 * fast, fast, slow, slow],
                      [slow, slow, fast, fast], [slow, slow, fast, fast]])
    return DeviceModel(flops=np.array([15e12, 15e12, 10e12, 8e12]),
                       mem_bandwidth=np.array([900e9, 900e9, 600e9, 500e9]),
                       memory=np.full(4, 16 * 2.0**30), link_bandwidth=links,
                       link_latency=np.full((4, 4), 8e-6), launch_overhead_s=5e-6,
                       fusion_overhead_s=1e-7)


def test_simulator_ranks_placements_alike_on_uniform_and_heterogeneous_devices():
    """The conclusions of GO's tables (which placement is faster) should not hinge on the
    illustrative uniform machine: across placements of every kind, the two device models'
    step times must agree in order (Kendall's tau), and on the best and the worst."""
    from scipy.stats import kendalltau

    graph = load_graphs("go:amoebanet@tiny")[0][1]
    uniform, mixed = DeviceModel.uniform(4), heterogeneous()
    groups = baselines.metis_groups(graph, uniform, 64)
    placements = [np.zeros(graph.num_ops, dtype=np.int64),
                  baselines.expert_placement(graph, uniform),
                  baselines.metis_placement(graph, uniform),
                  *(baselines.random_placement(graph, uniform, seed=s) for s in range(3)),
                  *(np.random.default_rng(s).integers(0, 4, 64)[groups] for s in range(3))]
    on_uniform = [simulate(graph, uniform, p).step_time_s for p in placements]
    on_mixed = [simulate(graph, mixed, p).step_time_s for p in placements]
    tau = kendalltau(on_uniform, on_mixed).statistic
    assert tau >= 0.75, (tau, on_uniform, on_mixed)
    assert np.argmin(on_uniform) == np.argmin(on_mixed)
    assert np.argmax(on_uniform) == np.argmax(on_mixed)
