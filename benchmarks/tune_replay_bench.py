"""Search strategies compared offline on recorded measurements: random order, the pretrained
prior alone, the prior plus the online per-program model, and the online model alone.

Each held-out program of the built-in dataset (the test families, never seen in training) is
replayed (hlotune.tuning.replay): its recorded configs are the pool, a run measures them in the
order its cost model ranks them (Exhaustive with a cost model, re-ranked after every batch),
and the recorded samples answer. The oracle is the pool's fastest config. No compiler runs and
nothing is timed, so the numbers are exact and repeatable on a busy machine; what they cannot
show is how a generative search (evolutionary) fares outside the recorded pool, which needs
real measurements (benchmarks/tune_bench.py).

    python benchmarks/tune_replay_bench.py [--seeds 3] [--batch 4] [--out docs/img/tune_replay.json]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hlotune.compiler.config import DEFAULT_CONFIG  # noqa: E402
from hlotune.compiler.layouts import LayoutSpace  # noqa: E402
from hlotune.compiler.space import SearchSpace  # noqa: E402
from hlotune.data.builtin import ROOT  # noqa: E402
from hlotune.programs import load_program  # noqa: E402
from hlotune.tuning.callbacks import UpdateCostModel  # noqa: E402
from hlotune.tuning.cost_model import ScorerCostModel, load_scorers  # noqa: E402
from hlotune.tuning.database import TuningDatabase  # noqa: E402
from hlotune.tuning.online import OnlineCostModel  # noqa: E402
from hlotune.tuning.replay import ReplayRunner  # noqa: E402
from hlotune.tuning.strategies import Exhaustive  # noqa: E402
from hlotune.tuning.tuner import Tuner  # noqa: E402

STRATEGIES = ("random", "prior", "prior+online", "online")
WITHIN = 0.02
BUDGETS = (8, 16, 32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--out", type=Path, default=Path("docs/img/tune_replay.json"))
    args = parser.parse_args()
    rows = []
    for collection in ("flags", "layout"):
        for npz in sorted((ROOT / collection / "test").glob("*.npz")):
            rows += run_program(collection, npz, args.seeds, args.batch)
            args.out.write_text(json.dumps(rows, indent=1))
    print(markdown(rows))


def run_program(collection: str, npz: Path, seeds: int, batch: int) -> list[dict]:
    program = load_program(f"zoo:{npz.stem}")
    replay = ReplayRunner.from_collection(npz)
    pool = [config for config in replay.recorded if not config.is_default]
    default_ns = np.median(replay.recorded[DEFAULT_CONFIG])
    oracle = min(min(np.median(replay.recorded[c]) / default_ns for c in pool), 1.0)
    layouts = LayoutSpace(program)
    prior = ScorerCostModel(load_scorers("pretrained", collection), layouts)
    rows = []
    for strategy in STRATEGIES:
        for seed in range(seeds):
            order = pool[:]
            random.Random(seed).shuffle(order)  # ties, and the random baseline's order
            history = replay_run(program, collection, layouts, replay, order, strategy, prior, batch)
            rows.append(summary(npz, collection, strategy, seed, history, oracle))
        print(f"{collection} {npz.stem}: {strategy} done", file=sys.stderr, flush=True)
    return rows


def replay_run(program, collection, layouts, replay, order, strategy, prior, batch) -> list[float]:
    """Best cost so far after each evaluated config, the default first."""
    model = {"random": None, "prior": prior, "prior+online": OnlineCostModel(prior),
             "online": OnlineCostModel()}[strategy]
    callbacks = [UpdateCostModel(1)] if isinstance(model, OnlineCostModel) else []
    with tempfile.TemporaryDirectory() as folder, \
            TuningDatabase(Path(folder) / "db.sqlite", machine=replay.machine) as db:
        space = SearchSpace(collection, layouts, allow_numerics_change=True)
        tuner = Tuner(program, space, Exhaustive(order, cost_model=model), replay, db,
                      cost_model=model, callbacks=callbacks, fingerprint="replay")
        tuner.run(len(order) + 1, batch=batch)
    return list(np.minimum.accumulate([trial.cost for trial in tuner.trials]))


def summary(npz, collection, strategy, seed, history, oracle) -> dict:
    within = next((i + 1 for i, cost in enumerate(history) if cost <= oracle * (1 + WITHIN)), None)
    gain = 1 / oracle - 1
    found = {b: (1 / history[min(b, len(history)) - 1] - 1) / gain if gain > 0 else 1.0 for b in BUDGETS}
    return {"program": f"zoo:{npz.stem}", "collection": collection, "strategy": strategy,
            "seed": seed, "oracle_speedup": 1 / oracle, "configs_to_within": within,
            "pool": len(history) - 1, **{f"found_at_{b}": found[b] for b in BUDGETS}}


def markdown(rows: list[dict]) -> str:
    lines = [f"| strategy | median configs to within {WITHIN:.0%} of the oracle | "
             + " | ".join(f"share of the oracle's gain at {b}" for b in BUDGETS) + " |",
             "|---" * (2 + len(BUDGETS)) + "|"]
    for strategy in STRATEGIES:
        mine = [r for r in rows if r["strategy"] == strategy]
        reach = [r["configs_to_within"] or r["pool"] + 1 for r in mine]
        shares = [np.median([r[f"found_at_{b}"] for r in mine]) for b in BUDGETS]
        lines.append(f"| {strategy} | {np.median(reach):.1f} | " + " | ".join(f"{s:.2f}" for s in shares) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
