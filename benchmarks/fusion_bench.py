"""The fusion space's opportunity on this CPU, and how much of it the policy with the model finds.

Per program, two batches measured by the tuner's worker (outputs checked against the default):

1. exploration: `--random` random valid fusion configs (the oracle's draws), the policy's
   `--measured` proposals ranked first by the module roofline (a fifth of random's by
   default), and the greedy merge, beside XLA's default;
2. confirmation: the exploration's three fastest random configs, the policy's fastest, the
   greedy merge and the fastest of the first `--measured` random configs (random at the
   policy's count), re-measured together beside fresh default replicas.

The oracle is the best confirmed random config; every gain reported is the confirmation's
(the exploration's minimum is biased upward). The noise floor is the confirmation batch's
default replicas. Results append to --out as JSON lines, one per program: a stopped run resumes
where it stopped.

    python benchmarks/fusion_bench.py --out docs/img/fusion_bench.jsonl
    python benchmarks/fusion_bench.py --programs zoo:vit@small --random 16
    python benchmarks/fusion_bench.py --out docs/img/fusion_bench.jsonl --report   # the table

Measure on a quiet machine.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import harness
from hlotune.compiler.measurement.measure import MeasureSettings, measure
from hlotune.opt.commands import PRETRAINED_DIR
from hlotune.opt.measured_fusion import FusionProblem, best_of, method_configs, policy_proposals
from hlotune.opt.policy import GOPolicy

# Families no shipped model trained on: the built-in dataset's test and valid splits.
PROGRAMS = ("zoo:vit@small", "zoo:unet@small", "zoo:mobilenet@small", "zoo:gnn@small",
            "corpus:jaxmd-lj@small", "corpus:hf-whisper@tiny", "corpus:hf-dinov2@tiny",
            "corpus:hf-mistral@tiny", "corpus:hf-vit@tiny", "corpus:hf-electra@tiny",
            "corpus:hf-regnet@tiny", "corpus:haiku-mobilenet@tiny")


def bench(program: str, policy, draws: int, measured: int, seed: int) -> dict:
    start = time.perf_counter()
    problem = FusionProblem.load(program)
    chosen = method_configs(problem, policy_proposals(problem, policy, 64, seed), measured=measured,
                            draws=draws, seed=seed)
    draws_list, proposals, (greedy,) = chosen["random"], chosen["policy"], chosen["greedy"]
    explored = measure(program, [*draws_list, *proposals, greedy], MeasureSettings(seed=seed))
    by_config = {m.config: m for m in explored.measurements}
    fastest = sorted((by_config[c] for c in draws_list if by_config[c].ok), key=lambda m: m.median_ns)
    finalists = {"oracle": [m.config for m in fastest[:3]],
                 "policy": _fastest(proposals, by_config), "greedy": _fastest([greedy], by_config),
                 "random_equal": _fastest(draws_list[:measured], by_config)}
    confirmed = measure(program, list(dict.fromkeys(c for cs in finalists.values() for c in cs)),
                        MeasureSettings(seed=seed + 1))
    again = {m.config: m for m in confirmed.measurements}
    default_ms = confirmed.default_ns / 1e6
    row = {"program": program, "kernels_with_choices": len(problem.choices),
           "genes_values": sum(len(v) for v in problem.choices.values()),
           "default_ms": default_ms, "noise": confirmed.noise_floor,
           "explore_noise": explored.noise_floor, "seconds": time.perf_counter() - start,
           "failed": {"random": sum(not by_config[c].ok for c in draws_list),
                      "policy": sum(not by_config[c].ok for c in proposals),
                      "greedy": int(not by_config[greedy].ok)},
           "measured": {"random": len(draws_list), "policy": len(proposals), "greedy": 1}}
    for method, configs in finalists.items():
        best = best_of(configs, again)
        row[method] = None if best.ms is None else default_ms / best.ms
    return row


def _fastest(configs, by_config) -> list:
    best = best_of(configs, by_config)
    return [] if best.best is None else [best.best]


def markdown(rows: list[dict]) -> str:
    """Per program: the confirmed speedups over XLA's fusion, the noise floor, and the share of
    the oracle's gain the policy keeps where the oracle beats the default beyond the noise."""
    header = ("program", "kernels (decisions)", "XLA ms", "noise", "oracle (64 random)", "policy (12)",
              "random (12)", "greedy merge", "policy share of oracle")
    cells = []
    for r in rows:
        beyond = r["oracle"] is not None and r["oracle"] - 1 > r["noise"]
        share = f"{(r['policy'] - 1) / (r['oracle'] - 1):.2f}" if beyond and r["policy"] else "no gain beyond noise"
        cells.append([r["program"], f"{r['kernels_with_choices']} ({r['genes_values']})", f"{r['default_ms']:.2f}",
                      f"{r['noise']:.1%}", *(_speedup(r[m]) for m in ("oracle", "policy", "random_equal", "greedy")),
                      share])
    return harness.markdown(header, cells)


def _speedup(value: float | None) -> str:
    return "failed" if value is None else f"{value:.3f}x"


def main() -> None:
    parser = harness.parser(__doc__, programs=list(PROGRAMS), seed=0, out=Path("fusion_bench.jsonl"))
    parser.add_argument("--random", type=int, default=64, help="the oracle's random draws")
    parser.add_argument("--measured", type=int, default=12, help="the policy's measured proposals")
    parser.add_argument("--report", action="store_true", help="print --out's rows as a table")
    args = parser.parse_args()
    if args.report:
        print(markdown(harness.read_rows(args.out, lines=True)))
        return
    policy, _ = GOPolicy.load(PRETRAINED_DIR)
    log = harness.RowLog(args.out, lines=True)
    for program in log.todo("program", args.programs):
        row = bench(program, policy, args.random, args.measured, args.seed)
        log.add(row)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
