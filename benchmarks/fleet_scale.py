"""Scale on paper: the tuning hours a fleet of many recorded programs needs to keep 90% of what
tuning everything would save, from the fleet benchmark's measured per-program costs and gains.

Simulated, from measurements: each of N programs (10,000 by default) is one of the benchmark's
programs drawn at random, with that program's measured jax.jit time a call, its measured
tuning seconds at 32 configs (the tune-everything database: `tunes` logged by every tune), and
its delivered speedup under tune-everything (the benchmark's after-runs; 1 where no decision
applied), at a call rate drawn as the benchmark draws them (lognormal, sigma 2, median 1,000
calls a day). Programs are tuned in an order until the tuned ones hold 90% of the fleet's
saving: by recorded time a day (known before any tune: `time`'s order) and by saving per tuning
second known in advance (an oracle: the bound any learned order works toward). Each row gives
the tuning hours that takes, and the hours on a Ray cluster of W one-core workers measuring one
program's batches each (the runner spreads programs, not one batch, so hours divide by W). A
fleet re-tuned each day (new programs, a new compiler) needs these hours each day.

    python benchmarks/fleet_scale.py --rows docs/img/fleet_bench_30.jsonl --fleet /tmp/hlotune-fleet-bench-fleet_bench_30
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import harness

SIGMA, MEDIAN_CALLS, KEEP = 2.0, 1000.0, 0.9


def measured(rows: Path, folder: Path) -> list[tuple[str, float, float, float]]:
    """Per benchmark program: (name, jax.jit seconds a call, tuning seconds, delivered speedup)."""
    from hlotune.tuning.storage import TuningDatabase

    lines = harness.read_rows(rows, lines=True)
    before = {name: r for row in lines if row["kind"] == "record" for name, r in row["before"].items()}
    run = next(row for row in lines if row["kind"] == "everything" and "reweighted_from" not in row)
    applied = set(run["tuned"].get("verified", {}))
    out = []
    with TuningDatabase(str(folder / f"everything-draw{run['draw']}-seed{run['seed']}.sqlite")) as db:
        for recording in db.recordings():
            name = recording.name
            after = run["after"].get(name, {})
            speedup = after.get("delivered", 1.0) if name in applied and after.get("choice") == "database" else 1.0
            out.append((name, before[name]["jit_ms"] / 1e3, db.tuning_seconds(recording.fingerprint), max(speedup, 1.0)))
    return out


def hours_to_keep(saving: np.ndarray, cost_s: np.ndarray, order: np.ndarray) -> float:
    """Tuning hours, programs taken in `order`, until they hold KEEP of the total saving."""
    held = np.cumsum(saving[order]) / saving.sum()
    count = int(np.searchsorted(held, KEEP)) + 1
    return float(cost_s[order][:count].sum() / 3600)


def main() -> None:
    parser = harness.parser(__doc__, seed=0)
    parser.add_argument("--rows", type=Path, required=True, help="the fleet benchmark's results file")
    parser.add_argument("--fleet", type=Path, required=True, help="its --folder, with the everything database")
    parser.add_argument("--programs", type=int, default=10_000, help="programs in the simulated fleet")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 16, 64], help="Ray workers to spread over")
    args = parser.parse_args()
    programs = measured(args.rows, args.fleet)
    rng = np.random.default_rng(args.seed)
    picks = rng.integers(0, len(programs), args.programs)
    call_s, cost_s, speedup = (np.array([programs[i][k] for i in picks]) for k in (1, 2, 3))
    rates = MEDIAN_CALLS * np.exp(rng.normal(0.0, SIGMA, args.programs))
    time_a_day = rates * call_s
    saving = time_a_day * (1 - 1 / speedup)
    orders = {"recorded time a day (time)": np.argsort(-time_a_day),
              "saving per tuning second, known (oracle)": np.argsort(-saving / cost_s)}
    cells = []
    for label, order in orders.items():
        hours = hours_to_keep(saving, cost_s, order)
        cells.append([label, f"{hours:,.1f}"] + [f"{hours / w:,.2f}" for w in args.workers])
    every = cost_s.sum() / 3600
    cells.append(["every program", f"{every:,.1f}"] + [f"{every / w:,.2f}" for w in args.workers])
    print(f"{args.programs:,} programs drawn from {len(programs)} measured; the fleet's time "
          f"{time_a_day.sum() / 3600:,.0f} h a day, tuning everything saves {saving.sum() / 3600:,.1f} h a day "
          f"({saving.sum() / time_a_day.sum():.1%}); median tune {np.median([p[2] for p in programs]):.0f} s")
    print(harness.markdown(["order", f"hours to keep {KEEP:.0%}"] + [f"on {w} workers" for w in args.workers],
                           cells, align="l" + "r" * (1 + len(args.workers))))


if __name__ == "__main__":
    main()
