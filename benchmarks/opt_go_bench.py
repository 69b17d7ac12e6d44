"""GO's tables on held-out graphs: the pretrained policy (zero-shot and fine-tuned) against the
human, METIS, HDP and random placements, for 2, 4 and 8 devices, and its fusion head against
greedy fusion. Every step time is the SIMULATOR's (hlotune.opt.simulator on
DeviceModel.uniform(N)), not a measurement.

The default graphs were not in the pretrained policy's training set (see its config.json):
three GO architectures it never saw (NMT, Transformer-XL, AmoebaNet), an unseen size of a seen
one (RNNLM large, and NMT large as a training step), and four unseen zoo architectures.

    python benchmarks/opt_go_bench.py [--policy pretrained] [--devices 2,4,8] [--finetune 20]
                                      [--graphs SPEC,...] [--fusion-graphs SPEC,...] [--json]
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

import numpy as np  # noqa: E402
import torch  # noqa: E402

from hlotune.opt import baselines  # noqa: E402
from hlotune.opt.commands import load_graphs, policy_folder  # noqa: E402
from hlotune.opt.device import DeviceModel  # noqa: E402
from hlotune.opt.policy import GOPolicy  # noqa: E402
from hlotune.opt.ppo import PPOConfig, Problem, search, train  # noqa: E402
from hlotune.opt.report import GEOMEAN_OVER, baseline_assignment  # noqa: E402
from hlotune.opt.simulator import honoured_fusion  # noqa: E402

HELD_OUT = ("go:nmt@small", "go:txl@small", "go:amoebanet@small", "go:rnnlm@large",
            "go:nmt@large-train", "zoo:gpt@small", "zoo:vit@small", "zoo:unet@small",
            "zoo:moe@small")
FUSION = ("go:nmt@small", "go:txl@small", "go:amoebanet@small", "zoo:gpt@small",
          "zoo:unet@small")
PLACERS = ("human", "metis", "hdp", "random")
POLICIES = ("zero_shot", "finetuned")


@dataclass(frozen=True)
class PlaceRow:
    """One graph on N devices: simulated step ms by method, and search seconds."""

    graph: str
    ops: int
    devices: int
    ms: dict[str, float]  # POLICIES + PLACERS -> simulated step ms
    oom: list[str]
    zero_shot_s: float  # the policy's search (no training)
    finetuned_s: float  # the zero-shot search, fine-tuning PPO iterations, another search
    hdp_s: float  # HDP's REINFORCE training and sampling

    def speedup(self, policy: str, method: str) -> float:
        return self.ms[method] / self.ms[policy]


@dataclass(frozen=True)
class FuseRow:
    graph: str
    ops: int
    devices: int
    ms: dict[str, float]  # none, greedy, random, zero_shot, finetuned -> simulated step ms
    fused: dict[str, int]  # fuse bits the simulator honours, by method


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    torch.set_num_threads(1)
    policy, _ = GOPolicy.load(policy_folder(args.policy))
    graphs = {spec: load_graphs(spec)[0][1] for spec in dict.fromkeys(args.graphs + args.fusion)}
    place_rows = [place_row(policy, spec, graphs[spec], n, args)
                  for n in args.devices for spec in args.graphs]
    fuse_rows = [fuse_row(policy, spec, graphs[spec], args.fusion_devices, args)
                 for spec in args.fusion]
    print(place_tables(place_rows, args.devices))
    print()
    print(fuse_table(fuse_rows))
    if args.json:
        print(json.dumps({"simulated": True, "place": [asdict(r) for r in place_rows],
                          "fuse": [asdict(r) for r in fuse_rows]}))


def place_row(policy: GOPolicy, spec: str, graph, n: int, args) -> PlaceRow:
    problem = Problem.make(graph, DeviceModel.uniform(n), ["place"], name=spec)
    zero_shot, zero_shot_s = _timed(lambda: search(policy, problem, args.samples, args.seed))
    finetuned, tuning_s = _timed(lambda: _finetune_search(policy, problem, args, zero_shot))
    finetuned_s = zero_shot_s + tuning_s
    ms = {"zero_shot": zero_shot.result.step_time_s * 1e3,
          "finetuned": finetuned.result.step_time_s * 1e3}
    oom = [name for name, found in (("zero_shot", zero_shot), ("finetuned", finetuned))
           if found.result.oom]
    hdp_s = 0.0
    for method in PLACERS:
        assignment, seconds = _timed(lambda: baseline_assignment(problem, method, args.seed))
        result = problem.simulate(**assignment)
        ms[method] = result.step_time_s * 1e3
        oom += [method] if result.oom else []
        hdp_s = seconds if method == "hdp" else hdp_s
    row = PlaceRow(spec, graph.num_ops, n, ms, oom, zero_shot_s, finetuned_s, hdp_s)
    print(f"{spec} N={n}: " + ", ".join(f"{k} {v:.4g}" for k, v in ms.items()), flush=True)
    return row


def fuse_row(policy: GOPolicy, spec: str, graph, n: int, args) -> FuseRow:
    """Fusion on the METIS placement (as `hlotune opt fuse` does): none, greedy, random and
    the policy's fusion head, zero-shot and fine-tuned."""
    problem = Problem.make(graph, DeviceModel.uniform(n), ["fuse"], name=spec)
    zero_shot = search(policy, problem, args.samples, args.seed)
    fuse = {"none": None,
            "greedy": baselines.greedy_fusion(graph, problem.fixed_placement),
            "random": baseline_assignment(problem, "random", args.seed)["fuse"],
            "zero_shot": zero_shot.fuse,
            "finetuned": _finetune_search(policy, problem, args, zero_shot).fuse}
    ms = {k: problem.simulate(fuse=bits).step_time_s * 1e3 for k, bits in fuse.items()}
    fused = {k: 0 if bits is None else int(honoured_fusion(
        graph, problem.fixed_placement, np.asarray(bits, dtype=bool)).sum())
        for k, bits in fuse.items()}
    return FuseRow(spec, graph.num_ops, n, ms, fused)


def _finetune_search(policy: GOPolicy, problem: Problem, args, zero_shot):
    """PPO on the graph from the pretrained weights, then a search; the better of its find and
    the zero-shot search's (fine-tuning runs after that search, so it knows that find)."""
    tuned = copy.deepcopy(policy)
    train(tuned, [problem], PPOConfig(iterations=args.finetune, seed=args.seed))
    return max(zero_shot, search(tuned, problem, args.samples, args.seed),
               key=lambda found: found.reward)


def _timed(run):
    start = time.perf_counter()
    value = run()
    return value, time.perf_counter() - start


def geomean(values) -> float:
    values = list(values)
    return math.exp(sum(map(math.log, values)) / len(values))


def place_tables(rows: list[PlaceRow], device_counts: list[int]) -> str:
    """One markdown table per device count, then its geomean speedups and search-time ratios."""
    parts = ["SIMULATED step times in ms (hlotune.opt.simulator, DeviceModel.uniform(N)); "
             "zero-shot = pretrained policy as shipped, fine-tuned = after PPO on the graph."]
    for n in device_counts:
        part = [r for r in rows if r.devices == n]
        header = ["graph", "ops", "policy zero-shot", "policy fine-tuned", *PLACERS,
                  "best baseline", "search s (0-shot / tuned / HDP)"]
        lines = [f"\n**{n} devices**\n", _md(header, header=True)]
        for r in part:
            best = min(r.ms[m] for m in PLACERS)
            cells = [r.graph, f"{r.ops:,}", *(_ms(r, m) for m in (*POLICIES, *PLACERS)),
                     f"{best:.4g}", f"{r.zero_shot_s:.1f} / {r.finetuned_s:.1f} / {r.hdp_s:.1f}"]
            lines.append(_md(cells))
        lines.append("")
        for policy in POLICIES:
            over = {m: geomean(r.speedup(policy, m) for r in part) for m in GEOMEAN_OVER}
            best = geomean(min(r.ms[m] for m in PLACERS) / r.ms[policy] for r in part)
            ratio = geomean(getattr(r, f"{policy}_s") / r.hdp_s for r in part)
            lines.append(f"- {policy.replace('_', '-')}: geomean speedup "
                         + ", ".join(f"{v:.2f}x over {m}" for m, v in over.items())
                         + f", {best:.2f}x over the best baseline per graph; "
                         f"search time / HDP's: {ratio:.2f} (geomean)")
        parts.append("\n".join(lines))
    return "\n".join(parts)


def fuse_table(rows: list[FuseRow]) -> str:
    methods = ("none", "greedy", "random", "zero_shot", "finetuned")
    header = ["graph", "ops", "N", *(f"{m} ms (fused)" for m in methods), "tuned vs greedy"]
    lines = ["SIMULATED fusion on the METIS placement: step ms and the fuse bits honoured.", "",
             _md(header, header=True)]
    for r in rows:
        cells = [r.graph, f"{r.ops:,}", str(r.devices),
                 *(f"{r.ms[m]:.4g} ({r.fused[m]})" for m in methods),
                 f"{r.ms['greedy'] / r.ms['finetuned']:.2f}x"]
        lines.append(_md(cells))
    lines.append("")
    for policy in POLICIES:
        lines.append(f"- {policy.replace('_', '-')}: geomean "
                     f"{geomean(r.ms['greedy'] / r.ms[policy] for r in rows):.2f}x over greedy "
                     f"fusion, {geomean(r.ms['none'] / r.ms[policy] for r in rows):.2f}x over none")
    return "\n".join(lines)


def _ms(row: PlaceRow, method: str) -> str:
    return f"{row.ms[method]:.4g}" + (" (OOM)" if method in row.oom else "")


def _md(cells, header: bool = False) -> str:
    line = "| " + " | ".join(cells) + " |"
    return line + "\n|" + "---|" * len(cells) if header else line


def _parser() -> argparse.ArgumentParser:
    specs = lambda text: [x for x in text.split(",") if x]  # noqa: E731
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", default="pretrained", help="a policy folder or 'pretrained'")
    parser.add_argument("--devices", type=lambda t: [int(x) for x in specs(t)], default=[2, 4, 8])
    parser.add_argument("--graphs", type=specs, default=list(HELD_OUT))
    parser.add_argument("--fusion", type=specs, default=list(FUSION), help="graphs to fuse")
    parser.add_argument("--fusion-devices", type=int, default=2)
    parser.add_argument("--finetune", type=int, default=20, help="PPO iterations per graph")
    parser.add_argument("--samples", type=int, default=64, help="assignments each search samples")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print one JSON object last")
    return parser


if __name__ == "__main__":
    main()
