"""Cost model v3 on held-out families: the kernel program model against every baseline, each
judged per program on its collected configs (builtin:SPACE/test, the programs with kernel
labels), nothing measured here.

Methods:
- kernels: pretrained:kernels (or --model), the sum of kernel predictions over each config's
  compiled module plus the learned overhead;
- flags-gnn: pretrained:flags, the whole-program GNN;
- gbdt-rank: baseline:gbdt-rank (the program graph and the config);
- analytical: baseline:analytical, the hand-written rule (layout: elements moved), nothing trained;
- gbdt-rank+compiled: the same trees also given the compiled module's summary
  (evaluation/compiled_baselines.py), trained on the train split's labelled programs;
- roofline-compiled: the compiled modules' roofline seconds, nothing trained;
- profiled-sum (a ceiling, not a method): the measured kernel times of the profile summed, what
  a perfect kernel model with no overhead term would predict.

Per program: Kendall tau and top-1 error (the best-scored config's runtime over the fastest, -1)
against the collection's runtimes, and Spearman's rho of the summed kernel prediction against
them (how well the sum tracks the program). Means over programs, with each program's numbers,
go to --out as JSON; --plot draws tau per program.

    python benchmarks/kernel_model_bench.py --out docs/img/kernel_model_bench.json --plot docs/img/kernel_model_bench.png
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import harness
import numpy as np
from scipy.stats import spearmanr

from hlotune.data.builtin import resolve
from hlotune.data.metrics import kendall_tau
from hlotune.data.npz import read_sample
from hlotune.evaluation.compiled_baselines import CompiledGbdtRank, compiled_summary, roofline_scores
from hlotune.evaluation.scorers import load_scorer
from hlotune.kernels.program_model import load_kernel_program_model
from hlotune.kernels.training import LabelledProgram, labelled_programs


def collected(program: LabelledProgram, space: str, split: str):
    return read_sample(resolve(f"builtin:{space}/{split}") / program.labels.path.name)


def bench(model_name: str, space: str) -> dict:
    model = load_kernel_program_model(model_name)
    if model is None:
        raise SystemExit(f"{model_name}: not a kernel program model")
    train, test = labelled_programs("train", (space,)), labelled_programs("test", (space,))
    summaries = {id(p): compiled_summary(model.from_labels(p.labels, p.configs), model.graphs) for p in train + test}
    gbdt_compiled = CompiledGbdtRank.fit([(collected(p, space, "train"), summaries[id(p)], p.labels.rows) for p in train])
    scorers = {name: load_scorer(name) for name in (f"pretrained:{space}", "baseline:gbdt-rank",
                                                    "baseline:analytical")}
    rows = []
    for program in test:
        sample = collected(program, space, "test")
        compiled = model.from_labels(program.labels, program.configs)
        predicted = model.program_ns(compiled)
        scores = {
            "kernels": np.log(predicted),
            f"{space}-gnn": scorers[f"pretrained:{space}"](sample)[program.labels.rows],
            "gbdt-rank": scorers["baseline:gbdt-rank"](sample)[program.labels.rows],
            "analytical": scorers["baseline:analytical"](sample)[program.labels.rows],
            "gbdt-rank+compiled": gbdt_compiled.scores(sample, summaries[id(program)], program.labels.rows),
            "roofline-compiled": roofline_scores(summaries[id(program)]),
            "profiled-sum": np.nansum(program.labels.ns, axis=1),
        }
        measured = program.measured_ns
        rows.append({
            "program": program.labels.path.stem,
            "configs": len(measured),
            "kernels_rho": float(spearmanr(predicted, measured)[0]),
            **{f"{name}_tau": kendall_tau(measured, s) for name, s in scores.items()},
            **{f"{name}_top1": float(measured[np.argmin(s)] / measured.min() - 1) for name, s in scores.items()},
        })
    methods = [key.removesuffix("_tau") for key in rows[0] if key.endswith("_tau")]
    means = {m: {"tau": float(np.mean([r[f"{m}_tau"] for r in rows])),
                 "top1": float(np.mean([r[f"{m}_top1"] for r in rows]))} for m in methods}
    return {"model": model_name, "space": space, "train_programs": len(train), "test_programs": len(test),
            "overhead_per_call_ns": model.overhead.per_call_ns, "kernels_rho_median": float(np.median([r["kernels_rho"] for r in rows])),
            "means": means, "programs": rows}


def plot(result: dict, path: Path) -> None:
    methods = list(result["means"])
    programs = [r["program"] for r in result["programs"]]
    figure, axes = harness.subplots(figsize=(max(8, len(programs) * 0.45), 4.5))
    width = 0.8 / len(methods)
    for i, method in enumerate(methods):
        axes.bar(np.arange(len(programs)) + i * width, [r[f"{method}_tau"] for r in result["programs"]], width,
                 label=f"{method} (mean {result['means'][method]['tau']:.3f})")
    axes.set_xticks(np.arange(len(programs)) + 0.4, programs, rotation=60, ha="right", fontsize=7)
    axes.set(ylabel="Kendall tau vs measured", title=f"builtin:{result['space']}/test: configs ranked per program")
    axes.legend(fontsize=7)
    harness.save_figure(figure, path, dpi=120)


def main() -> int:
    parser = harness.parser(__doc__, out=None, plot=None)
    parser.add_argument("--model", default="pretrained:kernels")
    parser.add_argument("--space", default="flags", choices=("flags", "layout"))
    args = parser.parse_args()
    result = bench(args.model, args.space)
    print(json.dumps({k: v for k, v in result.items() if k != "programs"}, indent=1))
    if args.out:
        harness.write_json(args.out, result, end="\n")
    if args.plot:
        plot(result, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
