"""Predicting where tuning pays (issue 49): the gain model against the opcode histogram, each
trained with the program's family held out, on the shipped flags collection (151 programs, 43
families); nothing measured here.

A program's gain is log(default / fastest config) over its collected configs that keep results.
Per method, over the 43 folds' predictions together:
- Spearman's rho of predicted against true gain;
- the share of the total log gain held by the quarter of programs it ranks highest (a random
  quarter holds 25% in expectation, the best quarter what the oracle row says), and the same
  without haiku-resnet, one family holding about a quarter of the total by itself.

Methods:
- gain model: hlotune/fleet/gain_model.py on program_features.py (its bagging seeds: mean ± sd);
- opcode histogram: the issue's first probe, LightGBM on each graph's opcode shares and log node
  and edge counts with the GBDT baseline's parameters (models/baselines/gbdt.py), and again
  with the gain model's small trees and loss, so that the features are what differs;
- probe: measured, not learned, for scale: the best of the collection's first 5 configs beside
  the default (single changes of the default), 5 measurements a program where the model needs
  a lowering. It shares those measurements with the label, which flatters it.

Then the programs no collected family resembles: the seven numerical programs of the tuning
benchmark, predicted by the model trained on the whole collection, against the best speedup the
default tuner found on each at budget 32 (median of seeds 0-2, docs/img/tune_bench_v4.json).

    python benchmarks/gain_model_bench.py
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import harness
import numpy as np
from scipy.stats import spearmanr

from hlotune.data.builtin import resolve
from hlotune.data.dataset import Dataset
from hlotune.fleet.allocation import MIN_GAIN
from hlotune.fleet.gain_model import PARAMS, ROUNDS, GainModel
from hlotune.fleet.gain_rows import COLLECTION, GainRows, best_gain, collection_rows
from hlotune.fleet.program_features import FEATURE_NAMES
from hlotune.hlo.opcodes import NUM_OPCODES
from hlotune.models.baselines import gbdt
from hlotune.programs import load_program

UNSEEN = Path(__file__).resolve().parents[1] / "docs" / "img" / "tune_bench_v4.json"
PROBE_CONFIGS = 6  # the default and the next 5 rows
OUTLIER = "haiku-resnet"
Fit = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def leave_family_out(rows: GainRows, features: np.ndarray, fit: Fit) -> np.ndarray:
    """Each program's prediction by a model fitted with its whole family held out."""
    families = np.array(rows.families)
    predicted = np.zeros(len(families))
    for family in dict.fromkeys(rows.families):
        held = families == family
        predicted[held] = fit(features[~held], rows.gains[~held], features[held])
    return predicted


def lightgbm_fit(params: dict, rounds: int) -> Fit:
    import lightgbm

    def fit(x: np.ndarray, y: np.ndarray, held: np.ndarray) -> np.ndarray:
        data = lightgbm.Dataset(x, y, params={"verbosity": -1})
        return lightgbm.train(params, data, num_boost_round=rounds).predict(held)
    return fit


def gain_model_fit(seed: int) -> Fit:
    def fit(x: np.ndarray, y: np.ndarray, held: np.ndarray) -> np.ndarray:
        return GainModel.train(GainRows(x, y, (), ()), seed=seed).predict_features(held)
    return fit


def scores(predicted: np.ndarray, rows: GainRows) -> tuple[float, float, float]:
    """Spearman's rho, the top quarter's share of log gain, and that share without OUTLIER."""
    kept = np.array(rows.families) != OUTLIER
    return (float(spearmanr(predicted, rows.gains)[0]), top_quarter_share(predicted, rows.gains),
            top_quarter_share(predicted[kept], rows.gains[kept]))


def top_quarter_share(predicted: np.ndarray, gains: np.ndarray) -> float:
    top = np.argsort(-predicted, kind="stable")[:len(gains) // 4]
    return float(gains[top].sum() / gains.sum())


def histograms_and_probes(rows: GainRows) -> tuple[np.ndarray, np.ndarray]:
    """Per program of `rows`: the opcode-histogram features and the probe's log gain."""
    dataset = Dataset(resolve(COLLECTION))
    by_name = {}
    for path, sample in zip(dataset.paths, dataset):
        graph, configs = sample.graph, sample.configs
        shares = np.bincount(graph.node_opcode.astype(np.int64), minlength=NUM_OPCODES) / max(graph.num_nodes, 1)
        histogram = np.concatenate((shares, np.log1p([graph.num_nodes, graph.num_edges])))
        probe = replace(configs, config_feat=configs.config_feat[:PROBE_CONFIGS],
                        config_runtime=configs.config_runtime[:PROBE_CONFIGS], config_runtime_samples=None)
        by_name[path.stem] = histogram, best_gain(probe)
    return np.array([by_name[n][0] for n in rows.names]), np.array([by_name[n][1] for n in rows.names])


def unseen(seeds: int) -> dict[str, tuple[float, float]]:
    """Per numerical program of the tuning benchmark: (predicted speedup, seed-mean over the
    model's seeds; the default tuner's found speedup at 32, median of seeds)."""
    found = defaultdict(list)
    for run in json.loads(UNSEEN.read_text()):
        if run["strategy"] == "default" and len(run["history"]) == 32:
            found[run["program"]].append(max(run["history"]))
    models = [GainModel.train(collection_rows(), seed=seed) for seed in range(seeds)]
    return {name: (math.exp(np.mean([m.predict(load_program(name, abstract=True)) for m in models])),
                   float(np.median(speedups))) for name, speedups in found.items()}


def bench(seeds: int) -> dict:
    started = time.perf_counter()
    rows = collection_rows()
    GainModel.train(rows)  # imports lightgbm, so that the timing below is the fit alone
    fit_started = time.perf_counter()
    model = GainModel.train(rows)
    fit_s = time.perf_counter() - fit_started
    histograms, probes = histograms_and_probes(rows)
    small_trees = lightgbm_fit(PARAMS, ROUNDS)
    model_runs = [leave_family_out(rows, rows.features, gain_model_fit(seed)) for seed in range(seeds)]
    methods = {
        "gain model": [scores(p, rows) for p in model_runs],
        "opcode histogram, GBDT baseline's trees": [scores(leave_family_out(
            rows, histograms, lightgbm_fit(gbdt.PARAMS, gbdt.ROUNDS)), rows)],
        "opcode histogram, gain model's trees": [scores(leave_family_out(rows, histograms, small_trees), rows)],
        "probe: best of the first 5 configs (measured)": [scores(probes, rows)],
        "oracle": [scores(rows.gains, rows)],
    }
    skipped = np.mean([np.exp(p) < MIN_GAIN for p in model_runs], axis=0) > 0.5
    importance = model.booster.feature_importance("gain")
    return {
        "programs": len(rows.names), "families": len(set(rows.families)), "seeds": seeds,
        "fit_s": fit_s, "seconds": time.perf_counter() - started,
        "methods": {name: {"rho": [r[0] for r in runs], "top_quarter": [r[1] for r in runs],
                           "top_quarter_without_outlier": [r[2] for r in runs]} for name, runs in methods.items()},
        "skipped": {"min_gain": MIN_GAIN, "programs": int(skipped.sum()),
                    "log_gain_share": float(rows.gains[skipped].sum() / rows.gains.sum()),
                    "largest_gain": float(math.exp(rows.gains[skipped].max(initial=0.0)))},
        "top_features": [FEATURE_NAMES[i] for i in np.argsort(-importance)[:6]],
        "unseen": unseen(seeds),
    }


def table(result: dict) -> str:
    def cell(values: list[float], percent: bool) -> str:
        scale, unit = (100, "%") if percent else (1, "")
        mean = f"{np.mean(values) * scale:.{0 if percent else 2}f}{unit}"
        return mean if len(values) == 1 else f"{mean} ± {np.std(values) * scale:.{0 if percent else 2}f}"
    rows = [[name, cell(m["rho"], False), cell(m["top_quarter"], True), cell(m["top_quarter_without_outlier"], True)]
            for name, m in result["methods"].items()]
    rows.insert(-1, ["random quarter (expected)", "0", "25%", "25%"])
    header = ["method (family held out)", "Spearman", "top quarter's log gain", f"... without {OUTLIER}"]
    return harness.markdown(header, rows, align="lrrr")


def main() -> int:
    parser = harness.parser(__doc__, json=False)
    parser.add_argument("--seeds", type=int, default=5, help="gain model seeds (default: %(default)s)")
    args = parser.parse_args()
    result = bench(args.seeds)
    skipped = result["skipped"]
    print(table(result))
    print(f"\n{result['programs']} programs, {result['families']} families; the gain model fits in "
          f"{result['fit_s']:.2f} s; predicted below {skipped['min_gain']}x (not probed by --allocation model): "
          f"{skipped['programs']} programs, {skipped['log_gain_share']:.1%} of the log gain, the largest "
          f"{skipped['largest_gain']:.2f}x; its top features: {', '.join(result['top_features'])}")
    predicted, found = zip(*result["unseen"].values())
    print(f"\nSeven numerical programs of no collected family: Spearman {spearmanr(predicted, found)[0]:.2f}\n")
    rows = [[name, f"{p:.2f}x", f"{f:.2f}x"] for name, (p, f) in result["unseen"].items()]
    print(harness.markdown(["program", "predicted", "found at 32"], rows, align="lrr"))
    print("\n    python benchmarks/gain_model_bench.py")
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
