"""Autotuning benchmark: how many measurements model-guided and random search need.

For each program (by default six the pretrained models never saw: the unet and vit families
are the built-in collections' test split) and the combined flags x layouts space, in one fresh
tuning database per program:

1. random search with a large budget (also the bulk of the oracle);
2. evolutionary search with no model, to separate the model's value from evolution's;
3. evolutionary search ranked by the pretrained models (the default `hlotune tune`);
4. the same, fine-tuned on the program's measurements every 8 configs.

Runs share the database, so a config one run measured is read, not re-measured, by the next:
costs are comparable (each relative to its own batch's default) and the count of configs a run
evaluated is what it would have measured alone. The oracle is the cheapest config any run
found; a run "reaches" it at the first evaluated config within 2% of it. Random search's
expected count is also estimated from its sample: (N + 1) / (k + 1) draws for k of N within 2%.
Real measurements on this machine: noisy, and the tables say so by giving each noise floor.

    python benchmarks/tune_bench.py --budget 48 --random-budget 96 --json docs/img/tune_bench.json
    python benchmarks/tune_bench.py --report docs/img/tune_bench.json     # re-print, no measuring
"""

from __future__ import annotations

import argparse
import json
import math
import random
import tempfile
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from hlotune.compiler.layouts import LayoutSpace  # noqa: E402
from hlotune.programs import load_program  # noqa: E402
from hlotune.tuning.database import TuningDatabase  # noqa: E402
from hlotune.tuning.cost_model import ScorerCostModel, load_scorers  # noqa: E402
from hlotune.compiler.space import SearchSpace  # noqa: E402
from hlotune.tuning.tuner import TuneResult, tune  # noqa: E402

PROGRAMS = ("zoo:unet@tiny", "zoo:unet@tiny-train", "zoo:unet@small",
            "zoo:vit@tiny", "zoo:vit@tiny-train", "zoo:vit@small")
WITHIN = 0.02
RUNS = {  # name -> tune() options
    "random": dict(strategy="random", model=None),
    "evolutionary": dict(strategy="evolutionary", model=None),
    "guided": dict(strategy="evolutionary", model="pretrained"),
    "guided+fine-tune": dict(strategy="evolutionary", model="pretrained", fine_tune_every=8),
}


def bench_program(program: str, budget: int, random_budget: int, db: Path) -> dict:
    results: dict[str, TuneResult] = {}
    for name, options in RUNS.items():
        size = random_budget if name == "random" else budget
        results[name] = tune(program, space="all", budget=size, db_path=db, progress=False, **options)
        print(f"  {name}: {results[name].speedup:.3f}x ({results[name].seconds:.0f} s)", flush=True)
        if name == "random":  # the database holds the random sample alone (and the default)
            random_costs = _costs(db, results[name].fingerprint)
    records = _costs(db, results["random"].fingerprint)
    oracle = min(records)
    within = oracle * (1 + WITHIN)
    target = 1 / within  # the speedup within 2% of the oracle's
    k = sum(cost <= within for cost in random_costs)
    return {
        "program": program,
        "oracle_speedup": 1 / oracle,
        "configs_measured": len(records),
        "random_within": k,
        "random_budget": random_budget,
        "reach": {name: _reach(result.history, target) for name, result in results.items()},
        "random_expected": (len(random_costs) + 1) / (k + 1),
        "results": {name: _summary(result) for name, result in results.items()},
        "measure_rate": results["random"].measurements / results["random"].seconds,
        "rank_rate": _rank_rate(program),
    }


def _costs(db: Path, fingerprint: str) -> list[float]:
    """The cost of every config measured for the program (inf: failed or wrong output)."""
    with TuningDatabase(db) as database:
        return [record.cost for record in database.records(fingerprint)]


def _reach(history: list[float], target: float) -> int | None:
    """Evaluated configs (the default first) until the best speedup reached `target`."""
    return next((i + 1 for i, best in enumerate(history) if best >= target), None)


def _summary(result: TuneResult) -> dict:
    return {
        "default_ms": result.default_ms, "best_ms": result.best_ms, "speedup": result.speedup,
        "noise": result.noise, "kept_default": result.kept_default,
        "measurements": result.measurements, "resumed": result.resumed,
        "seconds": result.seconds, "history": result.history,
    }


def _rank_rate(program: str, configs: int = 2048) -> float:
    """Candidates per second the pretrained models rank in the combined space."""
    loaded = load_program(program)
    layouts = LayoutSpace(loaded)
    space = SearchSpace("all", layouts)
    rng = random.Random(0)
    candidates = [space.random_config(rng) for _ in range(configs)]
    model = ScorerCostModel(load_scorers("pretrained", "all"), layouts)
    model.predict(candidates[:8])  # featurize the graph once, outside the timing
    start = time.perf_counter()
    model.predict(candidates)
    return configs / (time.perf_counter() - start)


def markdown(rows: list[dict], budget: int) -> str:
    lines = [
        f"Configs evaluated (the default first) until one within {WITHIN:.0%} of the oracle; "
        f"'-': none within the run's budget ({budget}; random {rows[0]['random_budget']}). "
        "Tuned: the speedup confirmed beside the default (a new measurement), or 'kept' when "
        "the gain was within the noise floor.\n",
        "| program | oracle | random (expected) | random | evolutionary | guided | guided+fine-tune "
        "| tuned: random | tuned: guided | noise floor |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        reach = {name: "-" if n is None else str(n) for name, n in row["reach"].items()}
        expected = (f"> {row['random_budget']}" if row["random_within"] == 0
                    else f"{row['random_expected']:.1f}")
        lines.append(
            f"| {row['program']} | {row['oracle_speedup']:.3f}x | {expected} | "
            f"{reach['random']} | {reach['evolutionary']} | {reach['guided']} | "
            f"{reach['guided+fine-tune']} | {_tuned(row['results']['random'])} | "
            f"{_tuned(row['results']['guided'])} | {row['results']['guided']['noise']:.1%} |"
        )
    return "\n".join(lines)


def _tuned(result: dict) -> str:
    return "kept" if result["kept_default"] else f"{result['speedup']:.3f}x"


def plot(rows: list[dict], path: Path) -> None:
    fig, axes = plt.subplots(2, math.ceil(len(rows) / 2), figsize=(4 * math.ceil(len(rows) / 2), 6.5),
                             squeeze=False)
    for ax, row in zip(axes.flat, rows):
        for name, result in row["results"].items():
            ax.plot(range(1, len(result["history"]) + 1), result["history"], label=name)
        ax.axhline(row["oracle_speedup"], color="grey", linestyle=":", label="oracle")
        ax.set_title(row["program"].removeprefix("zoo:"), fontsize=9)
        ax.set_xlabel("configs evaluated")
        ax.set_ylabel("best speedup so far")
    axes.flat[0].legend(fontsize=7)
    fig.suptitle("Best-so-far speedup over XLA's default (flags x layouts, measured on XLA:CPU)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", nargs="+", default=list(PROGRAMS))
    parser.add_argument("--budget", type=int, default=48, help="configs per evolutionary run")
    parser.add_argument("--random-budget", type=int, default=96)
    parser.add_argument("--plot", type=Path, default=Path("docs/img/tune_best_so_far.png"))
    parser.add_argument("--json", type=Path, help="write the raw numbers here")
    parser.add_argument("--report", type=Path, metavar="JSON",
                        help="measure nothing: print the table and plot of a saved --json")
    args = parser.parse_args()
    if args.report:
        rows = json.loads(args.report.read_text())
    else:
        rows = []
        with tempfile.TemporaryDirectory(prefix="hlotune-tune-bench-") as folder:
            for i, program in enumerate(args.programs):
                print(program, flush=True)
                db = Path(folder) / f"{i}.sqlite"
                rows.append(bench_program(program, args.budget, args.random_budget, db))
                if args.json:  # after each program: an interrupted run keeps what it finished
                    args.json.write_text(json.dumps(rows, indent=1))
    plot(rows, args.plot)
    print(markdown(rows, args.budget))
    measure_rate = float(np.median([r["measure_rate"] for r in rows]))
    rank_rate = float(np.median([r["rank_rate"] for r in rows]))
    print(f"\nmedian rates: the models rank {rank_rate:,.0f} candidates/s; compile-and-measure "
          f"handles {measure_rate:.2f} configs/s ({rank_rate / measure_rate:,.0f}x)")


if __name__ == "__main__":
    main()
