"""Kernels tuned per hour: the tile model choosing what to measure, against measuring every
candidate (XTAT's claim: 20x more kernels at the same speedup).

Two parts, one report:

- replay, on the held-out kernels of `builtin:tile/test` (families no model trained on), where
  every candidate partitioning was measured: a model's top-k candidates per kernel are
  "measured" by reading their recorded times. The kernel speedup kept is the time the top-k
  save against XLA's choice, over what the best of all candidates saves, summed over kernels
  (time-weighted: a kernel matters by the time it takes; a few heavy kernels decide it), and
  per kernel: how much slower its kept candidate is than its best (mean), and how often the
  top-k holds the best. Exact and repeatable: nothing runs.
- live (--live PROGRAM ...): `hlotune tune PROGRAM --space tile` for real, once per
  per-kernel count, each in a fresh database, timed: kernels tuned per hour is the program's
  tunable kernels over the tune's wall time. "all" measures every candidate.

    python benchmarks/kernel_tune_bench.py [--models pretrained:tile baseline:random fewer-partitions ...]
    python benchmarks/kernel_tune_bench.py --live zoo:vit@small --out docs/img/kernel_tune_bench.json

Measure the live part on a quiet machine.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

import harness
from hlotune.compiler.measurement.measure import MeasureSettings
from hlotune.data.dataset import Dataset
from hlotune.evaluation.scorers import load_scorer
from tile_rule_bench import rule_scores

XLA_CHOICE = 7  # config_feat column: 1 on the row of XLA's own choice
# A rule for --models: fewer partitions first, the same order for every kernel (tile_rule_bench.py).
RULE = "fewer-partitions"


def replay(model: str, data: str, per_kernel: int) -> dict:
    """Time-weighted kernel speedup kept by measuring the model's `per_kernel` favourites."""
    scorer = (lambda sample: rule_scores(sample, xla_first=False)) if model == RULE else load_scorer(model)
    default_total = best_total = kept_total = 0.0
    kernels, lost, hits = 0, [], 0
    for sample in Dataset(data):
        configs = sample.configs
        runtimes = configs.config_runtime.astype(float)
        xla = np.flatnonzero(configs.config_feat[:, XLA_CHOICE] == 1)
        if len(xla) != 1:
            continue
        default = runtimes[xla[0]]
        top = np.argsort(np.asarray(scorer(sample)), kind="stable")[:per_kernel]
        default_total += default
        best_total += min(default, runtimes.min())
        kept = min(default, runtimes[top].min())
        kept_total += kept
        kernels += 1
        lost.append(kept / min(default, runtimes.min()) - 1)
        hits += int(runtimes.argmin() in top)
    saved_best, saved_kept = default_total - best_total, default_total - kept_total
    return {"model": model, "per_kernel": per_kernel, "kernels": kernels,
            "speedup_all": default_total / best_total, "speedup_kept": default_total / kept_total,
            "saving_kept": saved_kept / saved_best if saved_best > 0 else 1.0,
            "lost": (kept_total - best_total) / default_total,
            "kernel_lost_mean": float(np.mean(lost)), "top_k_hit": hits / kernels}


def live(program: str, per_kernel: int | None, budget: int) -> dict:
    """One tile tune in a fresh database, ranked by the tile model; per_kernel None measures
    every candidate."""
    from hlotune.compiler.spaces.space import PARTITION_CHOICES
    from hlotune.tuning.tuner import tune

    with tempfile.TemporaryDirectory() as folder:
        started = time.monotonic()
        result = tune(program, space="tile", budget=budget, per_kernel=per_kernel or len(PARTITION_CHOICES),
                      model="pretrained:tile", db=Path(folder) / "db.sqlite",
                      progress=False, settings=MeasureSettings())
        seconds = time.monotonic() - started
    kernels = _tunable(program)
    return {"program": program, "per_kernel": per_kernel or "all", "seconds": seconds,
            "kernels": kernels, "kernels_per_hour": kernels * 3600 / seconds,
            "measurements": result.measurements, "speedup": result.speedup,
            "candidate_speedup": result.candidate_speedup, "kept_default": result.kept_default}


def _tunable(program: str) -> int:
    from hlotune.compiler.spaces.kernel_space import program_kernels
    from hlotune.compiler.configs.layouts import LayoutSpace
    from hlotune.compiler.spaces.space import UNTUNABLE_KINDS
    from hlotune.programs import load_program

    return sum(k.kind not in UNTUNABLE_KINDS for k in program_kernels(LayoutSpace(load_program(program))))


def main() -> None:
    parser = harness.parser(__doc__, out=None)
    parser.add_argument("--data", default="builtin:tile/test")
    parser.add_argument("--models", nargs="+", default=["pretrained:tile", "baseline:gbdt-rank",
                                                         "baseline:gbdt", "baseline:analytical",
                                                         "baseline:random", RULE])
    parser.add_argument("--per-kernel", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--live", nargs="*", default=[], metavar="PROGRAM")
    parser.add_argument("--budget", type=int, default=16)
    args = parser.parse_args()
    report = {"replay": [replay(m, args.data, k) for m in args.models for k in args.per_kernel],
              "live": [live(p, k, args.budget) for p in args.live for k in (*args.per_kernel, None)]}
    print(f"replay on {args.data}: time-weighted kernel speedup, top-k of each kernel measured\n")
    print(markdown(report))
    if args.out:
        harness.write_json(args.out, report)


def markdown(report: dict) -> str:
    """The replay's table, and the live runs' where there are any."""
    replay = harness.markdown(
        ("model", "k", "kernels", "speedup, all candidates", "speedup kept", "saving kept", "lost",
         "lost per kernel (mean)", "best in top-k"),
        [[r["model"], str(r["per_kernel"]), str(r["kernels"]), f"{r['speedup_all']:.3f}x",
          f"{r['speedup_kept']:.3f}x", f"{r['saving_kept']:.0%}", f"{r['lost']:.2%}",
          f"{r['kernel_lost_mean']:.1%}", f"{r['top_k_hit']:.0%}"] for r in report["replay"]])
    if not report["live"]:
        return replay
    return replay + "\n\n" + harness.markdown(
        ("program", "k", "kernels", "seconds", "kernels/hour", "measured configs", "speedup kept"),
        [[r["program"], str(r["per_kernel"]), str(r["kernels"]), f"{r['seconds']:.0f}",
          f"{r['kernels_per_hour']:.0f}", str(r["measurements"]), f"{r['speedup']:.3f}x"]
         for r in report["live"]])


if __name__ == "__main__":
    main()
