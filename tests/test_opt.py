"""The GO foundation: op costs, the simulator against hand-computed steps, the env, baselines.

Hand-computed cases use round machine numbers so every step time can be written out. An op
alone takes max(flops / flop rate, bytes / memory bandwidth) + launch overhead; its bytes are
its operands' outputs read plus its own output written.
"""

from __future__ import annotations

import math
import warnings

import jax.numpy as jnp
import numpy as np
import pytest

from hlotune.errors import HlotuneError
from hlotune.hlo.opcodes import OPCODE_NAMES
from hlotune.hlo.sources import from_jax
from hlotune.opt import baselines
from hlotune.opt.costs import OpGraph, op_graph
from hlotune.opt.device import DeviceModel
from hlotune.opt.simulator import OOM_PENALTY, simulate


def machine(n: int, **overrides) -> DeviceModel:
    """Round numbers; no overheads unless a test asks for them."""
    spec = dict(flops=1e3, mem_bandwidth=1e3, memory=1e9, link_bandwidth=10.0, link_latency=0.5,
                launch_overhead_s=0.0, fusion_overhead_s=0.0)
    return DeviceModel.uniform(n, **(spec | overrides))


# --- op costs ---------------------------------------------------------------------------------


def test_costs_come_from_shapes_and_fusion_bodies_fold_into_their_caller():
    def f(a, b):
        return jnp.tanh(a @ b).sum()

    args = (jnp.ones((4, 8)), jnp.ones((8, 16)))
    plain = op_graph(from_jax(f, *args))
    # parameter, parameter, dot, tanh, constant (the sum's init), reduce
    dot, tanh, reduce = 2, 3, 5
    assert plain.flops[dot] == 2 * 4 * 16 * 8  # 2 * output elements * contracted size
    assert plain.flops[tanh] == 4 * 16  # one per output element
    assert plain.flops[reduce] == 4 * 16  # its lambda (one add) once per input element
    assert plain.bytes_in[dot] == (4 * 8 + 8 * 16) * 4 and plain.bytes_out[dot] == 4 * 16 * 4
    assert plain.launches.tolist() == [0, 0, 1, 1, 0, 1]  # parameters and constants run nothing
    # After XLA's passes the ops are fusions: the flops of their bodies are kept.
    fused = op_graph(from_jax(f, *args, optimized=True))
    assert fused.num_ops < plain.num_ops
    assert fused.flops.sum() == plain.flops.sum()


def test_calibration_scales_the_roofline_time_of_its_opcodes():
    graph = op_graph(from_jax(lambda a, b: a @ b, jnp.ones((4, 8)), jnp.ones((8, 16))),
                     calibration={"dot": 3.0})
    devices = DeviceModel.uniform(1, launch_overhead_s=0.0)
    dot = 2
    assert graph.time_scale[dot] == 3.0
    plain = op_graph(from_jax(lambda a, b: a @ b, jnp.ones((4, 8)), jnp.ones((8, 16))))
    assert graph.seconds(devices)[dot, 0] == pytest.approx(3 * plain.seconds(devices)[dot, 0])
    with pytest.raises(HlotuneError, match="unknown opcode"):
        op_graph(from_jax(lambda a: a + 1, jnp.ones(3)), calibration={"matmul": 2.0})


# --- the simulator against hand-computed steps ------------------------------------------------


def test_chain_on_one_device():
    # a -> b -> c at 1000 flop/s and 100 B/s, 0.1 s per kernel launch.
    graph = OpGraph.from_edges([1000, 2000, 500], [10, 20, 30], [[0, 1], [1, 2]])
    result = simulate(graph, machine(1, mem_bandwidth=100.0, launch_overhead_s=0.1))
    # a: max(1000/1000, 10 B/100) + 0.1 = 1.1          -> 0.0 .. 1.1
    # b: max(2000/1000, (10 + 20) B/100) + 0.1 = 2.1   -> 1.1 .. 3.2
    # c: max(500/1000, (20 + 30) B/100) + 0.1 = 0.6    -> 3.2 .. 3.8 (memory-bound)
    assert result.step_time_s == pytest.approx(3.8)
    np.testing.assert_allclose(result.finish_s, [1.1, 3.2, 3.8])
    assert result.busy_s[0] == pytest.approx(3.8)
    # Live: a 1.1..3.2, b 3.2..3.8, c 3.8..end; at 3.8 b (20) and c (30) coexist: 50.
    assert result.peak_memory_bytes[0] == 50
    assert not result.oom and result.num_transfers == 0


def test_fork_join_across_two_devices():
    # s -> x, s -> y, x -> j, y -> j; y on device 1, the rest on device 0.
    # 1000 flop/s, 1000 B/s (every op compute-bound), links 10 B/s with 0.5 s latency.
    graph = OpGraph.from_edges(
        [1000, 2000, 3000, 1000], [10, 10, 20, 10], [[0, 1], [0, 2], [1, 3], [2, 3]]
    )
    result = simulate(graph, machine(2), placement=[0, 0, 1, 0])
    # s   on 0: 0 .. 1
    # s's 10 B to 1: 0.5 + 10/10 = 1.5 s      -> arrives 2.5
    # x   on 0: 1 .. 3
    # y   on 1: 2.5 .. 5.5
    # y's 20 B to 0: 0.5 + 20/10 = 2.5 s      -> arrives 8.0
    # j   on 0: 8 .. 9
    assert result.step_time_s == pytest.approx(9.0)
    np.testing.assert_allclose(result.start_s, [0, 1, 2.5, 8])
    np.testing.assert_allclose(result.busy_s, [4, 3])  # 1 + 2 + 1 and 3
    assert result.num_transfers == 2
    # Device 0: s 1..3 (x reads it last), x 3..9, y's copy 8..9, j 9..end: at 9, 10 + 20 + 10.
    # Device 1: s's copy 2.5..5.5, y 5.5..8 (its transfer ends): at 5.5, 10 + 20.
    np.testing.assert_allclose(result.peak_memory_bytes, [40, 30])


def test_transfer_bound_placement_waits_on_the_link():
    # a -> b, a big output (1000 B) over a slow link (100 B/s, 2 s latency); memory is fast.
    devices = machine(2, mem_bandwidth=1e6, link_bandwidth=100.0, link_latency=2.0)
    graph = OpGraph.from_edges([1000, 1000], [1000, 10], [[0, 1]])
    # a 0..1, transfer 2 + 1000/100 = 12 s (1..13), b 13..14.
    split = simulate(graph, devices, placement=[0, 1])
    assert split.step_time_s == pytest.approx(14.0)
    assert split.step_time_s - split.busy_s.sum() == pytest.approx(12.0)
    # On one device: a 0..1, b 1..2 (1010 B at 1 MB/s is 1 ms < 1 s of compute).
    assert simulate(graph, devices, placement=[0, 0]).step_time_s == pytest.approx(2.0)

    # Two tensors on one link queue: a, b on 0 both feed c on 1.
    graph = OpGraph.from_edges([1000, 1000, 1000], [1000, 1000, 10], [[0, 2], [1, 2]])
    result = simulate(graph, devices, placement=[0, 0, 1])
    # a 0..1, b 1..2; a's tensor 1..13, b's waits for the link: 13..25; c 25..26.
    assert result.step_time_s == pytest.approx(26.0)


def test_priorities_choose_among_ready_ops_and_heft_finds_the_critical_path():
    # x and y are ready together on device 0; only y has a successor (z, on device 1).
    graph = OpGraph.from_edges([1000, 1000, 1000], [0, 0, 0], [[1, 2]])
    devices = machine(2, link_latency=0.0)
    placement = [0, 0, 1]
    # Topological order runs x first: x 0..1, y 1..2, z 2..3.
    assert simulate(graph, devices, placement).step_time_s == pytest.approx(3.0)
    # y first: y 0..1, then x 1..2 beside z 1..2.
    assert simulate(graph, devices, placement, priority=[0, 1, 0]).step_time_s == 2.0
    ranks = baselines.heft_priorities(graph, devices, placement)
    assert ranks[1] > ranks[0]  # y: 1 + 1 s of chain; x: 1 s
    assert simulate(graph, devices, placement, priority=ranks).step_time_s == 2.0


def test_fusion_saves_memory_traffic_on_a_memory_bound_chain_until_kernels_grow():
    # a -> b -> c, 100 B each, 100 B/s: memory-bound. Fused kernels of k ops pay 1.5 * (k-1)^2.
    devices = machine(1, mem_bandwidth=100.0, fusion_overhead_s=1.5)
    graph = OpGraph.from_edges([1, 1, 1], [100, 100, 100], [[0, 1], [1, 2]])
    # Unfused: a writes 100 B (1 s); b and c read 100 and write 100 (2 s each): 5 s.
    assert simulate(graph, devices).step_time_s == pytest.approx(5.0)
    # b into c: the kernel reads b's 100 B input and writes c's 100 B (2 s) + 1.5 * 1^2: 1 + 3.5.
    pair = simulate(graph, devices, fuse=[0, 1, 0])
    assert pair.step_time_s == pytest.approx(4.5)
    assert pair.peak_memory_bytes[0] == 200  # b's output never exists: a and c at c's finish
    # All three: only c's 100 B written (1 s), but 1.5 * 2^2 = 6 s of kernel-size cost: 7 s.
    assert simulate(graph, devices, fuse=[1, 1, 0]).step_time_s == pytest.approx(7.0)
    # A fuse bit across devices is ignored.
    two = machine(2, mem_bandwidth=100.0, fusion_overhead_s=1.5)
    across = simulate(graph, two, placement=[0, 1, 1], fuse=[1, 0, 0])
    assert across.step_time_s == simulate(graph, two, placement=[0, 1, 1]).step_time_s


def test_out_of_memory_placement_is_penalised_in_the_env_reward():
    from hlotune.opt.env import GraphOptEnv

    # Two chains a1 -> b1, a2 -> b2 of 60 B tensors, 1 s each; devices hold 150 B.
    graph = OpGraph.from_edges([1000] * 4, [60] * 4, [[0, 1], [2, 3]])
    devices = machine(2, memory=150.0, link_latency=0.0)
    env = GraphOptEnv(graph, devices)  # baseline: all on device 0, 4 s
    env.reset(seed=0)
    # One device: a1, a2, then b1 while both a's live: 60 * 3 = 180 B > 150 B.
    _, reward, terminated, truncated, info = env.step({"placement": np.zeros(4, dtype=np.int64)})
    assert info["oom"] and info["peak_memory_bytes"][0] == 180
    assert reward == pytest.approx(-math.log(4.0 / 4.0) - OOM_PENALTY)
    assert terminated and not truncated
    # One chain per device: 120 B each, 2 s.
    _, reward, *_, info = env.step({"placement": np.array([0, 0, 1, 1])})
    assert not info["oom"] and reward == pytest.approx(math.log(2.0))


# --- the device model -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: DeviceModel.uniform(0), "at least one device"),
        (lambda: DeviceModel.uniform(2, flops=-1.0), "flops must be positive"),
        (lambda: DeviceModel.uniform(2, link_latency=-1e-6), "must not be negative"),
        (lambda: DeviceModel.uniform(2, memory=float("inf")), "memory must be finite"),
        (lambda: DeviceModel(flops=[], mem_bandwidth=[], memory=[], link_bandwidth=[],
                             link_latency=[]), "N >= 1"),
        (lambda: DeviceModel(flops=[1.0, 1.0], mem_bandwidth=[1.0, 1.0], memory=[1.0, 1.0],
                             link_bandwidth=[[1.0, 1.0]], link_latency=np.zeros((2, 2))),
         r"link_bandwidth has shape \(1, 2\)"),
        (lambda: DeviceModel.from_dict({"flops": [1.0]}), "missing keys"),
    ],
)
def test_invalid_device_models_are_user_errors(build, message):
    with pytest.raises(HlotuneError, match=message):
        build()


def test_device_model_json_round_trip(tmp_path):
    devices = DeviceModel.uniform(3, memory=8e9)
    path = tmp_path / "machine.json"
    devices.save(path)
    loaded = DeviceModel.load(path)
    assert loaded.to_dict() == devices.to_dict()
    path.write_text("{not json")
    with pytest.raises(HlotuneError, match="not a JSON device model"):
        DeviceModel.load(path)


# --- the environment --------------------------------------------------------------------------


def test_env_follows_the_gymnasium_api():
    from gymnasium.utils.env_checker import check_env

    from hlotune.opt.env import NODE_FEATURES, GraphOptEnv

    graph = OpGraph.from_edges([1000, 2000, 500, 800], [10, 20, 30, 5],
                               [[0, 1], [0, 2], [1, 3], [2, 3]])
    env = GraphOptEnv(graph, machine(2), place=True, schedule=True, fuse=True)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*render modes.*")  # no registered spec
        check_env(env, skip_render_check=True)
    obs, info = env.reset(seed=1)
    assert env.observation_space.contains(obs) and info == {}
    assert obs["node_features"].shape == (4, len(NODE_FEATURES))
    np.testing.assert_array_equal(obs["edge_index"], graph.edge_index())
    step = env.step(env.action_space.sample())
    assert len(step) == 5 and step[2] is True and step[3] is False
    assert np.isfinite(step[1]) and step[4]["step_time_s"] > 0
    place_only = GraphOptEnv(graph, machine(2))
    assert set(place_only.action_space.spaces) == {"placement"}
    with pytest.raises(HlotuneError, match="disabled tasks"):
        place_only.step({"placement": np.zeros(4, dtype=np.int64), "fuse": np.ones(4)})
    with pytest.raises(HlotuneError, match="at least one task"):
        GraphOptEnv(graph, machine(2), place=False)


# --- baselines on a real program --------------------------------------------------------------


@pytest.fixture(scope="module")
def transformer() -> OpGraph:
    from hlotune.programs import load_program

    program = load_program("zoo:transformer@tiny", abstract=True)
    return op_graph(from_jax(program.fn, *program.args))


PLACERS = {
    "expert": lambda g, d, seed: baselines.expert_placement(g, d),
    "metis": lambda g, d, seed: baselines.metis_placement(g, d, seed=seed),
    "random": lambda g, d, seed: baselines.random_placement(g, d, seed=seed),
    "hdp": lambda g, d, seed: baselines.hdp_placement(g, d, iterations=4, samples=2, seed=seed),
}


@pytest.mark.parametrize("name", PLACERS)
def test_placement_baselines_are_valid_and_deterministic(transformer, name):
    devices = DeviceModel.uniform(4)
    placement = PLACERS[name](transformer, devices, 3)
    assert placement.shape == (transformer.num_ops,)
    assert np.issubdtype(placement.dtype, np.integer)
    assert placement.min() >= 0 and placement.max() < devices.num_devices
    np.testing.assert_array_equal(placement, PLACERS[name](transformer, devices, 3))
    assert simulate(transformer, devices, placement).step_time_s > 0


def test_expert_and_metis_use_every_device(transformer):
    devices = DeviceModel.uniform(4)
    for placement in (baselines.expert_placement(transformer, devices),
                      baselines.metis_placement(transformer, devices)):
        assert set(placement.tolist()) == {0, 1, 2, 3}


def test_scheduling_and_fusion_baselines_on_a_real_program(transformer):
    devices = DeviceModel.uniform(2)
    placement = baselines.metis_placement(transformer, devices)
    ranks = baselines.heft_priorities(transformer, devices, placement)
    assert ranks.shape == (transformer.num_ops,) and 0 <= ranks.min() and ranks.max() == 1
    fuse = baselines.greedy_fusion(transformer, placement)
    assert fuse.dtype == bool and fuse.any()
    opcodes = np.array(OPCODE_NAMES)[transformer.opcode]
    consumer = {s: d for s, d in zip(transformer.edge_src.tolist(), transformer.edge_dst.tolist())}
    for op in np.flatnonzero(fuse).tolist():
        assert opcodes[consumer[op]] not in ("dot", "convolution")  # nothing fuses into a dot
    result = simulate(transformer, devices, placement, ranks, fuse)
    assert result.step_time_s > 0 and result.busy_s.sum() > 0
