"""Policy-guided local search: improve the best sampled assignment one placement group at a time.

Sampled assignments are independent draws from the policy, so a search of K samples explores
K points and learns nothing from them. The simulator prices a step in milliseconds, so a hill
climb after the sampling is cheap: each move takes one placement group (a METIS group of the
policy's, see hlotune.opt.policy) and redraws its decisions (its device, and its ops'
priorities and fuse bits, for the tasks enabled) from the policy's distribution; the move is
kept when the simulated step is no slower. A third of the device draws follow the policy, a
third join a neighbouring group's device (chosen by the tensor bytes between the two groups:
the moves that cut transfers, as Kernighan-Lin refines a partition) and a third are uniform,
so that a confident policy still explores. HDP (hlotune.opt.baselines) searches its groups with REINFORCE;
this search gets a time budget, so the two compare at equal search time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from hlotune.opt.policy import ActionDistribution

_DRAWS = ("policy", "neighbour", "uniform")  # where a move's device comes from, equally often


@dataclass(frozen=True)
class Climb:
    """What a hill climb found: simulate's keyword arguments, their step, and its effort."""

    arrays: dict[str, np.ndarray | None]
    reward: float
    moves: int  # moves simulated
    kept: int  # moves kept (no slower than the assignment before them)


def hill_climb(problem, actions: ActionDistribution, arrays: dict, reward: float, *,
               budget_s: float, max_moves: int | None = None, seed: int = 0) -> Climb:
    """Moves from `arrays` (with its `reward`) until `budget_s` seconds or `max_moves` pass.

    `problem` is a hlotune.opt.ppo.Problem (not imported: ppo imports this module)."""
    rng = np.random.default_rng(seed)
    generator = torch.Generator().manual_seed(seed)
    group = actions.group.numpy()
    members = [np.flatnonzero(group == g) for g in range(int(group.max(initial=-1)) + 1)]
    movable = [g for g, ops in enumerate(members) if len(ops)]  # METIS may leave a part empty
    probs = None if actions.place_logits is None else actions.place_logits.softmax(-1).numpy()
    links = _group_bytes(problem.graph, group, len(members))
    deadline = time.perf_counter() + budget_s
    current = {k: None if v is None else v.copy() for k, v in arrays.items()}
    moves = kept = 0
    while movable and time.perf_counter() < deadline and (max_moves is None or moves < max_moves):
        g = movable[rng.integers(len(movable))]
        candidate = _move(current, members, g, probs, links, actions, rng, generator)
        value = problem.reward(problem.simulate(**candidate))
        moves += 1
        if value >= reward:
            current, reward, kept = candidate, value, kept + 1
    return Climb(current, reward, moves, kept)


def _move(arrays: dict, members: list[np.ndarray], g: int, probs: np.ndarray | None,
          links: np.ndarray, actions: ActionDistribution, rng: np.random.Generator,
          generator: torch.Generator) -> dict:
    """A copy of `arrays` with group g's decisions redrawn."""
    out = dict(arrays)
    ops = members[g]
    if probs is not None:
        placement = arrays["placement"].copy()
        now = int(placement[ops[0]])
        draw = _DRAWS[rng.integers(len(_DRAWS))]
        if draw == "neighbour" and links[g].sum() > 0:
            neighbour = rng.choice(len(members), p=links[g] / links[g].sum())
            weights = np.eye(probs.shape[1])[placement[members[neighbour][0]]]
        else:
            weights = probs[g] if draw == "policy" else np.ones(probs.shape[1])
        placement[ops] = _other_device(weights, now, rng)
        out["placement"] = placement
    index = torch.from_numpy(ops)
    if actions.priority_mean is not None:
        mean = actions.priority_mean[index]
        noise = torch.randn(mean.shape, generator=generator)
        priority = arrays["priority"].copy()
        priority[ops] = (mean + actions.priority_log_std.exp() * noise).double().numpy()
        out["priority"] = priority
    if actions.fuse_logits is not None:
        p_fuse = actions.fuse_logits[index].sigmoid()
        fuse = arrays["fuse"].copy()
        fuse[ops] = (torch.rand(p_fuse.shape, generator=generator) < p_fuse).numpy()
        out["fuse"] = fuse
    return out


def _other_device(weights: np.ndarray, now: int, rng: np.random.Generator) -> int:
    """A device other than `now` (keeping it would only re-run the same step), drawn in
    proportion to `weights`, uniformly when they leave no other device."""
    if len(weights) == 1:
        return now
    p = weights.astype(np.float64).copy()
    p[now] = 0.0
    p = p if p.sum() > 0 else np.where(np.arange(len(p)) == now, 0.0, 1.0)
    return int(rng.choice(len(p), p=p / p.sum()))


def _group_bytes(graph, group: np.ndarray, num_groups: int) -> np.ndarray:
    """(G, G): tensor bytes on the edges between each pair of groups (0 within a group)."""
    a, b = group[graph.edge_src], group[graph.edge_dst]
    links = np.zeros((num_groups, num_groups))
    np.add.at(links, (a, b), graph.edge_bytes)
    links += links.T
    np.fill_diagonal(links, 0.0)
    return links
