"""A simulator of one step of an op graph on a DeviceModel (discrete-event list scheduling).

This is a SIMULATOR, not a measurement: op times are roofline estimates (hlotune.opt.costs) on
a modelled machine (hlotune.opt.device); nothing runs on hardware. It exists so that a policy
can try thousands of placements, schedules and fusions per second, as GO's training does.

The model:

- Compute: each device runs one kernel at a time, to completion. Among the ops ready on it, it
  starts the one of highest priority (ties: the earlier in topological order); the default
  priority is the topological order.
- Transfers: each ordered device pair (a, b) is one link with one FIFO transfer queue. A tensor
  consumed on another device crosses once per destination device (the largest part any consumer
  there reads) and holds the link for latency + bytes / bandwidth (store and forward).
- Fusion: a fuse bit fuses an op into its single consumer; chains of such bits make one kernel
  (a group) whose members all feed the group's last op. The intermediate tensors are neither
  written, read nor allocated, and the group pays one launch overhead instead of one per op,
  but a kernel of k ops pays fusion_overhead_s * (k - 1) ** 2 on top: the register pressure and
  code size of large kernels. Fusion thus trades memory traffic and launches for compute time:
  it wins on memory-bound chains and loses once groups grow. A bit is ignored unless the op has
  exactly one consumer, both ops launch one kernel, and both are on the same device.
- Memory: a tensor is live on its producer's device from the producer's finish until its last
  consumer there finishes and its last outgoing transfer ends; a copy received over a link is
  live on the destination from its arrival until its last consumer there finishes; a tensor
  nobody reads stays live to the end of the step. At equal times allocations count before frees,
  so an op's inputs and its output coexist. A device whose peak exceeds its memory is out of
  memory, which costs OOM_PENALTY in the reward.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from hlotune.errors import HlotuneError
from hlotune.opt.costs import OpGraph, csr, roofline_seconds
from hlotune.opt.device import DeviceModel

# Subtracted from the reward of a step that runs out of memory: e^10 (about 22,000 times) the
# baseline's step time, worse than any slowdown a placement that fits would plausibly reach.
OOM_PENALTY = 10.0

_FINISH, _ARRIVE = 0, 1  # event kinds


@dataclass(frozen=True)
class SimResult:
    step_time_s: float
    peak_memory_bytes: np.ndarray  # (N,)
    busy_s: np.ndarray  # (N,) seconds each device computes
    oom: bool
    start_s: np.ndarray  # (n,) when each op's kernel starts (fused ops share their group's)
    finish_s: np.ndarray  # (n,)
    num_transfers: int
    device: np.ndarray  # (n,) the device each op runs on
    kernel: np.ndarray  # (n,) the op naming each op's kernel: its fused group's last op
    transfers: Transfers  # what crossed the links (for traces: hlotune.opt.trace)


def reward(result: SimResult, baseline_step_time_s: float) -> float:
    """-log(step time / baseline step time), less OOM_PENALTY when out of memory."""
    if result.step_time_s <= 0 or baseline_step_time_s <= 0:
        raise HlotuneError("step times must be positive: the graph does no work")
    value = -math.log(result.step_time_s / baseline_step_time_s)
    return value - OOM_PENALTY if result.oom else value


def simulate(
    graph: OpGraph,
    devices: DeviceModel,
    placement: np.ndarray | None = None,
    priority: np.ndarray | None = None,
    fuse: np.ndarray | None = None,
) -> SimResult:
    """One step of `graph`: `placement` a device per op (default all on device 0), `priority`
    a number per op (higher first; default topological order), `fuse` a bit per op."""
    n, num_devices = graph.num_ops, devices.num_devices
    place = _placement(placement, n, num_devices)
    position = np.empty(n, dtype=np.int64)
    position[graph.order] = np.arange(n)
    prio = -position.astype(np.float64) if priority is None else _per_op(priority, n, "priority")
    if fuse is None:
        fused = np.zeros(n, dtype=bool)
    else:
        fused = honoured_fusion(graph, place, _per_op(fuse, n, "fuse") != 0)
    groups = _Groups(graph, devices, place, prio, fused)
    start, finish, transfers = _run(groups, position, devices)

    step = float(finish[groups.roots].max()) if n else 0.0
    peak = _peak_memory(groups, graph, place, finish, transfers, step, num_devices)
    return SimResult(
        step_time_s=step,
        peak_memory_bytes=peak,
        busy_s=np.bincount(place[groups.roots], groups.seconds[groups.roots], num_devices),
        oom=bool(np.any(peak > devices.memory)),
        start_s=start[groups.root],
        finish_s=finish[groups.root],
        num_transfers=len(transfers.src),
        device=place,
        kernel=groups.root,
        transfers=transfers,
    )


@dataclass(frozen=True)
class Transfers:
    """The tensors that crossed links: one entry per (producer, destination device), in order
    of arrival. A link is FIFO, so a transfer held it for latency + nbytes / bandwidth until
    its arrival."""

    src: np.ndarray  # producing op (a group root)
    device: np.ndarray  # destination
    arrival_s: np.ndarray
    nbytes: np.ndarray


class _Groups:
    """Ops merged into kernels by the honoured fuse bits; each group is named by its root (its
    last op, the only one with consumers outside it). Arrays are indexed by op; group values
    sit at the root's index."""

    def __init__(self, graph: OpGraph, devices: DeviceModel, place, prio, fused):
        n = graph.num_ops
        src, dst = graph.edge_src, graph.edge_dst
        consumer = np.arange(n)
        consumer[src[fused[src]]] = dst[fused[src]]
        root = consumer
        while True:  # pointer jumping: every op to the last op of its chain
            jumped = root[root]
            if np.array_equal(jumped, root):
                break
            root = jumped
        self.root = root
        self.roots = np.flatnonzero(root == np.arange(n))

        inside = fused[src]  # edges that stay inside a kernel
        traffic = graph.bytes_in + np.where(fused, 0.0, graph.bytes_out)
        traffic = traffic - np.bincount(dst[inside], graph.edge_bytes[inside], n)
        scale = graph.time_scale
        size = np.bincount(root, minlength=n)
        flops = np.bincount(root, graph.flops * scale, n)
        nbytes = np.bincount(root, np.maximum(traffic, 0.0) * scale, n)
        launches = np.where(size > 1, 1, graph.launches)
        self.seconds = np.zeros(n)
        r = self.roots
        self.seconds[r] = roofline_seconds(flops[r], nbytes[r], launches[r], devices, on=place[r])
        self.seconds[r] += devices.fusion_overhead_s * (size[r] - 1) ** 2
        self.priority = np.full(n, -np.inf)
        np.maximum.at(self.priority, root, prio)
        self.device = place

        outside = ~inside  # edges between kernels: their producers are roots
        self.edge_src = src[outside]
        self.edge_group = root[dst[outside]]
        self.edge_bytes = graph.edge_bytes[outside]
        self.pending = np.bincount(self.edge_group, minlength=n)


def _run(
    groups: _Groups, position: np.ndarray, devices: DeviceModel
) -> tuple[np.ndarray, np.ndarray, Transfers]:
    """The event loop: start and finish times (at each group's root) and the transfers."""
    n = len(groups.root)
    num_devices = devices.num_devices
    out_start, edges = csr(n, groups.edge_src, np.arange(len(groups.edge_src)))
    out_start = out_start.tolist()
    out_group = groups.edge_group[edges].tolist()
    out_bytes = groups.edge_bytes[edges].tolist()
    device = groups.device.tolist()
    seconds = groups.seconds.tolist()
    pending = groups.pending.tolist()
    neg_priority = (-groups.priority).tolist()
    pos = position.tolist()
    bandwidth = devices.link_bandwidth.tolist()
    latency = devices.link_latency.tolist()

    start, finish = [0.0] * n, [0.0] * n
    ready: list[list] = [[] for _ in range(num_devices)]
    for g in groups.roots[groups.pending[groups.roots] == 0].tolist():
        ready[device[g]].append((neg_priority[g], pos[g], g))
    for queue in ready:
        heapq.heapify(queue)
    idle = [True] * num_devices
    link_queue: dict[int, deque] = {}
    busy_links: set[int] = set()
    events: list[tuple] = []
    sent_src, sent_dst, sent_at, sent_bytes = [], [], [], []
    seq = 0

    def send(x: int, a: int, b: int, nbytes: float, t: float) -> None:
        nonlocal seq
        link = a * num_devices + b
        if link in busy_links:
            link_queue.setdefault(link, deque()).append((x, nbytes))
            return
        busy_links.add(link)
        arrive = t + latency[a][b] + nbytes / bandwidth[a][b]
        heapq.heappush(events, (arrive, seq, _ARRIVE, x, link, nbytes))
        seq += 1

    t = 0.0
    touched = set(range(num_devices))
    while True:
        for d in touched:
            if idle[d] and ready[d]:
                g = heapq.heappop(ready[d])[2]
                idle[d] = False
                start[g], finish[g] = t, t + seconds[g]
                heapq.heappush(events, (finish[g], seq, _FINISH, g, d, 0.0))
                seq += 1
        touched.clear()
        if not events:
            break
        t = events[0][0]
        while events and events[0][0] == t:
            _, _, kind, x, y, nbytes = heapq.heappop(events)
            if kind == _FINISH:  # kernel x done on device y
                idle[y] = True
                touched.add(y)
                remote: dict[int, float] = {}
                for e in range(out_start[x], out_start[x + 1]):
                    g = out_group[e]
                    d = device[g]
                    if d != y:
                        remote[d] = max(remote.get(d, 0.0), out_bytes[e])
                        continue
                    pending[g] -= 1
                    if not pending[g]:
                        heapq.heappush(ready[d], (neg_priority[g], pos[g], g))
                for d, size in remote.items():
                    send(x, y, d, size, t)
            else:  # x's tensor arrived over link y
                a, b = divmod(y, num_devices)
                sent_src.append(x)
                sent_dst.append(b)
                sent_at.append(t)
                sent_bytes.append(nbytes)
                busy_links.discard(y)
                if link_queue.get(y):
                    queued, size = link_queue[y].popleft()
                    send(queued, a, b, size, t)
                touched.add(b)
                for e in range(out_start[x], out_start[x + 1]):
                    g = out_group[e]
                    if device[g] == b:
                        pending[g] -= 1
                        if not pending[g]:
                            heapq.heappush(ready[b], (neg_priority[g], pos[g], g))
    transfers = Transfers(
        src=np.array(sent_src, dtype=np.int64),
        device=np.array(sent_dst, dtype=np.int64),
        arrival_s=np.array(sent_at, dtype=np.float64),
        nbytes=np.array(sent_bytes, dtype=np.float64),
    )
    return np.array(start), np.array(finish), transfers


def _peak_memory(
    groups: _Groups,
    graph: OpGraph,
    place: np.ndarray,
    finish: np.ndarray,
    transfers: Transfers,
    step: float,
    num_devices: int,
) -> np.ndarray:
    """Peak live bytes per device (see the module docstring for lifetimes)."""
    sent_src, sent_dst = transfers.src, transfers.device
    consumer_finish = finish[groups.edge_group]
    local = groups.device[groups.edge_group] == place[groups.edge_src]

    n = graph.num_ops
    release = np.full(n, -np.inf)
    np.maximum.at(release, groups.edge_src[local], consumer_finish[local])
    np.maximum.at(release, sent_src, transfers.arrival_s)
    release[np.isneginf(release)] = step  # read by nobody: live to the end
    producers = groups.roots[graph.alloc_bytes[groups.roots] > 0]

    # A copy lives until the last consumer of its tensor on its device finishes.
    key = groups.edge_src[~local] * num_devices + groups.device[groups.edge_group[~local]]
    keys, which = np.unique(key, return_inverse=True)
    copy_release = np.full(len(keys), -np.inf)
    np.maximum.at(copy_release, which, consumer_finish[~local])
    copy_free = copy_release[np.searchsorted(keys, sent_src * num_devices + sent_dst)]

    alloc = graph.alloc_bytes[producers]
    device = np.concatenate([place[producers], place[producers], sent_dst, sent_dst])
    time = np.concatenate([finish[producers], release[producers], transfers.arrival_s, copy_free])
    delta = np.concatenate([alloc, -alloc, transfers.nbytes, -transfers.nbytes])
    peak = np.zeros(num_devices)
    if not len(delta):
        return peak
    order = np.lexsort((delta < 0, time, device))  # by device, time, allocations first
    device, delta = device[order], delta[order]
    first = np.flatnonzero(np.r_[True, device[1:] != device[:-1]])
    live = np.cumsum(delta)
    live -= np.repeat(live[first] - delta[first], np.diff(np.r_[first, len(delta)]))
    peak[device[first]] = np.maximum.reduceat(live, first)
    return peak


def _placement(placement, n: int, num_devices: int) -> np.ndarray:
    if placement is None:
        return np.zeros(n, dtype=np.int64)
    place = _per_op(placement, n, "placement")
    if not np.all(place == np.round(place)):
        raise HlotuneError("placement must hold device numbers")
    place = place.astype(np.int64)
    if n and (place.min() < 0 or place.max() >= num_devices):
        raise HlotuneError(f"placement names devices outside 0..{num_devices - 1}")
    return place


def _per_op(values, n: int, what: str) -> np.ndarray:
    array = np.asarray(values)
    if array.shape != (n,):
        raise HlotuneError(f"{what} has shape {array.shape}, expected ({n},): one per op")
    if not np.issubdtype(array.dtype, np.number) and array.dtype != bool:
        raise HlotuneError(f"{what} must be numbers")
    if not np.all(np.isfinite(array)):
        raise HlotuneError(f"{what} must be finite")
    return array


def honoured_fusion(graph: OpGraph, place: np.ndarray, fuse: np.ndarray) -> np.ndarray:
    """The fuse bits the simulator honours: single consumer, one kernel each, same device."""
    n = graph.num_ops
    src, dst = graph.edge_src, graph.edge_dst
    single = np.bincount(src, minlength=n) == 1
    consumer = np.full(n, -1)
    consumer[src[single[src]]] = dst[single[src]]
    ok = fuse & single & (graph.launches == 1)
    candidates = np.flatnonzero(ok)
    c = consumer[candidates]
    ok[candidates] = (graph.launches[c] == 1) & (place[c] == place[candidates])
    return ok
