"""Training GO's policy with PPO on the simulator, and searching with it.

A Problem is one graph on one machine with the tasks to optimise. An episode is one full
assignment (as in GraphOptEnv), its reward hlotune.opt.simulator.reward: -log(step time /
the problem's default step time), less OOM_PENALTY when a device runs out of memory.

One PPO iteration takes the next problem (round robin over the set, so one policy learns many
graphs; a set of one is fine-tuning), samples K assignments, and takes a few epochs of gradient
steps on the clipped objective. With a curriculum the round robin starts on the smallest
quarter of the problems and takes in larger graphs until, halfway through, it covers them all.
The advantage is normalised per graph (each batch is one problem's): the reward less the
batch's mean ("graph", the default) or less the value head's estimate for the graph ("value",
which lags behind the policy on a set of many graphs), divided by the batch's reward spread so
one learning rate suits graphs whose rewards vary by 1% or by 50%; the value head is trained
either way. Ratios are clipped per op: an assignment's probability is a product over thousands
of ops, whose joint ratio would leave the clip range at the first step.

Search samples K assignments (and the greedy one) and keeps the fastest by the simulator, then
may hill-climb from it for a time budget (hlotune.opt.local_search).
Everything is seeded: the same policy, problems and seed give the same results on the same
number of torch threads (time budgets aside: they end a search or a training where the clock
says).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from hlotune.errors import HlotuneError
from hlotune.lazy import renamed_attributes
from hlotune.opt.baselines import metis_placement
from hlotune.opt.costs import OpGraph
from hlotune.opt.device import DeviceModel
from hlotune.opt.local_search import hill_climb
from hlotune.opt.policy import GOPolicy, GraphTensors, task_set
from hlotune.opt.simulator import SimResult, reward, simulate

# The advantage's scale floor: reward differences below 0.1% of a step time are noise to the
# policy, so a batch that varies less is not blown up to unit spread.
_REWARD_RESOLUTION = 1e-3


@dataclass(frozen=True)
class Problem:
    """A graph, a machine and the tasks to optimise. When placement is not among them, ops run
    on a fixed METIS placement (scheduling and fusion only matter between devices, and this is
    the placement a compiler without a placer would use); the reward's reference is the step
    with the simulator's defaults for the optimised tasks."""

    name: str
    graph: OpGraph
    devices: DeviceModel
    tasks: tuple[str, ...]
    fixed_placement: np.ndarray | None
    default_step_time_s: float
    inputs: GraphTensors

    @classmethod
    def make(cls, graph: OpGraph, devices: DeviceModel, tasks, name: str = "") -> Problem:
        tasks = task_set(tasks)
        fixed = None if "place" in tasks else metis_placement(graph, devices)
        default = simulate(graph, devices, fixed).step_time_s
        if not default > 0:
            raise HlotuneError(f"{name or graph.name}: the graph does no work to optimise")
        return cls(name or graph.name, graph, devices, tasks, fixed, default,
                   GraphTensors.of(graph))

    def simulate(self, placement=None, priority=None, fuse=None) -> SimResult:
        """One step; the fixed placement applies unless a placement is given."""
        if placement is None:
            placement = self.fixed_placement
        return simulate(self.graph, self.devices, placement, priority, fuse)

    def reward(self, result: SimResult) -> float:
        return reward(result, self.default_step_time_s)


ADVANTAGES = ("graph", "value")


@dataclass(frozen=True)
class PPOSettings:
    iterations: int = 100  # each on one problem, round robin
    samples: int = 16  # assignments per iteration
    epochs: int = 4  # gradient steps per batch
    learning_rate: float = 1e-3
    clip: float = 0.2
    value_weight: float = 0.5
    entropy_weight: float = 0.01
    max_grad_norm: float = 1.0
    seed: int = 0
    advantage: str = "graph"  # the baseline: "graph" (the batch's mean) or "value" (the head's)
    curriculum: bool = False  # small graphs first (see the module docstring)

    def __post_init__(self) -> None:
        if self.advantage not in ADVANTAGES:
            raise HlotuneError(f"advantage must be one of {', '.join(ADVANTAGES)}, "
                               f"got {self.advantage!r}")


@dataclass(frozen=True)
class IterationLog:
    iteration: int
    problem: str
    mean_reward: float  # of the sampled assignments
    best_reward: float
    best_step_time_s: float  # simulated


def train(
    policy: GOPolicy,
    problems: Sequence[Problem],
    config: PPOSettings = PPOSettings(),
    progress: Callable[[IterationLog], None] | None = None,
    budget_s: float | None = None,
) -> list[IterationLog]:
    """PPO on `problems` in round robin; `progress` sees each iteration's log. With `budget_s`,
    training stops early once that many seconds have passed (after one iteration at least)."""
    if not problems:
        raise HlotuneError("PPO needs at least one problem to train on")
    if config.samples < 2:
        raise HlotuneError("PPO needs at least 2 samples per iteration to compare them")
    generator = torch.Generator().manual_seed(config.seed)
    optimizer = torch.optim.Adam(policy.parameters(), lr=config.learning_rate)
    logs = []
    deadline = None if budget_s is None else time.perf_counter() + budget_s
    schedule = _schedule(problems, config)
    for iteration in range(config.iterations):
        if deadline is not None and logs and time.perf_counter() >= deadline:
            break
        problem = problems[schedule(iteration)]
        with torch.no_grad():
            out = policy(problem.inputs, problem.devices, problem.tasks)
            batch = out.actions.sample(config.samples, generator)
            old_log_prob = out.actions.log_prob(batch)
        results = [problem.simulate(**batch.arrays(k)) for k in range(config.samples)]
        rewards = torch.tensor([problem.reward(r) for r in results])
        baseline = rewards.mean() if config.advantage == "graph" else out.value
        advantage = (rewards - baseline) / (rewards.std() + _REWARD_RESOLUTION)
        for _ in range(config.epochs):
            out = policy(problem.inputs, problem.devices, problem.tasks)
            ratio = (out.actions.log_prob(batch) - old_log_prob).exp()  # (K, n)
            clipped = ratio.clamp(1 - config.clip, 1 + config.clip)
            gain = torch.minimum(ratio * advantage[:, None], clipped * advantage[:, None])
            value_loss = (out.value - rewards).pow(2).mean()
            loss = (-gain.mean() + config.value_weight * value_loss
                    - config.entropy_weight * out.actions.entropy().mean())
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), config.max_grad_norm)
            optimizer.step()
        best = int(rewards.argmax())
        log = IterationLog(iteration, problem.name, float(rewards.mean()), float(rewards[best]),
                           results[best].step_time_s)
        logs.append(log)
        if progress is not None:
            progress(log)
    return logs


def _schedule(problems: Sequence[Problem], config: PPOSettings) -> Callable[[int], int]:
    """Iteration -> index of its problem: round robin, or the curriculum's."""
    if not config.curriculum:
        return lambda iteration: iteration % len(problems)
    by_size = sorted(range(len(problems)), key=lambda i: problems[i].graph.num_ops)
    ramp = max(config.iterations // 2, 1)

    def pick(iteration: int) -> int:
        share = min(1.0, 0.25 + 0.75 * iteration / ramp)
        pool = max(1, math.ceil(share * len(problems)))
        return by_size[iteration % pool]

    return pick


@dataclass(frozen=True)
class SearchResult:
    """The best assignment found; arrays are None for tasks not optimised."""

    placement: np.ndarray | None
    priority: np.ndarray | None
    fuse: np.ndarray | None
    result: SimResult  # its simulated step
    reward: float
    samples: int  # assignments simulated (sampled, greedy and hill-climbing moves)
    search_s: float  # wall time of the search (not of any training before it)


def search(policy: GOPolicy, problem: Problem, samples: int = 64, seed: int = 0,
           budget_s: float = 0.0) -> SearchResult:
    """The fastest of `samples` sampled assignments and the greedy one, by the simulator; then,
    until `budget_s` seconds from the start have passed, policy-guided hill climbing from it
    (hlotune.opt.local_search)."""
    start = time.perf_counter()
    with torch.no_grad():
        actions = policy(problem.inputs, problem.devices, problem.tasks).actions
        candidates = [actions.greedy()]
        if samples > 0:
            candidates.append(actions.sample(samples, torch.Generator().manual_seed(seed)))
    best = None
    for batch in candidates:
        for k in range(len(batch)):
            arrays = batch.arrays(k)
            value = problem.reward(problem.simulate(**arrays))
            if best is None or value > best[0]:
                best = (value, arrays)
    value, arrays = best
    moves = 0
    climb_s = budget_s - (time.perf_counter() - start)
    if climb_s > 0:
        climb = hill_climb(problem, actions, arrays, value, budget_s=climb_s, seed=seed)
        value, arrays, moves = climb.reward, climb.arrays, climb.moves
    return SearchResult(**arrays, result=problem.simulate(**arrays), reward=value,
                        samples=samples + 1 + moves, search_s=time.perf_counter() - start)


__getattr__ = renamed_attributes(__name__, {"PPOConfig": "PPOSettings"})  # for one release
