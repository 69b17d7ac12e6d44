"""GO's scheduling task on XLA:CPU: peak bytes and measured ms of each order, per program.

Runs `hlotune opt schedule PROGRAM --measure` (hlotune.opt.measured_schedule) on each
program with the shipped policy and prints the table docs/go.md shows: per order (the policy's
best of its sampled orders, XLA's best scheduler, depth-first, memory-greedy) the peak
temporary bytes of XLA's buffer assignment and the minimum over rounds of the call time, beside
the noise floor of two replicas of XLA's order. The control, `random`, is the best peak of as
many orders from uniform random priorities (the policy's prior against none). With --budget S,
the search (a hill climb from the better of the policy's and XLA's orders, each move compiled)
runs S seconds a program and is one more column.

    python benchmarks/opt_schedule_bench.py --budget 60 --out docs/img/go_schedule_bench.json
    python benchmarks/opt_schedule_bench.py --programs zoo:lstm@small --samples 16
"""

from __future__ import annotations

import numpy as np

import harness
from hlotune.compiler.configs.layouts import DEFAULT_LAYOUT, LayoutSpace
from hlotune.compiler.xla.schedule import EntrySchedule, compile_schedule
from hlotune.hlo.sources import from_text
from hlotune.opt.commands import DEFAULT_SAMPLES, PRETRAINED_DIR
from hlotune.opt.measured_schedule import ORDERS, SEARCH, measure_schedules
from hlotune.opt.policy import GOPolicy
from hlotune.opt.schedules import EntryOps, by_priority
from hlotune.programs import load_program

PROGRAMS = ("zoo:lstm@small", "zoo:moe@small", "zoo:gnn@small", "zoo:transformer@small",
            "zoo:gpt@small", "zoo:resnet@small", "zoo:vae@small", "corpus:hf-bert@small")


def main() -> None:
    parser = harness.parser(__doc__, programs=PROGRAMS, seed=0, out=None)
    parser.add_argument("--samples", type=int, default=DEFAULT_SAMPLES)
    parser.add_argument("--budget", type=float, default=0.0, metavar="SECONDS",
                        help="the search's seconds per program (default 0: no search)")
    args = parser.parse_args()
    policy, _ = GOPolicy.load(PRETRAINED_DIR)
    reports = []
    orders = [*ORDERS, *([SEARCH] if args.budget else [])]
    print(harness.markdown_header(["program", "instr.", *(f"{o} KiB / ms" for o in orders), "random KiB",
                                   "XLA's best", "noise", "chosen vs XLA"]))
    for spec in args.programs:
        report = measure_schedules(spec, policy, samples=args.samples, seed=args.seed,
                                   budget_s=args.budget)
        control = random_peak(spec, orders=report.policy_orders, seed=args.seed)
        row = report.to_json() | {"random_peak_bytes": control}
        reports.append(row)
        print(harness.markdown_row(cells(row)), flush=True)
    if args.out:
        harness.write_rows(args.out, reports, lines=True)


def cells(report: dict) -> list[str]:
    """A program's table row, from its JSON line."""
    results = report["results"]
    orders = [f"{r['peak_bytes'] / 1024:,.1f} / {r['ms']:.3f}" + ("" if r["outputs_ok"] else " (DIFFER)")
              for r in results.values()]
    gain = results[report["chosen"]]["peak_bytes"] / results["xla"]["peak_bytes"] - 1
    return [report["graph"], str(report["instructions"]), *orders, f"{report['random_peak_bytes'] / 1024:,.1f}",
            report["xla_best"], f"{report['noise']:.1%}", f"{report['chosen']} {gain:+.1%} peak"]


def random_peak(spec: str, *, orders: int, seed: int) -> int:
    """The lowest peak of `orders` list schedules by uniform random priorities."""
    layouts = LayoutSpace(load_program(spec))
    lowered = layouts.build(DEFAULT_LAYOUT).lower(*layouts.leaves)
    text = compile_schedule(lowered).text
    ops = EntryOps.of(EntrySchedule.parse(text), from_text(text))
    rng = np.random.default_rng(seed)
    drawn = dict.fromkeys(by_priority(ops.entry, rng.random(len(ops.entry.names))) for _ in range(orders))
    return min(compile_schedule(lowered, order).peak_bytes for order in drawn)


if __name__ == "__main__":
    main()
