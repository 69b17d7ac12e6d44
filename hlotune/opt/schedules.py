"""Orders of a real entry computation to hand XLA:CPU (hlotune.compiler.xla.schedule imposes
them): the baselines and GO's policy.

- depth-first: each instruction right after the operands it needs, operands first in the order
  they are used (a post-order from the ROOT), so a value is consumed soon after it is made;
- memory-greedy: a list schedule that runs, of the ready instructions, the one leaving the
  fewest live bytes (its new buffer less the buffers whose last reader it is), ties in XLA's
  order: the classic greedy, as XLA's own list scheduler is;
- policy: GO's scheduling head gives each op of the OpGraph a priority, and the list schedule
  runs the ready instruction of highest priority;
- moves: one instruction moved to another place it may run, for a search that lets XLA's
  buffer assignment judge each move (hlotune.opt.measured_schedule).

Live bytes are estimated from the instructions' shapes: views (bitcast, tuple, get-tuple-element)
keep their operands' buffers alive and allocate none; parameters, constants and the ROOT's
buffers are not temporaries. XLA's buffer assignment, run by compiling the order, gives the
real peak.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from hlotune.hlo.graph import HloGraph
from hlotune.opt.costs import OpGraph, op_graph

if TYPE_CHECKING:
    from hlotune.opt.policy import GOPolicy

# Instructions whose output is no temporary buffer: arguments and constants have their own.
_NOT_TEMPORARY = frozenset({"parameter", "constant"})


class Entry(Protocol):
    """An entry computation's instructions in XLA's order (hlotune.compiler.xla.schedule's
    EntrySchedule is one)."""

    names: tuple[str, ...]
    opcodes: tuple[str, ...]
    after: tuple[tuple[int, ...], ...]  # per instruction, what it must follow (operands first)
    root: int


@dataclass(frozen=True)
class EntryOps:
    """An entry computation as orders see it: its instructions, the bytes of the temporary
    buffer each allocates, and its op graph (what GO's policy reads)."""

    entry: Entry
    nbytes: np.ndarray  # (n,) per instruction: bytes of its new temporary buffer (0: none)
    buffers: tuple[frozenset[int], ...]  # per instruction, the buffers its value lives in
    graph: OpGraph
    op_index: np.ndarray  # (n,) per instruction: its op in `graph`

    @classmethod
    def of(cls, entry: Entry, hlo: HloGraph) -> EntryOps:
        """From the entry and the module's graph (which gives shapes and the op graph)."""
        graph = op_graph(hlo)
        op_of = {hlo.instructions[node].name: op for op, node in enumerate(graph.hlo_node.tolist())}
        op_index = np.array([op_of[name] for name in entry.names], dtype=np.int64)
        nbytes = graph.alloc_bytes[op_index].copy()
        buffers = _buffers(entry, nbytes)
        nbytes[[op in _NOT_TEMPORARY for op in entry.opcodes]] = 0.0
        nbytes[sorted(buffers[entry.root])] = 0.0  # outputs: not temporaries
        return cls(entry, nbytes, buffers, graph, op_index)


def depth_first(ops: EntryOps) -> tuple[str, ...]:
    """A post-order from the ROOT, operands in the order the instruction names them
    (instructions the ROOT does not reach first, in XLA's order)."""
    entry = ops.entry
    done = [False] * len(entry.names)
    order: list[int] = []
    for start in [*_unreached(entry), entry.root]:
        stack = [(start, iter(entry.after[start]))]
        while stack:
            node, operands = stack[-1]
            operand = next((o for o in operands if not done[o]), None)
            if operand is not None:
                stack.append((operand, iter(entry.after[operand])))
            else:
                stack.pop()
                if not done[node]:
                    done[node] = True
                    order.append(node)
    return tuple(entry.names[i] for i in order)


def memory_greedy(ops: EntryOps) -> tuple[str, ...]:
    """Of the ready instructions, the one leaving the fewest live bytes (ties: XLA's order)."""
    live = _Liveness(ops)
    return _list_schedule(ops.entry, lambda ready: min(ready, key=lambda i: (live.change(i), i)),
                          live.run)


def by_priority(entry: Entry, priority: np.ndarray) -> tuple[str, ...]:
    """Of the ready instructions, the one of highest priority (ties: XLA's order)."""
    return _list_schedule(entry, lambda ready: min(ready, key=lambda i: (-priority[i], i)))


def policy_orders(policy: GOPolicy, ops: EntryOps, samples: int, seed: int) -> list[tuple[str, ...]]:
    """The orders of the policy's greedy priorities and of `samples` sampled ones."""
    import torch

    from hlotune.opt.device import DeviceModel
    from hlotune.opt.policy import GraphTensors

    with torch.no_grad():
        actions = policy(GraphTensors.of(ops.graph), DeviceModel.uniform(1), ["schedule"]).actions
        batches = [actions.greedy(), actions.sample(samples, torch.Generator().manual_seed(seed))]
    priorities = [batch.priority[k].double().numpy() for batch in batches for k in range(len(batch))]
    return [by_priority(ops.entry, p[ops.op_index]) for p in priorities]


class Moves:
    """One-instruction moves of an entry order. An instruction may run anywhere after what it
    must follow and before its users; it is drawn in proportion to the temporary bytes it
    allocates and reads (directly or through views), since only moving those can change a peak.
    """

    def __init__(self, ops: EntryOps) -> None:
        entry = ops.entry
        self.entry = entry
        self.users: list[list[int]] = [[] for _ in entry.names]
        for user, operands in enumerate(entry.after):
            for operand in operands:
                self.users[operand].append(user)
        reads = _Liveness(ops).reads
        weights = np.array([ops.nbytes[i] + sum(ops.nbytes[b] for b in reads[i])
                            for i in range(len(entry.names))], dtype=np.float64)
        weights[entry.root] = 0.0
        self.weights = weights / weights.sum() if weights.sum() > 0 else None

    def move(self, order: tuple[str, ...], rng: np.random.Generator) -> tuple[str, ...] | None:
        """`order` with one drawn instruction at another valid place (None: the drawn one has
        no other place, or nothing allocates)."""
        if self.weights is None:
            return None
        indices = list(self.entry.check(order))
        position = {index: place for place, index in enumerate(indices)}
        moved = int(rng.choice(len(self.weights), p=self.weights))
        low = max((position[i] + 1 for i in self.entry.after[moved]), default=0)
        high = min((position[i] - 1 for i in self.users[moved]), default=len(indices) - 2)
        places = [place for place in range(low, high + 1) if place != position[moved]]
        if not places:
            return None
        indices.remove(moved)
        indices.insert(int(rng.choice(places)), moved)
        return tuple(self.entry.names[i] for i in indices)


def _list_schedule(entry: Entry, choose: Callable[[list[int]], int],
                   ran: Callable[[int], None] = lambda index: None) -> tuple[str, ...]:
    """Run `choose(ready)` until every instruction ran; the ROOT waits until last."""
    n = len(entry.names)
    waiting = [len(operands) for operands in entry.after]
    users: list[list[int]] = [[] for _ in range(n)]
    for user, operands in enumerate(entry.after):
        for operand in operands:
            users[operand].append(user)
    ready = [i for i in range(n) if not waiting[i] and i != entry.root]
    order: list[int] = []
    while ready:
        chosen = choose(ready)
        ready.remove(chosen)
        order.append(chosen)
        ran(chosen)
        for user in users[chosen]:
            waiting[user] -= 1
            if not waiting[user] and user != entry.root:
                ready.append(user)
    return tuple(entry.names[i] for i in [*order, entry.root])


class _Liveness:
    """Live temporary bytes as a list schedule runs: which buffers each instruction reads
    (through views), and how many readers each buffer still waits for."""

    def __init__(self, ops: EntryOps) -> None:
        self.nbytes = ops.nbytes
        self.reads = [frozenset().union(*(ops.buffers[o] for o in operands))
                      for operands in ops.entry.after]
        self.readers = np.zeros(len(self.nbytes), dtype=np.int64)
        for read in self.reads:
            self.readers[list(read)] += 1

    def change(self, index: int) -> float:
        """Live bytes after running `index`, less before."""
        freed = sum(self.nbytes[b] for b in self.reads[index] if self.readers[b] == 1)
        return float(self.nbytes[index] - freed)

    def run(self, index: int) -> None:
        for buffer in self.reads[index]:
            self.readers[buffer] -= 1


def _buffers(entry: Entry, nbytes: np.ndarray) -> tuple[frozenset[int], ...]:
    """Per instruction, the buffers its value lives in: its own, or (a view: no bytes of its
    own) those of its operands, which come before it in XLA's order."""
    buffers: list[frozenset[int]] = []
    for index, operands in enumerate(entry.after):
        own = nbytes[index] > 0 or entry.opcodes[index] in _NOT_TEMPORARY
        buffers.append(frozenset({index}) if own else frozenset().union(*(buffers[o] for o in operands)))
    return tuple(buffers)


def _unreached(entry: Entry) -> list[int]:
    """Instructions the ROOT does not depend on, in XLA's order."""
    reached, pending = {entry.root}, [entry.root]
    while pending:
        for operand in entry.after[pending.pop()]:
            if operand not in reached:
                reached.add(operand)
                pending.append(operand)
    return [i for i in range(len(entry.names)) if i not in reached]
