"""`hlotune opt fuse PROGRAM --measure`: fusion decisions for a real program, MEASURED.

(A stage above opt, as a real compile is: hlotune.cli hands `run` to opt's parser.)

XTAT's loop on XLA:CPU's own fused module (compiler/spaces/fusion_space.py): a policy proposes
decisions, a cost model ranks the proposals, and the best few are compiled and measured in one
batch beside XLA's own fusion and the baselines, each given the same number of measurements:

- policy: the GO policy's fuse bits on the module's kernel graph (one op per top-level
  instruction, as opt/costs.py builds it). A kernel whose bit says "fuse with the consumer"
  merges into its consumers where that is a valid fusion; one whose bit says "do not" splits
  at its heaviest instruction (XLA fused more than the policy wants). Elsewhere XLA's decision
  stands. The proposals are ranked by the module roofline (hlo/costs.module_seconds) and
  the top `measured` are measured.
- greedy: every kernel that can merge into its consumers does (producer-consumer fusion
  pushed past XLA's own limits).
- random: `measured` configs drawn from the fusion space.
- xla: the default, whose replicas give the batch's noise floor.

A method's result is its fastest measured config; outputs are checked against the default by
the measuring worker, and a config that fails or computes something else counts as failed.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.configs.kernel_config import MERGE, SPLIT
from hlotune.compiler.measurement.measure import MeasureSettings, measure
from hlotune.compiler.spaces.space import SearchSpace
from hlotune.errors import HlotuneError
from hlotune.progress import note

if TYPE_CHECKING:
    from hlotune.opt.costs import OpGraph

@dataclass(frozen=True)
class FusionProblem:
    """A program's fused module, its fusion decisions and its kernel graph."""

    program: str
    module: str
    space: SearchSpace
    choices: dict[str, tuple[str, ...]]
    kernel_of_op: dict[int, str]  # kernel-graph op -> kernel key, for kernels with choices
    graph: OpGraph  # the module's kernel graph, one op per top-level instruction

    @classmethod
    def load(cls, program: str) -> FusionProblem:
        from hlotune.compiler.spaces.fusion_features import FusionSites
        from hlotune.compiler.spaces.kernel_space import program_module
        from hlotune.compiler.configs.layouts import LayoutSpace
        from hlotune.opt.costs import op_graph
        from hlotune.programs import load_program

        module = program_module(LayoutSpace(load_program(program, abstract=True)))
        sites = FusionSites(module)  # the kernels with choices, as nodes of the module's graph
        choices, graph = sites.choices, op_graph(sites.graph)
        key_of_node = dict(zip(sites.node_config_ids.tolist(), sites.keys))
        kernel_of_op = {op: key_of_node[node] for op, node in enumerate(graph.hlo_node.tolist())
                        if node in key_of_node}
        space = SearchSpace("fusion", fusion=choices)
        return cls(program, module, space, choices, kernel_of_op, graph)

    def decisions(self, fuse: np.ndarray) -> CompileConfig:
        """The config a fuse bit per kernel-graph op asks for (see the module docstring)."""
        genome = {}
        for op, key in self.kernel_of_op.items():
            values = self.choices[key]
            wanted = MERGE if fuse[op] else next((v for v in values if v.startswith(SPLIT)), None)
            if wanted in values:
                genome[f"fusion:{key}"] = wanted
        return self.space.config(genome)

    def greedy(self) -> CompileConfig:
        return self.space.config({f"fusion:{key}": MERGE for key, values in self.choices.items()
                                  if MERGE in values})


@dataclass(frozen=True)
class MethodResult:
    configs: int  # measured
    failed: int
    best: CompileConfig | None
    ms: float | None

    def to_json(self, default_ms: float) -> dict:
        return {"ms": self.ms, "speedup": None if self.ms is None else default_ms / self.ms,
                "measured": self.configs, "failed": self.failed,
                "config": None if self.best is None else self.best.to_dict()}


@dataclass(frozen=True)
class FusionComparison:
    program: str
    default_ms: float
    noise: float
    results: dict[str, MethodResult]
    proposals: int  # distinct policy proposals ranked by the model
    search_s: float

    def to_json(self) -> dict:
        return {"program": self.program, "measured_on": "this machine", "simulated": False,
                "noise": self.noise, "proposals": self.proposals, "search_s": self.search_s,
                "results": {"xla": {"ms": self.default_ms, "speedup": 1.0},
                            **{m: r.to_json(self.default_ms) for m, r in self.results.items()}}}


def policy_proposals(problem: FusionProblem, policy, samples: int, seed: int) -> list[CompileConfig]:
    """Distinct configs of the policy's greedy and `samples` sampled fuse assignments."""
    import torch

    from hlotune.opt.device import DeviceModel
    from hlotune.opt.ppo import Problem

    opt = Problem.make(problem.graph, DeviceModel.uniform(1), ["fuse"], name=problem.program)
    with torch.no_grad():
        actions = policy(opt.inputs, opt.devices, opt.tasks).actions
        batches = [actions.greedy(), actions.sample(samples, torch.Generator().manual_seed(seed))]
    configs = [problem.decisions(batch.fuse[k].numpy()) for batch in batches for k in range(len(batch))]
    return [c for c in dict.fromkeys(configs) if not c.is_default]


def ranked(problem: FusionProblem, configs: list[CompileConfig]) -> list[CompileConfig]:
    """`configs`, the module roofline's favourite first."""
    from hlotune.tuning.models.roofline import ModuleRoofline

    scores = ModuleRoofline(problem.module).predict(configs)
    return [configs[i] for i in np.argsort(scores, kind="stable") if np.isfinite(scores[i])]


def compare_fusion(problem: FusionProblem, policy, *, measured: int = 4, samples: int = 64,
                   seed: int = 0, settings: MeasureSettings = MeasureSettings()) -> FusionComparison:
    """Measure the policy's `measured` best-ranked proposals, the greedy merge and `measured`
    random configs in one batch beside XLA's default."""
    if measured < 1:
        raise HlotuneError(f"--per-method must be at least 1, got {measured}")
    start = time.perf_counter()
    proposals = policy_proposals(problem, policy, samples, seed)
    chosen = method_configs(problem, proposals, measured=measured, draws=measured, seed=seed)
    search_s = time.perf_counter() - start
    batch = measure(problem.program, [c for configs in chosen.values() for c in configs], settings)
    by_config = {m.config: m for m in batch.measurements}
    results = {method: best_of(configs, by_config) for method, configs in chosen.items()}
    return FusionComparison(problem.program, batch.default_ns / 1e6, batch.noise_floor, results,
                            len(proposals), search_s)


def method_configs(problem: FusionProblem, proposals: list[CompileConfig], *, measured: int,
                   draws: int, seed: int) -> dict[str, list[CompileConfig]]:
    """What each method measures: the policy's `measured` proposals the roofline ranks first,
    the greedy merge, and `draws` random configs (a longer draw begins with a shorter one)."""
    return {"policy": ranked(problem, proposals)[:measured], "greedy": [problem.greedy()],
            "random": random_configs(problem.space, draws, random.Random(seed))}


def random_configs(space: SearchSpace, count: int, rng: random.Random) -> list[CompileConfig]:
    """`count` distinct non-default configs, each gene moved with probability 1/4."""
    configs: dict[CompileConfig, None] = {}
    for _ in range(100 * count):
        config = space.random_config(rng)
        if not config.is_default:
            configs[config] = None
        if len(configs) == count:
            break
    return list(configs)


def best_of(configs: list[CompileConfig], measured: dict) -> MethodResult:
    healthy = [measured[c] for c in configs if c in measured and measured[c].ok]
    best = min(healthy, key=lambda m: m.median_ns, default=None)
    return MethodResult(len(configs), len(configs) - len(healthy),
                        None if best is None else best.config,
                        None if best is None else best.median_ns / 1e6)


def format_comparison(comparison: FusionComparison) -> str:
    """A table of the methods' MEASURED ms and speedups over XLA's fusion."""
    lines = [f"{comparison.program}: XLA's fusion {comparison.default_ms:.3f} ms "
             f"(noise floor {comparison.noise:.1%}), {comparison.proposals} policy proposals",
             f"  {'method':<8} {'ms':>9} {'speedup':>8} {'measured':>9} {'failed':>7}"]
    for method, result in comparison.results.items():
        ms = "-" if result.ms is None else f"{result.ms:.3f}"
        speedup = "-" if result.ms is None else f"{comparison.default_ms / result.ms:.3f}x"
        lines.append(f"  {method:<8} {ms:>9} {speedup:>8} {result.configs:>9} {result.failed:>7}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """The `opt fuse --measure` handler."""
    from hlotune.opt.measured_schedule import measured_policy

    policy = measured_policy(args, "fuse")
    problem = FusionProblem.load(args.graph)
    note(f"{args.graph}: {len(problem.choices)} kernels to split or merge; measuring "
         f"{args.per_method} configs per method beside XLA's fusion", show=not args.quiet)
    comparison = compare_fusion(problem, policy, measured=args.per_method, samples=args.samples,
                                seed=args.seed)
    print(json.dumps(comparison.to_json()) if args.json else format_comparison(comparison))
    return 0
