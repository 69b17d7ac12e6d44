"""GO's tables on held-out graphs: the pretrained policy against the human, METIS, HDP and
random placements, for 2, 4 and 8 devices, and its fusion head against greedy fusion. Every step
time is the SIMULATOR's (hlotune.opt.simulator on DeviceModel.uniform(N)), not a measurement.

The policy runs three ways, the last two with HDP's search time on the same graph as budget:
zero-shot (the best of its greedy and 64 sampled placements), fine-tuned (PPO on the graph for
the budget, then the zero-shot search; the better of that and the zero-shot find), and searched
(the best of 16 samples, then policy-guided hill climbing, hlotune.opt.local_search, until the
budget is spent). Each seed reruns every method (HDP and random too) with that seed.

The default graphs were not in the pretrained policy's training set (see its config.json):
three GO architectures it never saw (NMT, Transformer-XL, AmoebaNet), an unseen size of a seen
one (RNNLM large, and NMT large as a training step), and four unseen zoo architectures.

    python benchmarks/opt_go_bench.py [--policy pretrained] [--devices 2,4,8] [--seeds 0,1,2]
                                      [--graphs SPEC,...] [--fusion SPEC,...] [--no-finetune]
                                      [--json]
    python benchmarks/opt_go_bench.py --ablation LABEL=OUTPUT_OF_A_JSON_RUN ...
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

import harness
from hlotune.opt import baselines
from hlotune.opt.commands import load_graphs, policy_folder
from hlotune.opt.device import DeviceModel
from hlotune.opt.policy import GOPolicy
from hlotune.opt.ppo import PPOSettings, Problem, search, train
from hlotune.opt.report import GEOMEAN_OVER, baseline_assignment
from hlotune.opt.simulator import honoured_fusion

HELD_OUT = ("go:nmt@small", "go:txl@small", "go:amoebanet@small", "go:rnnlm@large",
            "go:nmt@large-train", "zoo:gpt@small", "zoo:vit@small", "zoo:unet@small",
            "zoo:moe@small")
FUSION = ("go:nmt@small", "go:txl@small", "go:amoebanet@small", "zoo:gpt@small",
          "zoo:unet@small")
PLACERS = ("human", "metis", "hdp", "random")
POLICIES = ("zero_shot", "finetuned", "searched")
FUSION_POLICIES = ("zero_shot", "finetuned")
SEARCH_SAMPLES = 16  # sampled before hill climbing: the climb makes better use of the budget
# What every table's numbers assume; printed beside each.
ASSUMPTIONS = (
    "Simulator assumptions (hlotune.opt.simulator, docs/go.md): roofline op times "
    "(max(flops / 15 TFLOP/s, bytes / 900 GB/s) + 5 us launch) on N identical illustrative "
    "V100-class devices (DeviceModel.uniform, not a measured machine), one kernel at a time per "
    "device in priority order, one FIFO 25 GB/s + 5 us link per device pair, a tensor sent once "
    "per destination device, 16 GiB per device (OOM is flagged), while loops counted once.")


@dataclass(frozen=True)
class PlaceRow:
    """One graph on N devices with one seed: simulated step ms by method, and search seconds."""

    graph: str
    ops: int
    devices: int
    seed: int
    ms: dict[str, float]  # POLICIES (those run) + PLACERS -> simulated step ms
    oom: list[str]
    seconds: dict[str, float]  # POLICIES (those run) and "hdp" -> search seconds
    finetune_iterations: int  # PPO iterations fine-tuning fitted in HDP's time
    bound_ms: float  # no placement beats it (OpGraph.step_time_bound)

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
    if args.ablation:
        print(ablation_table(dict(_labelled_rows(item) for item in args.ablation)))
        return
    torch.set_num_threads(1)
    # "untrained" (random initial weights) is the control: what the search finds without
    # anything learned.
    policy = (GOPolicy(seed=0) if args.policy == "untrained"
              else GOPolicy.load(policy_folder(args.policy))[0])
    graphs = {spec: load_graphs(spec)[0][1] for spec in dict.fromkeys(args.graphs + args.fusion)}
    # torch's first forward pass pays one-off set-up; keep it out of the first row's timing.
    search(policy, Problem.make(next(iter(graphs.values())), DeviceModel.uniform(2), ["place"]), 1)
    place_rows = [place_row(policy, spec, graphs[spec], n, seed, args)
                  for seed in args.seeds for n in args.devices for spec in args.graphs]
    fuse_rows = [fuse_row(policy, spec, graphs[spec], args.fusion_devices, args)
                 for spec in args.fusion]
    print(place_tables(place_rows, args.devices, args.seeds))
    if fuse_rows:
        print()
        print(fuse_table(fuse_rows))
    if args.json:
        print(json.dumps({"simulated": True, "place": [asdict(r) for r in place_rows],
                          "fuse": [asdict(r) for r in fuse_rows]}))


def place_row(policy: GOPolicy, spec: str, graph, n: int, seed: int, args) -> PlaceRow:
    """The baselines first: HDP's search time is the budget of fine-tuning and searching."""
    problem = Problem.make(graph, DeviceModel.uniform(n), ["place"], name=spec)
    ms, oom, seconds = {}, [], {}
    for method in PLACERS:
        assignment, took = _timed(lambda: baseline_assignment(problem, method, seed))
        result = problem.simulate(**assignment)
        ms[method] = result.step_time_s * 1e3
        oom += [method] if result.oom else []
        seconds[method] = took
    budget_s = seconds["hdp"]
    found = {"zero_shot": search(policy, problem, args.samples, seed)}
    tuned_iterations = 0
    if args.finetune:
        found["finetuned"], tuned_iterations = _finetune_search(
            policy, problem, args.samples, seed, budget_s - found["zero_shot"].search_s,
            found["zero_shot"])
    found["searched"] = search(policy, problem, SEARCH_SAMPLES, seed, budget_s=budget_s)
    for name, result in found.items():
        ms[name] = result.result.step_time_s * 1e3
        oom += [name] if result.result.oom else []
        seconds[name] = result.search_s
    seconds = {k: v for k, v in seconds.items() if k in (*POLICIES, "hdp")}
    row = PlaceRow(spec, graph.num_ops, n, seed, ms, oom, seconds, tuned_iterations,
                   graph.step_time_bound(problem.devices) * 1e3)
    print(f"{spec} N={n} seed {seed}: " + ", ".join(f"{k} {v:.4g}" for k, v in ms.items())
          + f" (HDP {budget_s:.2f} s)", flush=True)
    return row


def fuse_row(policy: GOPolicy, spec: str, graph, n: int, args) -> FuseRow:
    """Fusion on the METIS placement (as `hlotune opt fuse` does): none, greedy, random and
    the policy's fusion head, zero-shot and fine-tuned."""
    seed = args.seeds[0]
    problem = Problem.make(graph, DeviceModel.uniform(n), ["fuse"], name=spec)
    zero_shot = search(policy, problem, args.samples, seed)
    tuned = copy.deepcopy(policy)
    train(tuned, [problem], PPOSettings(iterations=args.fusion_finetune, seed=seed))
    finetuned = max(zero_shot, search(tuned, problem, args.samples, seed),
                    key=lambda found: found.reward)
    fuse = {"none": None,
            "greedy": baselines.greedy_fusion(graph, problem.fixed_placement),
            "random": baseline_assignment(problem, "random", seed)["fuse"],
            "zero_shot": zero_shot.fuse,
            "finetuned": finetuned.fuse}
    ms = {k: problem.simulate(fuse=bits).step_time_s * 1e3 for k, bits in fuse.items()}
    fused = {k: 0 if bits is None else int(honoured_fusion(
        graph, problem.fixed_placement, np.asarray(bits, dtype=bool)).sum())
        for k, bits in fuse.items()}
    return FuseRow(spec, graph.num_ops, n, ms, fused)


def _finetune_search(policy: GOPolicy, problem: Problem, samples: int, seed: int,
                     budget_s: float, zero_shot):
    """PPO on the graph from the pretrained weights for `budget_s` (one iteration at least),
    then a search; the better of its find and the zero-shot search's (fine-tuning runs after
    that search, so it knows that find). Its search_s counts all three."""
    tuned = copy.deepcopy(policy)
    start = time.perf_counter()
    logs = train(tuned, [problem], PPOSettings(iterations=10**6, seed=seed), budget_s=budget_s)
    found = max(zero_shot, search(tuned, problem, samples, seed), key=lambda f: f.reward)
    spent = zero_shot.search_s + time.perf_counter() - start
    return dataclasses.replace(found, search_s=spent), len(logs)


def _timed(run):
    start = time.perf_counter()
    value = run()
    return value, time.perf_counter() - start


def geomean(values) -> float:
    values = list(values)
    return math.exp(sum(map(math.log, values)) / len(values))


def place_tables(rows: list[PlaceRow], device_counts: list[int], seeds: list[int]) -> str:
    """One markdown table per device count (the first seed's rows), then, per policy, its
    geomean speedups and search time over HDP's: the mean over seeds, and their range."""
    parts = [f"SIMULATED step times in ms; seeds {', '.join(map(str, seeds))}, the table shows "
             f"seed {seeds[0]}. bound = no placement beats it (critical path, or all work "
             "spread evenly; transfers free). " + ASSUMPTIONS]
    policies = [p for p in POLICIES if p in rows[0].ms]
    for n in device_counts:
        part = [r for r in rows if r.devices == n]
        header = ["graph", "ops", *(p.replace("_", "-") for p in policies), *PLACERS,
                  "best baseline", "bound", "search s (" + " / ".join(
                      [*(p.replace("_", "-") for p in policies), "HDP"]) + ")"]
        lines = [f"\n**{n} devices**\n", harness.markdown_header(header)]
        for r in part:
            if r.seed != seeds[0]:
                continue
            times = " / ".join(f"{r.seconds[m]:.1f}" for m in (*policies, "hdp"))
            cells = [r.graph, f"{r.ops:,}", *(_ms(r, m) for m in (*policies, *PLACERS)),
                     f"{_best(r):.4g}", f"{r.bound_ms:.4g}", times]
            lines.append(harness.markdown_row(cells))
        lines.append("")
        for policy in policies:
            lines.append(f"- {policy.replace('_', '-')}: " + _summary(part, policy, seeds))
        parts.append("\n".join(lines))
    return "\n".join(parts)


def _summary(rows: list[PlaceRow], policy: str, seeds: list[int]) -> str:
    """Geomean speedups over each baseline and the best one, and search time / HDP's."""
    per_seed = {seed: [r for r in rows if r.seed == seed] for seed in seeds}

    def spread(value, unit: str = "x") -> str:
        seeds = harness.Spread(tuple(value(part) for part in per_seed.values()))
        return f"{seeds.mean:.2f}{unit}" + (f" ({seeds.range()})" if len(seeds.values) > 1 else "")

    over = [f"{spread(lambda p: geomean(r.speedup(policy, m) for r in p))} over {m}"
            for m in GEOMEAN_OVER]
    best = spread(lambda p: geomean(_best(r) / r.ms[policy] for r in p))
    ratio = spread(lambda p: geomean(r.seconds[policy] / r.seconds["hdp"] for r in p), "")
    return (f"geomean speedup {', '.join(over)}, {best} over the best baseline per graph; "
            f"search time / HDP's {ratio} (geomean)")


def _best(row: PlaceRow) -> float:
    return min(row.ms[m] for m in PLACERS)


def ablation_table(runs: dict[str, list[PlaceRow]]) -> str:
    """Per run (a policy) and policy mode, the geomean speedup over the best baseline per
    graph and over HDP, for each device count (seed 0's rows, or the first seed's)."""
    counts = sorted({r.devices for rows in runs.values() for r in rows})
    header = ["policy", "mode", *(f"N={n} vs best / vs HDP" for n in counts)]
    lines = [harness.markdown_header(header)]
    for label, rows in runs.items():
        first = [r for r in rows if r.seed == rows[0].seed]
        for mode in (m for m in POLICIES if m in first[0].ms):
            cells = []
            for n in counts:
                part = [r for r in first if r.devices == n]
                best = geomean(_best(r) / r.ms[mode] for r in part)
                hdp = geomean(r.speedup(mode, "hdp") for r in part)
                cells.append(f"{best:.3f}x / {hdp:.3f}x")
            lines.append(harness.markdown_row([label, mode.replace("_", "-"), *cells]))
    return "\n".join(lines)


def _labelled_rows(item: str) -> tuple[str, list[PlaceRow]]:
    """LABEL=FILE, FILE holding this script's --json output (its last line)."""
    label, _, path = item.partition("=")
    document = json.loads(Path(path).read_text().strip().splitlines()[-1])
    return label, [PlaceRow(**row) for row in document["place"]]


def fuse_table(rows: list[FuseRow]) -> str:
    methods = ("none", "greedy", "random", "zero_shot", "finetuned")
    header = ["graph", "ops", "N", *(f"{m} ms (fused)" for m in methods), "tuned vs greedy"]
    lines = ["SIMULATED fusion on the METIS placement: step ms and the fuse bits honoured. "
             + ASSUMPTIONS + " A fused kernel of k ops saves its intermediate traffic and "
             "launches and pays 0.1 us * (k - 1)^2.", "", harness.markdown_header(header)]
    for r in rows:
        cells = [r.graph, f"{r.ops:,}", str(r.devices),
                 *(f"{r.ms[m]:.4g} ({r.fused[m]})" for m in methods),
                 f"{r.ms['greedy'] / r.ms['finetuned']:.2f}x"]
        lines.append(harness.markdown_row(cells))
    lines.append("")
    for policy in FUSION_POLICIES:
        lines.append(f"- {policy.replace('_', '-')}: geomean "
                     f"{geomean(r.ms['greedy'] / r.ms[policy] for r in rows):.2f}x over greedy "
                     f"fusion, {geomean(r.ms['none'] / r.ms[policy] for r in rows):.2f}x over none")
    return "\n".join(lines)


def _ms(row: PlaceRow, method: str) -> str:
    return f"{row.ms[method]:.4g}" + (" (OOM)" if method in row.oom else "")


def _parser() -> argparse.ArgumentParser:
    parser = harness.parser(__doc__)
    parser.add_argument("--policy", default="pretrained",
                        help="a policy folder, 'pretrained' or 'untrained' (random weights)")
    parser.add_argument("--devices", type=harness.int_list, default=[2, 4, 8])
    parser.add_argument("--graphs", type=harness.text_list, default=list(HELD_OUT))
    parser.add_argument("--fusion", type=harness.text_list, default=list(FUSION), help="graphs to fuse")
    parser.add_argument("--fusion-devices", type=int, default=2)
    parser.add_argument("--seeds", type=harness.int_list, default=[0])
    parser.add_argument("--no-finetune", dest="finetune", action="store_false",
                        help="leave out fine-tuning (PPO for HDP's search time) on placement")
    parser.add_argument("--fusion-finetune", type=int, default=20,
                        help="PPO iterations of fine-tuning per fusion graph")
    parser.add_argument("--samples", type=int, default=64, help="assignments each search samples")
    harness.add_common(parser, json=False)
    parser.add_argument("--ablation", nargs="+", metavar="LABEL=FILE",
                        help="print the ablation table of earlier --json runs (FILE: their "
                        "output) instead of running")
    return parser


if __name__ == "__main__":
    main()
