"""Learning curves: held-out Kendall tau against the number of training programs.

Whether a cost model is limited by its data or by its design shows in how its held-out score
grows with the training set. For each fraction, whole families are drawn from the train split
(a seeded draw: fewer families, not fewer variants of each), the GNN's full recipe
(cost_model_table.py's FULL) and `baseline:gbdt-rank` are trained on them (the GNN with early
stopping on `/valid`), and both are scored on `/test`, the families neither saw. The untrained
analytical rule and the noise ceiling are drawn as lines. Writes JSON and a plot.

    OMP_NUM_THREADS=1 python benchmarks/learning_curve.py --collection flags --seeds 0 1 2
    python benchmarks/learning_curve.py --collection layout --fractions 0.1 0.25 0.5 1.0
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

import harness
from cost_model_table import FULL, collection_folder, train_variant
from hlotune.data.dataset import Dataset
from hlotune.evaluation.evaluate import evaluate
from hlotune.evaluation.scorers import load_scorer


def families(train: Path) -> dict[str, list[Path]]:
    """The train split's npz files by family (the program spec before `@`)."""
    grouped: dict[str, list[Path]] = {}
    for npz in sorted(train.glob("*.npz")):
        program = json.loads(npz.with_suffix(".json").read_text())["program"]
        grouped.setdefault(program.partition("@")[0], []).append(npz)
    return grouped


def subset(grouped: dict[str, list[Path]], fraction: float, seed: int) -> list[Path]:
    names = sorted(grouped)
    np.random.default_rng(seed).shuffle(names)
    return [npz for name in names[: max(1, math.ceil(fraction * len(names)))] for npz in grouped[name]]


def tau(model: str, test: Path) -> float:
    return evaluate(Dataset(test), load_scorer(model)).kendall_tau


def run(args: argparse.Namespace) -> dict:
    torch.set_num_threads(1)
    split = collection_folder(args.root, args.collection)
    grouped = families(split / "train")
    points = []
    for fraction in args.fractions:
        for seed in args.seeds:
            files = subset(grouped, fraction, seed)
            with tempfile.TemporaryDirectory() as folder:
                subset_dir = Path(folder) / "train"
                subset_dir.mkdir()
                for npz in files:  # links, so the split's own folders stay as they are
                    (subset_dir / npz.name).symlink_to(npz.resolve())
                seconds = train_variant(split, FULL[args.collection], seed, Path(folder) / "gnn",
                                        args.epochs, train_dir=subset_dir)
                point = {"fraction": fraction, "seed": seed, "programs": len(files),
                         "gnn": tau(str(Path(folder) / "gnn" / "model"), split / "test"),
                         "gbdt-rank": tau(f"baseline:gbdt-rank@{subset_dir}", split / "test"),
                         "train_s": seconds}
            points.append(point)
            print(f"{len(files)} programs, seed {seed}: gnn {point['gnn']:.3f}, "
                  f"gbdt-rank {point['gbdt-rank']:.3f}", flush=True)
    test = evaluate(Dataset(split / "test"), load_scorer("baseline:analytical"))
    return {"collection": args.collection, "root": str(split.parent), "epochs": args.epochs,
            "points": points, "analytical": test.kendall_tau, "noise_ceiling": test.noise_ceiling_tau}


def plot(curve: dict, out: Path) -> None:
    fig, ax = harness.subplots(figsize=(6, 4))
    for model, colour in (("gnn", "tab:blue"), ("gbdt-rank", "tab:orange")):
        sizes = sorted({p["programs"] for p in curve["points"]})
        by_size = [[p[model] for p in curve["points"] if p["programs"] == n] for n in sizes]
        means = np.array([statistics.fmean(v) for v in by_size])
        spread = np.array([statistics.pstdev(v) for v in by_size])
        ax.plot(sizes, means, "o-", color=colour, label=model)
        ax.fill_between(sizes, means - spread, means + spread, color=colour, alpha=0.2)
    ax.axhline(curve["analytical"], color="tab:green", linestyle="--", label="analytical (untrained)")
    if curve["noise_ceiling"] is not None:
        ax.axhline(curve["noise_ceiling"], color="grey", linestyle=":", label="noise ceiling")
    ax.set_xlabel("training programs")
    ax.set_ylabel("Kendall tau, held-out families")
    ax.set_title(f"{curve['collection']}: learning curve (mean ± std over seeds)")
    ax.legend(fontsize=8)
    harness.save_figure(fig, out, dpi=120)


def main() -> None:
    parser = harness.parser(__doc__, out=Path("learning_curve.json"), plot=Path("learning_curve.png"))
    parser.add_argument("--collection", choices=sorted(FULL), required=True)
    parser.add_argument("--root", type=Path, help="COLLECTION/{train,valid,test} under it (default: built-in)")
    parser.add_argument("--fractions", nargs="+", type=float, default=[0.25, 0.5, 1.0],
                        help="shares of the train split's families")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--epochs", type=int, default=60)
    args = parser.parse_args()
    curve = run(args)
    harness.write_json(args.out, curve)
    plot(curve, args.plot)
    print(f"analytical {curve['analytical']:.3f}, noise ceiling {curve['noise_ceiling']}", file=sys.stderr)


if __name__ == "__main__":
    main()
