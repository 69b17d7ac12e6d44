"""The cost model's results table: the GNN, its ablations and every baseline on held-out data.

Each variant is trained on `builtin:COLLECTION/train` (or `--root`'s COLLECTION/train;
early stopping on `/valid`) with several seeds and evaluated on `/test`, the families no model
has seen; baselines are evaluated on the same files, the trained ones fitted on the same train
split. The full recipe's seeds are also scored together as one seed ensemble. Prints a markdown
table (mean +- std over seeds) with the noise ceiling, writes the raw numbers as JSON, and with
`--doc` puts the table into docs/results/cost_model.md between its markers for the collection.

    OMP_NUM_THREADS=1 python benchmarks/cost_model_table.py --collection flags --doc docs/results/cost_model.md
    python benchmarks/cost_model_table.py --collection layout --variants full --keep full=DIR
    python benchmarks/cost_model_table.py --collection flags --variants "+ joint multi-task with the other space" \
        --no-baselines --merge docs/img/cost_model_table_flags.json --json docs/img/cost_model_table_flags.json
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import tempfile
import time
from dataclasses import fields
from pathlib import Path

import torch

import harness
from hlotune.data.builtin import resolve
from hlotune.data.dataset import Dataset
from hlotune.evaluation.evaluate import evaluate
from hlotune.evaluation.scorers import Scorer, load_scorer
from hlotune.models.settings import ModelSettings
from hlotune.models.ensemble import average_standardised, write_ensemble
from hlotune.models.files import pretrained_folder
from hlotune.train import TrainSettings, train

# The full model per collection, then each ablation as the settings it changes.
# Keys are ModelSettings or TrainSettings fields.
FULL = {
    "flags": dict(loss="mse:1,pairwise_hinge:1", join="late", num_layers=3,
                  cross_config_attention=True),
    # MSE on absolute log runtimes swamps the small within-graph differences of layouts: with
    # it, test tau fell from about 0.3 to about 0.13 (2 seeds), so layout ranks by hinge alone.
    "layout": dict(loss="pairwise_hinge", num_layers=3, cross_config_attention=True,
                   prune_hops=3),
    # XLA:CPU kernels (builtin:tile): at most six partitionings each; `hlotune train`'s defaults
    "tile": dict(loss="pairwise_hinge"),
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
    # The Kaggle "Fast or Slow" winners' techniques, one at a time on the full recipe
    "+ residual, instance norm": dict(residual=True, instance_norm=True),  # unpruned: see variants
    "+ softmax over configs": dict(config_softmax=True),
    "+ test-time averaging (8 draws)": dict(test_group_size=16, test_permutations=8),
    "+ DropEdge 0.1": dict(drop_edge=0.1),
    "+ relative targets": dict(relative_targets=True),
    # a learnt multiple of the analytical rule's cost added to the score
    "+ analytical prior": dict(analytical_prior=True),
    # node layers starting from the other space's shipped model (sequential multi-task)
    "+ node layers from the other space": dict(init_from="other"),
    # trained jointly with a companion on the other space's train split (shared node layers)
    "+ joint multi-task with the other space": dict(joint_data="other"),
    # the same graphs with docs/features.md's extra node columns (--extended-root)
    "+ extended features": dict(data="extended"),
}
ENSEMBLE = "seed ensemble of full"
HYBRID = "full + baseline:gbdt-rank (scores standardised, averaged)"
MODEL_FIELDS = {f.name for f in fields(ModelSettings)}
BASELINES = ("baseline:random", "baseline:analytical", "baseline:gbdt", "baseline:gbdt-rank")


def train_variant(split: Path, settings: dict, seed: int, out: Path, epochs: int,
                  train_dir: Path | None = None) -> float:
    """Trains one variant on `split/train` (or `train_dir`) into `out`, early stopping on
    `split/valid`; returns the seconds it took."""
    config = ModelSettings(**{k: v for k, v in settings.items() if k in MODEL_FIELDS})
    recipe = TrainSettings(epochs=epochs, seed=seed, patience=max(5, epochs // 4),
                           **{k: v for k, v in settings.items() if k not in MODEL_FIELDS})
    start = time.perf_counter()
    train(train_dir or split / "train", split / "valid", out, recipe, model_settings=config,
          progress=False)
    return time.perf_counter() - start


def scores(model: str | Scorer, split: Path) -> dict:
    """Test metrics, and the validation tau (optimistic: it picked the epoch) beside them."""
    scorer = load_scorer(model) if isinstance(model, str) else model
    result = evaluate(Dataset(split / "test"), scorer)
    return {
        "kendall_tau": result.kendall_tau, "opa": result.opa, "top_k_error": result.top_k_error,
        "noise_ceiling_tau": result.noise_ceiling_tau,
        "valid_kendall_tau": evaluate(Dataset(split / "valid"), scorer).kendall_tau,
    }


def variants(collection: str, names: list[str]) -> dict[str, dict]:
    chosen = {}
    for name in names:
        change = ABLATIONS[name] if name in ABLATIONS else json.loads(name)
        if collection != "layout" and {"prune_hops", "layout_join", "config_layers"} & set(change):
            continue  # per-node (layout) configs only
        chosen[name] = {**FULL[collection], **change}
        if change.get("instance_norm"):
            chosen[name]["prune_hops"] = None  # its statistics are the whole graph's
        if change.get("init_from") == "other":
            chosen[name]["init_from"] = pretrained_folder(other_space(collection))
    return chosen


def other_space(collection: str) -> str:
    return "layout" if collection == "flags" else "flags"


def collection_folder(root: Path | None, collection: str) -> Path:
    """COLLECTION's folder (train, valid, test in it) under `root`, else the built-in one."""
    return root / collection if root else resolve(f"builtin:{collection}")


def run(args: argparse.Namespace) -> dict:
    torch.set_num_threads(1)
    split = collection_folder(args.root, args.collection)
    rows: dict[str, list[dict]] = {}
    keep = dict(item.split("=", 1) for item in args.keep)
    work = Path(tempfile.mkdtemp(prefix="hlotune-table-"))
    try:
        for index, (name, settings) in enumerate(variants(args.collection, args.variants).items()):
            root = args.root
            if settings.pop("data", None) == "extended":
                if args.extended_root is None:
                    print(f"{name}: skipped, no --extended-root", flush=True)
                    continue
                root = args.extended_root
            data = collection_folder(root, args.collection)
            if settings.get("joint_data") == "other":  # the same split's other space
                settings["joint_data"] = collection_folder(root, other_space(args.collection)) / "train"
            for seed in args.seeds:
                out = work / f"{index}-{seed}"
                seconds = train_variant(data, settings, seed, out, args.epochs)
                row = scores(str(out / "model"), data) | {"seed": seed, "train_s": seconds}
                rows.setdefault(name, []).append(row)
                print(f"{name} seed {seed}: tau {row['kendall_tau']:.3f}, valid "
                      f"{row['valid_kendall_tau']:.3f} ({seconds:.0f} s)", flush=True)
                if name in keep and seed == args.seeds[0]:
                    shutil.copytree(out / "model", keep[name], dirs_exist_ok=True)
        if next(iter(rows), None) == "full" and len(args.seeds) > 1:
            members = [work / f"0-{seed}" / "model" for seed in args.seeds]
            rows[ENSEMBLE] = [scores(str(write_ensemble(work / "ensemble", members)), split)]
            if ENSEMBLE in keep:
                shutil.copytree(work / "ensemble", keep[ENSEMBLE], dirs_exist_ok=True)
        if next(iter(rows), None) == "full" and args.baselines:  # two kinds of model, one ranking
            ranker = load_scorer(baseline_spec("baseline:gbdt-rank", args, split))
            rows[HYBRID] = [scores(blend(load_scorer(str(work / f"0-{seed}" / "model")), ranker), split)
                            for seed in args.seeds]
    finally:
        shutil.rmtree(work)
    for baseline in BASELINES if args.baselines else ():
        rows[baseline] = [scores(baseline_spec(baseline, args, split), split)]
    return {"collection": args.collection, "root": _shown(split.parent), "epochs": args.epochs,
            "settings": FULL[args.collection], "rows": rows}


def merged(saved: dict, table: dict) -> dict:
    """`saved`'s rows in their order, each replaced by this run's where it has one, then this
    run's new rows; refused for another collection or dataset."""
    for key in ("collection", "root"):
        if not _same(key, saved[key], table[key]):
            raise SystemExit(f"--merge: that table's {key} is {saved[key]}, this run's {table[key]}")
    return table | {"rows": saved["rows"] | table["rows"]}


def _shown(root: Path) -> str:
    """The dataset's path relative to the working directory where it lies below it, so a saved
    table names the same data on every checkout."""
    root, here = root.resolve(), Path.cwd().resolve()
    return str(root.relative_to(here)) if root.is_relative_to(here) else str(root)


def _same(key: str, saved: str, new: str) -> bool:
    return Path(saved).resolve() == Path(new).resolve() if key == "root" else saved == new


def baseline_spec(baseline: str, args: argparse.Namespace, split: Path) -> str:
    """A trained baseline is fitted on this dataset's train split (the built-in one is cached)."""
    trained_here = baseline.startswith("baseline:gbdt") and args.root is not None
    return f"{baseline}@{split / 'train'}" if trained_here else baseline


def blend(first: Scorer, second: Scorer) -> Scorer:
    return lambda sample: average_standardised([first(sample), second(sample)])


def _mean_std(values: list[float]) -> str:
    mean = statistics.fmean(values)
    return f"{mean:.3f}" if len(values) == 1 else f"{mean:.3f} ± {statistics.stdev(values):.3f}"


def markdown(table: dict) -> str:
    """Mean ± std over seeds per row; beside tau, its share of the noise ceiling (odd against
    even samples: the tau the measurements themselves support)."""
    first = next(iter(table["rows"].values()))[0]
    ks, ceiling = sorted(first["top_k_error"], key=int)[:2], first["noise_ceiling_tau"]
    header = [f"{table['collection']} (test)", "Kendall tau", "of ceiling", "OPA",
              *(f"top-{k} error" for k in ks), "valid tau"]
    cells = []
    for name, rows in table["rows"].items():
        taus = [r["kendall_tau"] for r in rows]
        share = f"{statistics.fmean(taus) / ceiling:.0%}" if ceiling else "-"
        cells.append([name, _mean_std(taus), share, _mean_std([r["opa"] for r in rows]),
                      *(_mean_std([r["top_k_error"][k] for r in rows]) for k in ks),
                      _mean_std([r["valid_kendall_tau"] for r in rows])])
    if ceiling is not None:
        cells.append(["noise ceiling (odd vs even samples)", f"{ceiling:.3f}", "100%", *[""] * (len(ks) + 2)])
    return harness.markdown(header, cells)


def write_doc(doc: Path, collection: str, table: str) -> None:
    """Replace the table between `<!-- table:COLLECTION -->` and `<!-- /table:COLLECTION -->`."""
    text = doc.read_text()
    start, end = f"<!-- table:{collection} -->", f"<!-- /table:{collection} -->"
    if start not in text or end not in text:
        raise SystemExit(f"{doc}: no {start} ... {end} markers")
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.S)
    harness.write_text(doc, pattern.sub(lambda _: f"{start}\n{table}\n{end}", text))


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--collection", choices=sorted(FULL), required=True)
    parser.add_argument("--variants", nargs="+", default=list(ABLATIONS),
                        help=f"{', '.join(ABLATIONS)} or a JSON object of changes")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--no-baselines", dest="baselines", action="store_false")
    parser.add_argument("--keep", nargs="*", default=[], metavar="VARIANT=DIR",
                        help="copy the first seed's model of VARIANT to DIR")
    parser.add_argument("--root", type=Path,
                        help="the dataset: COLLECTION/{train,valid,test} under it (default: built-in)")
    parser.add_argument("--extended-root", type=Path,
                        help="the same dataset with extended node features "
                        "(benchmarks/extended_dataset.py), for the '+ extended features' row")
    parser.add_argument("--json", type=Path, help="write the raw numbers here")
    parser.add_argument("--merge", type=Path, metavar="JSON",
                        help="a saved table (--json) of the same data: its rows join this run's, "
                        "a row run again replaced, so one variant can be added or rerun")
    parser.add_argument("--doc", type=Path, help="put the table into this markdown file, between "
                        "<!-- table:COLLECTION --> and <!-- /table:COLLECTION -->")
    args = parser.parse_args()
    table = run(args)
    if args.merge:
        table = merged(json.loads(args.merge.read_text()), table)
    if args.json:
        harness.write_json(args.json, table)
    print(markdown(table))
    if args.doc:
        write_doc(args.doc, args.collection, markdown(table))


if __name__ == "__main__":
    main()
