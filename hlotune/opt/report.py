"""GO's results table: the policy against the baselines, per graph, on SIMULATED step times.

Every number here comes from hlotune.opt.simulator on a modelled machine; none is measured.

The methods and what they mean for each task (a Problem's tasks; the CLI optimises one):

    method   place                 schedule (on METIS placement)   fuse (on METIS placement)
    policy   the search's best     the search's best               the search's best
    human    layer-wise split      HEFT priorities                 XLA-like greedy fusion
    metis    METIS partition       -                               -
    hdp      small HDP             -                               -
    random   uniform devices       uniform priorities              each bit with probability 1/2

When placement is optimised together with scheduling or fusion, each placement baseline is
followed by HEFT and greedy fusion on it (random by random ones). METIS and HDP are placers:
without placement they do not apply, and their entries are None.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hlotune.opt import baselines
from hlotune.opt.ppo import Problem, SearchResult

METHODS = ("policy", "human", "metis", "hdp", "random")
BASELINES = METHODS[1:]
GEOMEAN_OVER = ("human", "metis", "hdp")
TITLE = "SIMULATED step times (hlotune.opt.simulator on a modelled machine; not measurements)"


@dataclass(frozen=True)
class Comparison:
    """One graph's row: simulated step times by method, None where a baseline does not apply."""

    graph: str
    devices: int
    tasks: tuple[str, ...]
    step_time_s: dict[str, float | None]  # METHODS -> simulated seconds
    oom: tuple[str, ...]  # methods whose assignment ran out of device memory
    search_s: float  # the policy's: any training on this graph, then the sampling

    def speedup(self, method: str) -> float | None:
        """How many times faster the policy's step is than `method`'s (simulated)."""
        other = self.step_time_s[method]
        return None if other is None else other / self.step_time_s["policy"]

    def to_json(self) -> dict:
        return {
            "graph": self.graph,
            "devices": self.devices,
            "tasks": list(self.tasks),
            "simulated": True,
            "results": dict(self.step_time_s),
            "speedups": {m: self.speedup(m) for m in BASELINES},
            "oom": list(self.oom),
            "search_s": self.search_s,
        }


def compare(problem: Problem, found: SearchResult, search_s: float, seed: int = 0) -> Comparison:
    """Simulate every baseline on `problem` and set the policy's `found` assignment beside them."""
    results = {"policy": found.result}
    for method in BASELINES:
        assignment = baseline_assignment(problem, method, seed)
        results[method] = None if assignment is None else problem.simulate(**assignment)
    return Comparison(
        graph=problem.name,
        devices=problem.devices.num_devices,
        tasks=problem.tasks,
        step_time_s={m: None if r is None else r.step_time_s for m, r in results.items()},
        oom=tuple(m for m, r in results.items() if r is not None and r.oom),
        search_s=search_s,
    )


def baseline_assignment(problem: Problem, method: str, seed: int = 0) -> dict | None:
    """simulate's keyword arguments for a baseline (see the module docstring), None if it does
    not apply to the problem's tasks."""
    graph, devices, tasks = problem.graph, problem.devices, problem.tasks
    rng = np.random.default_rng(seed)
    if "place" in tasks:
        placement = {
            "human": lambda: baselines.expert_placement(graph, devices),
            "metis": lambda: baselines.metis_placement(graph, devices, seed=seed),
            "hdp": lambda: baselines.hdp_placement(graph, devices, seed=seed),
            "random": lambda: baselines.random_placement(graph, devices, seed=seed),
        }[method]()
    elif method in ("human", "random"):
        placement = problem.fixed_placement
    else:
        return None
    heuristic = method != "random"
    priority = fuse = None
    if "schedule" in tasks:
        priority = (baselines.heft_priorities(graph, devices, placement) if heuristic
                    else rng.random(graph.num_ops))
    if "fuse" in tasks:
        fuse = (baselines.greedy_fusion(graph, placement) if heuristic
                else rng.random(graph.num_ops) < 0.5)
    return {"placement": placement, "priority": priority, "fuse": fuse}


def geomean_speedups(comparisons: list[Comparison]) -> dict[str, float]:
    """The policy's geometric-mean speedup over each of GEOMEAN_OVER, on the rows it applies to."""
    means = {}
    for method in GEOMEAN_OVER:
        speedups = [s for c in comparisons if (s := c.speedup(method)) is not None]
        if speedups:
            means[method] = math.exp(sum(map(math.log, speedups)) / len(speedups))
    return means


def format_table(comparisons: list[Comparison]) -> str:
    header = ("graph", "N", "task", *(f"sim {m} ms" for m in METHODS),
              *(f"x vs {m}" for m in BASELINES), "search s")
    rows = [header]
    for c in comparisons:
        times = [_seconds(c.step_time_s[m], m in c.oom) for m in METHODS]
        speedups = [_times(c.speedup(m)) for m in BASELINES]
        rows.append((c.graph, str(c.devices), "+".join(c.tasks), *times, *speedups,
                     f"{c.search_s:.1f}"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.rjust(w) for cell, w in zip(row, widths)) for row in rows]
    means = geomean_speedups(comparisons)
    footer = ", ".join(f"{_times(value)} over {m}" for m, value in means.items())
    notes = [f"geomean speedup of the policy (simulated): {footer}"] if footer else []
    if any(c.oom for c in comparisons):
        notes.append("! out of device memory (the simulator's verdict)")
    notes.append("human = layer-wise split (place), HEFT (schedule), greedy fusion (fuse); "
                 "- = does not apply")
    return "\n".join([TITLE, lines[0], "-" * len(lines[0]), *lines[1:], *notes])


def _seconds(value: float | None, oom: bool) -> str:
    return "-" if value is None else f"{value * 1e3:.4g}" + ("!" if oom else "")


def _times(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"
