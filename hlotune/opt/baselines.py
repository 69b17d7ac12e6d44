"""The baselines GO is compared with, on the simulator's terms.

Placement: a human expert's layer-wise split, METIS, random, and a small HDP (learned).
Scheduling: HEFT-style critical-path priorities. Fusion: XLA-like greedy producer-consumer fusion.
Every function returns arrays the simulator and GraphOptEnv take: one entry per op.
"""

from __future__ import annotations

import numpy as np

from hlotune.errors import HlotuneError
from hlotune.hlo.flops import ELEMENTWISE
from hlotune.hlo.opcodes import OPCODE_NAMES
from hlotune.opt.costs import OpGraph
from hlotune.opt.device import DeviceModel
from hlotune.opt.simulator import reward, simulate

# Loop fusion: ops XLA fuses into their consumer (computed per element, inside its loop).
FUSIBLE_PRODUCERS = ELEMENTWISE | {"broadcast", "iota", "reshape", "transpose", "slice", "pad",
                                   "concatenate", "dynamic-slice", "reverse", "copy"}
# Output fusion: these may absorb an elementwise consumer (a bias add, an activation).
_OUTPUT_FUSIBLE = frozenset({"dot", "convolution"})
# Library kernels: they take no fused producers, so dots and convolutions never fuse together.
_LIBRARY = frozenset({"dot", "convolution", "custom-call"})

_SCALE = 1000  # METIS takes integer weights: costs are scaled to 1..1 + _SCALE


def expert_placement(graph: OpGraph, devices: DeviceModel) -> np.ndarray:
    """How people pipeline a model layer by layer: the topological order cut into one
    contiguous stage per device, each stage's compute in proportion to its device's speed."""
    seconds = graph.seconds(devices)
    cost = seconds.mean(axis=1)[graph.order]
    if cost.sum() <= 0:
        cost = np.ones_like(cost)
    middle = (np.cumsum(cost) - cost / 2) / cost.sum()  # each op's place in the work, in (0, 1)
    bounds = np.cumsum(_speed_shares(seconds))
    placement = np.empty(graph.num_ops, dtype=np.int64)
    placement[graph.order] = np.minimum(np.searchsorted(bounds, middle), len(bounds) - 1)
    return placement


def metis_placement(graph: OpGraph, devices: DeviceModel, *, seed: int = 0) -> np.ndarray:
    """METIS k-way partition: op cost balanced across devices (in proportion to their speed),
    fewest tensor bytes cut."""
    seconds = graph.seconds(devices)
    shares = _speed_shares(seconds)
    uniform = np.allclose(shares, shares[0])
    return _metis_parts(graph, seconds.mean(axis=1), len(shares), seed,
                        None if uniform else shares)


def random_placement(graph: OpGraph, devices: DeviceModel, *, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, devices.num_devices, graph.num_ops)


# METIS cannot split a few dozen ops into 16 parts (it leaves parts empty and complains):
# each HDP group gets at least this many ops.
_MIN_GROUP_OPS = 8


def hdp_placement(
    graph: OpGraph,
    devices: DeviceModel,
    *,
    groups: int = 16,
    iterations: int = 40,
    samples: int = 4,
    learning_rate: float = 0.5,
    seed: int = 0,
) -> np.ndarray:
    """A small HDP (Mirhoseini et al., ICLR 2018): a grouper, then a placer of the groups
    trained with REINFORCE on the simulator's reward. The grouper here is METIS into `groups`
    balanced groups (HDP learns it); the placer is one softmax over devices per group, updated
    against the batch's mean reward. Budget: iterations * samples simulations (160 by default),
    far below HDP's; it returns the best placement it sampled (the default placement, all on
    device 0, if none beat it)."""
    group = metis_groups(graph, devices, groups, seed=seed)
    num_groups = int(group.max(initial=0)) + 1
    rng = np.random.default_rng(seed)
    default = simulate(graph, devices)
    baseline = default.step_time_s
    best, best_reward = np.zeros(graph.num_ops, dtype=np.int64), reward(default, baseline)
    logits = np.zeros((num_groups, devices.num_devices))
    for _ in range(iterations):
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        choices = (rng.random((samples, num_groups, 1)) < np.cumsum(probs, axis=1)).argmax(axis=2)
        rewards = np.empty(samples)
        for k, choice in enumerate(choices):
            placement = choice[group]
            rewards[k] = reward(simulate(graph, devices, placement), baseline)
            if rewards[k] > best_reward:
                best, best_reward = placement, rewards[k]
        advantage = rewards - rewards.mean()
        onehot = np.eye(devices.num_devices)[choices]  # (samples, groups, devices)
        logits += learning_rate * np.einsum("s,sgd->gd", advantage, onehot - probs) / samples
    return best


def metis_groups(graph: OpGraph, devices: DeviceModel, groups: int, *, seed: int = 0) -> np.ndarray:
    """A group per op: METIS into at most `groups` parts of balanced cost and few tensor bytes
    cut, with at least _MIN_GROUP_OPS ops each (HDP's grouper; GO's placement unit)."""
    num_groups = max(1, min(groups, graph.num_ops // _MIN_GROUP_OPS))
    return _metis_parts(graph, graph.seconds(devices).mean(axis=1), num_groups, seed, None)


def heft_priorities(
    graph: OpGraph, devices: DeviceModel, placement: np.ndarray | None = None
) -> np.ndarray:
    """HEFT's upward rank (Topcuoglu et al., 2002) scaled to [0, 1]: an op's mean compute time
    plus the longest chain of compute and transfers after it, so critical-path ops run first.
    With a placement an edge costs its real transfer (0 within a device); without, the mean
    link's."""
    work = graph.seconds(devices).mean(axis=1)
    comm = _edge_seconds(graph, devices, placement)
    src, dst = graph.edge_src, graph.edge_dst
    # Successors are deeper than their producers: by depth from the deepest, ranks are final.
    by_level = np.lexsort((src, -graph.depth[src]))
    src, dst, comm = src[by_level], dst[by_level], comm[by_level]
    level = graph.depth[src]
    begins = np.flatnonzero(np.r_[True, level[1:] != level[:-1]]) if len(level) else level
    rank = work.copy()
    for begin, end in zip(begins, np.r_[begins[1:], len(level)]):
        producers = src[begin:end]
        after = comm[begin:end] + rank[dst[begin:end]]
        first = np.flatnonzero(np.r_[True, producers[1:] != producers[:-1]])
        rank[producers[first]] = work[producers[first]] + np.maximum.reduceat(after, first)
    top = rank.max(initial=0.0)
    return rank / top if top > 0 else rank


def greedy_fusion(graph: OpGraph, placement: np.ndarray | None = None) -> np.ndarray:
    """XLA-like producer-consumer fusion: fuse an op into its single consumer when the op is
    elementwise or cheap data movement (loop fusion) or a dot/convolution whose consumer is
    elementwise (output fusion), and the consumer is no library kernel (dot, convolution,
    custom-call); both must run one kernel on one device."""
    n = graph.num_ops
    src, dst = graph.edge_src, graph.edge_dst
    single = np.bincount(src, minlength=n) == 1
    edge = single[src]  # the one out-edge of each single-consumer op
    producer, consumer = src[edge], dst[edge]
    fusible = _opcode_mask(FUSIBLE_PRODUCERS)[graph.opcode]
    output = _opcode_mask(_OUTPUT_FUSIBLE)[graph.opcode]
    elementwise = _opcode_mask(ELEMENTWISE)[graph.opcode]
    library = _opcode_mask(_LIBRARY)[graph.opcode]
    ok = (fusible[producer] | (output[producer] & elementwise[consumer])) & ~library[consumer]
    ok &= (graph.launches[producer] == 1) & (graph.launches[consumer] == 1)
    if placement is not None:
        place = np.asarray(placement)
        ok &= place[producer] == place[consumer]
    fuse = np.zeros(n, dtype=bool)
    fuse[producer[ok]] = True
    return fuse


def _speed_shares(seconds: np.ndarray) -> np.ndarray:
    """Each device's share of the work: in proportion to 1 / (time of the whole graph on it)."""
    speed = 1.0 / np.maximum(seconds.sum(axis=0), np.finfo(float).tiny)
    return speed / speed.sum()


def _metis_parts(graph: OpGraph, cost: np.ndarray, parts: int, seed: int, shares) -> np.ndarray:
    """METIS partition into `parts`: vertex weights from `cost`, edge weights from tensor bytes."""
    n = graph.num_ops
    if parts == 1 or n <= 1:
        return np.zeros(n, dtype=np.int64)
    try:
        import pymetis
    except ImportError:
        raise HlotuneError("METIS placement needs pymetis: pip install pymetis") from None
    src, dst = graph.edge_src, graph.edge_dst
    edge_weight = _integer_weights(graph.edge_bytes)
    ends = np.concatenate([src, dst])
    order = np.argsort(ends, kind="stable")
    adjacency = np.concatenate([dst, src])[order]
    xadj = np.searchsorted(ends[order], np.arange(n + 1))
    partition = pymetis.part_graph(
        parts,
        pymetis.CSRAdjacency(xadj, adjacency),
        vweights=_integer_weights(cost),
        eweights=np.concatenate([edge_weight, edge_weight])[order],
        tpwgts=None if shares is None else list(shares * (1 - 1e-9)),
        options=pymetis.Options(seed=seed),
    )
    return np.asarray(partition.vertex_part, dtype=np.int64)


def _integer_weights(values: np.ndarray) -> np.ndarray:
    top = values.max(initial=0.0)
    scaled = values / top * _SCALE if top > 0 else np.zeros_like(values)
    return (1 + np.floor(scaled)).astype(np.int64)


def _edge_seconds(graph: OpGraph, devices: DeviceModel, placement) -> np.ndarray:
    nbytes = graph.edge_bytes
    if placement is None:
        if devices.num_devices == 1:
            return np.zeros_like(nbytes)
        off = ~np.eye(devices.num_devices, dtype=bool)
        latency = devices.link_latency[off].mean()
        return latency + nbytes * (1.0 / devices.link_bandwidth[off]).mean()
    place = np.asarray(placement, dtype=np.int64)
    a, b = place[graph.edge_src], place[graph.edge_dst]
    seconds = devices.link_latency[a, b] + nbytes / devices.link_bandwidth[a, b]
    return np.where(a == b, 0.0, seconds)


def _opcode_mask(names: frozenset[str] | set[str]) -> np.ndarray:
    return np.array([name in names for name in OPCODE_NAMES], dtype=bool)
