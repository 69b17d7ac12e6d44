"""Collection benchmark: rate, noise floor and runtime spread per graph, and a plot.

Reads what `hlotune collect` wrote (the summaries beside each npz): by default the built-in
dataset. With --programs it first collects those programs into --out (a fresh measurement,
timed end to end), then reports on them.

    python benchmarks/collect_bench.py                                  # builtin:flags, builtin:layout
    python benchmarks/collect_bench.py --programs zoo:mlp@small zoo:cnn@tiny --space flags --configs 16 --out /tmp/bench
    python benchmarks/collect_bench.py --programs ... --noise-targets none 0.02   # fixed vs adaptive sampling

With several --noise-targets, each program is collected once per target, one after the other,
so the machine's drift falls on every mode alike; each mode gets its own folder and table.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
from matplotlib.ticker import FuncFormatter

import harness
from hlotune.data.builtin import resolve
from hlotune.data.npz import read_sample
from hlotune.evaluation.evaluate import noise_ceiling

DEFAULT_FOLDERS = ("builtin:flags", "builtin:layout")


def main() -> None:
    parser = harness.parser(__doc__, plot=Path("docs/img/runtime_spread.png"), json=False)
    parser.add_argument("folders", nargs="*", type=resolve, help="collected folders or builtin: names "
                        f"(default: {' '.join(DEFAULT_FOLDERS)})")
    parser.add_argument("--programs", nargs="+", help="collect these first (fresh measurement)")
    parser.add_argument("--space", default="flags", choices=("flags", "layout"))
    parser.add_argument("--configs", type=int, default=16)
    parser.add_argument("--noise-targets", nargs="+", default=["none"],
                        help="'none' (fixed samples) and/or relative CI half-widths, e.g. none 0.02")
    parser.add_argument("--out", type=Path, default=Path("/tmp/hlotune-collect-bench"),
                        help="the folder --programs are collected into")
    args = parser.parse_args()
    folders = _collect(args) if args.programs else args.folders or list(map(resolve, DEFAULT_FOLDERS))
    report = {str(folder): _report(folder) for folder in folders if folder.is_dir()}
    for folder, rows in report.items():
        _print_table(folder, rows)
    _plot(report, args.plot)
    if args.json:
        print(json.dumps({folder: _totals(rows) for folder, rows in report.items()}))


def _collect(args) -> list[Path]:
    from hlotune.collect.collector import CollectSettings, collect

    stamp = int(time.time())
    modes = {target: (args.out / f"{args.space}-{stamp}-noise-{target}",
                      CollectSettings(space=args.space, configs=args.configs,
                                      noise_target=None if target == "none" else float(target)))
             for target in args.noise_targets}
    for spec in args.programs:
        for out, settings in modes.values():
            collect(spec, settings, out)
    return [out for out, _ in modes.values()]


def _report(folder: Path) -> list[dict]:
    rows = []
    for summary_path in sorted(folder.rglob("*.json")):
        summary = json.loads(summary_path.read_text())
        result = summary["result"]
        sample = read_sample(summary_path.with_suffix(".npz"))
        runtimes = sample.configs.config_runtime.astype(float)
        rows.append({
            "graph": summary_path.stem,
            "split": summary_path.parent.name,
            "configs": result["configs"],
            "failed": result["failed"],
            "seconds": result["seconds"],
            "rate": (result["configs"] + result["failed"]) / result["seconds"],
            "noise_floor": result["noise_floor"],
            "spread": result["spread"],
            "noise_ceiling": noise_ceiling(sample),
            "relative": (runtimes / runtimes[0]).tolist(),  # row 0 is the default config
        })
    return rows


def _totals(rows: list[dict]) -> dict:
    configs = sum(r["configs"] + r["failed"] for r in rows)
    seconds = sum(r["seconds"] for r in rows)
    return {
        "graphs": len(rows),
        "configs": configs,
        "configs_per_second": configs / seconds if seconds else float("nan"),
        "median_noise_floor": float(np.median([r["noise_floor"] for r in rows])),
        "median_spread": float(np.median([r["spread"] for r in rows])),
        "failed": sum(r["failed"] for r in rows),
        "noise_ceiling_by_split": {  # mean over the split's graphs, as `hlotune eval` reports it
            split: float(np.mean(taus))
            for split in sorted({r["split"] for r in rows})
            if (taus := [r["noise_ceiling"] for r in rows if r["split"] == split and r["noise_ceiling"] is not None])
        },
    }


def _print_table(folder: str, rows: list[dict]) -> None:
    print(f"\n{folder}")
    print(harness.text_table(
        ("graph", "split", "configs", "failed", "cfg/s", "noise", "spread"),
        [(r["graph"], r["split"], str(r["configs"]), str(r["failed"]), f"{r['rate']:.2f}",
          f"{r['noise_floor']:.1%}", f"{r['spread']:.2f}x") for r in rows],
        align="llrrrrr", rule=False))
    totals = _totals(rows)
    print(f"{totals['graphs']} graphs, {totals['configs']} configs at {totals['configs_per_second']:.2f} "
          f"configs/s; median noise floor {totals['median_noise_floor']:.1%}, "
          f"median spread {totals['median_spread']:.2f}x")
    print("noise ceiling (Kendall tau, odd vs even samples, mean per split): " + ", ".join(
        f"{split} {tau:.3f}" for split, tau in totals["noise_ceiling_by_split"].items()))


def _plot(report: dict[str, list[dict]], path: Path) -> None:
    """Runtime of every config relative to the default, one box per graph, per collection."""
    panels = [(folder, rows) for folder, rows in report.items() if rows]
    if not panels:
        return
    figure, axes = harness.subplots(len(panels), 1, figsize=(14, 4.5 * len(panels)), squeeze=False)
    for axis, (folder, rows) in zip(axes[:, 0], panels):
        axis.boxplot([r["relative"] for r in rows], showfliers=True, flierprops={"markersize": 2})
        axis.set_xticks(range(1, len(rows) + 1), [r["graph"] for r in rows], rotation=90, fontsize=7)
        axis.axhline(1.0, color="grey", linewidth=0.8)
        axis.set_yscale("log")
        axis.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}x"))
        axis.yaxis.set_minor_formatter(FuncFormatter(lambda value, _: f"{value:g}x"))
        axis.set_ylabel("runtime / default")
        axis.set_title(f"{Path(folder).name}: runtime of each measured config relative to the default")
    harness.save_figure(figure, path)


if __name__ == "__main__":
    main()
