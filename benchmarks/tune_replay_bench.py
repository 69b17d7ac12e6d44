"""Search strategies compared offline on recorded measurements of programs the models never saw.

Each program of the built-in dataset's valid and test families (never trained on; valid only
chose the training epoch) is replayed (hlotune.tuning.replay): its recorded configs are the
pool, a run evaluates them in the order its cost model ranks them (Exhaustive with a cost model,
re-ranked after every batch), the recorded samples answer, and the tuner decides as it does
live (finalists re-measured beside the default, kept only beyond the noise floor). The oracle
is the pool's fastest config. No compiler runs and nothing is timed, so the numbers are exact
and repeatable on a busy machine; what replay cannot show is a generative search outside the
recorded pool (benchmarks/tune_bench.py measures for real).

Cost models: none (random order), the pretrained GNN (`prior`), the per-program online model
blended in (`+online`, tuning/online.py), and the transfer model fitted on the training
families' collections (`transfer`, tuning/transfer.py; flags only: layout choices name a
program's own tensors).

    python benchmarks/tune_replay_bench.py [--seeds 3] [--batch 4] [--out docs/img/tune_replay.json]
    python benchmarks/tune_replay_bench.py --report docs/img/tune_replay.json   # re-print and plot
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy.stats import gmean  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hlotune.compiler.config import DEFAULT_CONFIG  # noqa: E402
from hlotune.compiler.layouts import LayoutSpace  # noqa: E402
from hlotune.compiler.space import SearchSpace  # noqa: E402
from hlotune.data.builtin import ROOT  # noqa: E402
from hlotune.programs import load_program  # noqa: E402
from hlotune.tuning.callbacks import UpdateCostModel  # noqa: E402
from hlotune.tuning.cost_model import CostModel, RankSum, ScorerCostModel, load_scorers  # noqa: E402
from hlotune.tuning.database import TuningDatabase  # noqa: E402
from hlotune.tuning.online import OnlineCostModel  # noqa: E402
from hlotune.tuning.replay import ReplayRunner  # noqa: E402
from hlotune.tuning.strategies import Exhaustive, Trial  # noqa: E402
from hlotune.tuning.transfer import TransferCostModel, collection_examples  # noqa: E402
from hlotune.tuning.tuner import Tuner  # noqa: E402

WITHIN = 0.02
BUDGETS = (8, 16, 32, 64)
SPLITS = ("valid", "test")
Models = dict[str, CostModel]  # what a program's runs are built from: "prior", "transfer"
STRATEGIES: dict[str, Callable[[Models], CostModel | None]] = {
    "random": lambda m: None,
    "prior": lambda m: m["prior"],
    "prior+online": lambda m: OnlineCostModel(m["prior"]),
    "transfer": lambda m: m.get("transfer"),
    "transfer+online": lambda m: OnlineCostModel(m.get("transfer")),
    "prior+transfer+online": lambda m: OnlineCostModel(RankSum([m["prior"], m["transfer"]])),
}
NEEDS_TRANSFER = {name for name in STRATEGIES if "transfer" in name}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--out", type=Path, default=Path("docs/img/tune_replay.json"))
    parser.add_argument("--plot", type=Path, default=Path("docs/img/tune_replay.png"))
    parser.add_argument("--report", type=Path, help="re-print and plot a saved run")
    args = parser.parse_args()
    if args.report:
        rows = json.loads(args.report.read_text())
    else:
        rows = []
        for collection in ("flags", "layout"):
            transfer = TransferCostModel(collection_examples(sorted((ROOT / collection / "train").glob("*.npz"))))
            for split in SPLITS:
                for npz in sorted((ROOT / collection / split).glob("*.npz")):
                    rows += run_program(collection, npz, transfer, args.seeds, args.batch)
                    args.out.write_text(json.dumps(rows, indent=1))
    print(markdown(rows))
    plot(rows, args.plot)


def run_program(collection: str, npz: Path, transfer: CostModel, seeds: int, batch: int) -> list[dict]:
    program = load_program(f"zoo:{npz.stem}")
    replay = ReplayRunner.from_collection(npz)
    pool = [config for config in replay.recorded if not config.is_default]
    default_ns = np.median(replay.recorded[DEFAULT_CONFIG])
    oracle = min(min(np.median(replay.recorded[c]) / default_ns for c in pool), 1.0)
    layouts = LayoutSpace(program)
    prior = ScorerCostModel(load_scorers("pretrained", collection), layouts)
    models = {"prior": PoolScores(pool, prior.predict(pool)), "transfer": transfer}
    rows = []
    for strategy, make in STRATEGIES.items():
        if collection == "layout" and strategy in NEEDS_TRANSFER:
            continue
        for seed in range(seeds):
            order = pool[:]
            random.Random(seed).shuffle(order)  # ties, and the random baseline's order
            run = replay_run(program, collection, layouts, replay, order, make(models), batch)
            rows.append(summary(npz, collection, strategy, seed, run, oracle))
        print(f"{collection} {npz.stem}: {strategy} done", file=sys.stderr, flush=True)
    return rows


class PoolScores(CostModel):
    """A model's scores of the whole pool, computed once: the pretrained GNN does not learn
    here, and ranking what is left of the pool by them is ranking by the model (up to its
    cross-config attention, which saw the whole pool instead of what is left)."""

    def __init__(self, pool: list, scores: np.ndarray) -> None:
        self.scores = dict(zip(pool, scores))

    def predict(self, configs) -> np.ndarray:
        return np.array([self.scores[config] for config in configs])


def replay_run(program, collection, layouts, replay, order, model, batch) -> dict:
    """The best cost after each evaluated config (the default first), and the speedup the
    tuner's decision keeps at each budget."""
    space = SearchSpace(collection, layouts, allow_numerics_change=True)
    trials, _ = _tune(program, space, replay, Exhaustive(order, cost_model=model), model, len(order) + 1, batch)
    evaluated = [trial.config for trial in trials[1:]]
    kept = {b: _tune(program, space, replay, Exhaustive(evaluated[: b - 1]), None, b, batch)[1] for b in BUDGETS}
    return {"history": list(np.minimum.accumulate([t.cost for t in trials])), "kept": kept}


def _tune(program, space, replay, strategy, model, budget, batch) -> tuple[list[Trial], float]:
    """The trials of one replayed tune, and the speedup its decision keeps (recorded medians)."""
    callbacks = [UpdateCostModel(1)] if isinstance(model, OnlineCostModel) else []
    with tempfile.TemporaryDirectory() as folder, \
            TuningDatabase(Path(folder) / "db.sqlite", machine=replay.machine) as db:
        tuner = Tuner(program, space, strategy, replay, db, cost_model=model, callbacks=callbacks,
                      fingerprint="replay")
        decision = tuner.run(budget, batch=batch)
    return tuner.trials, float(decision.default_ns / np.median(replay.recorded[decision.chosen]))


def summary(npz, collection, strategy, seed, run, oracle) -> dict:
    history = run["history"]
    within = next((i + 1 for i, cost in enumerate(history) if cost <= oracle * (1 + WITHIN)), None)
    gain = 1 / oracle - 1
    found = {b: 1 / history[min(b, len(history)) - 1] for b in BUDGETS}
    return {"program": f"zoo:{npz.stem}", "collection": collection, "strategy": strategy,
            "seed": seed, "oracle_speedup": 1 / oracle, "configs_to_within": within,
            "pool": len(history) - 1, "history": [1 / cost for cost in history],
            **{f"found_at_{b}": found[b] for b in BUDGETS},
            **{f"share_at_{b}": (found[b] - 1) / gain if gain > 0 else 1.0 for b in BUDGETS},
            **{f"kept_at_{b}": run["kept"][b] for b in BUDGETS}}


def markdown(rows: list[dict]) -> str:
    """Per collection: medians over programs and seeds, and geomean speedups at 32."""
    lines = []
    for collection in ("flags", "layout"):
        mine = [r for r in rows if r["collection"] == collection]
        if not mine:
            continue
        programs = sorted({r["program"] for r in mine})
        oracle = gmean([next(r["oracle_speedup"] for r in mine if r["program"] == p) for p in programs])
        random_32 = gmean([r["found_at_32"] for r in mine if r["strategy"] == "random"])
        lines += [f"\n{collection}: {len(programs)} programs, oracle geomean {oracle:.3f}x",
                  f"| strategy | configs to within {WITHIN:.0%} of the oracle (median) | share of the oracle's gain at "
                  + " / ".join(map(str, BUDGETS)) + " | geomean speedup at 32 (x random) | kept slower than the default |",
                  "|---|---|---|---|---|"]
        for strategy in STRATEGIES:
            runs = [r for r in mine if r["strategy"] == strategy]
            if not runs:
                continue
            reach = np.median([r["configs_to_within"] or r["pool"] + 1 for r in runs])
            shares = " / ".join(f"{np.median([r[f'share_at_{b}'] for r in runs]):.2f}" for b in BUDGETS)
            at_32 = gmean([r["found_at_32"] for r in runs])
            slower = sum(r[f"kept_at_{b}"] < 1 for r in runs for b in BUDGETS)
            lines.append(f"| {strategy} | {reach:.1f} | {shares} | {at_32:.3f}x ({at_32 / random_32:.3f}) | "
                         f"{slower} of {len(runs) * len(BUDGETS)} |")
    return "\n".join(lines)


def plot(rows: list[dict], path: Path) -> None:
    """Median share of the oracle's gain over programs after each config, per strategy: the line
    is the median over seeds, the band their range."""
    collections = [c for c in ("flags", "layout") if any(r["collection"] == c for r in rows)]
    fig, axes = plt.subplots(1, len(collections), figsize=(6 * len(collections), 4), squeeze=False)
    for ax, collection in zip(axes[0], collections):
        for strategy in STRATEGIES:
            runs = [r for r in rows if r["collection"] == collection and r["strategy"] == strategy]
            if not runs:
                continue
            seeds = sorted({r["seed"] for r in runs})
            length = min(len(r["history"]) for r in runs)
            curves = np.array([np.median([_share(r, length) for r in runs if r["seed"] == s], axis=0) for s in seeds])
            steps = np.arange(1, length + 1)
            ax.plot(steps, np.median(curves, axis=0), label=strategy)
            ax.fill_between(steps, curves.min(axis=0), curves.max(axis=0), alpha=0.2)
        ax.set(title=f"{collection}: held-out programs (replayed)", xlabel="configs evaluated",
               ylabel="share of the oracle's gain (median program)", ylim=(-0.05, 1.05))
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def _share(row: dict, length: int) -> np.ndarray:
    gain = row["oracle_speedup"] - 1
    history = np.array(row["history"][:length])
    return (history - 1) / gain if gain > 0 else np.ones(length)


if __name__ == "__main__":
    main()
