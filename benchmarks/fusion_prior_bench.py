"""How well the fusion space's prior (hlo/costs.module_seconds) ranks fusion configs before any
is compiled, against their measured runtimes on this CPU.

Per program: `--configs` random valid fusion configs (each gene moved with probability 1/4, as
the tuner's random draws) measured in one batch beside XLA's default by the tuner's worker, and
scored by the module roofline of the module each makes. Per program: Kendall's tau of prior
against measured median, and the regret of the prior's favourite (its measured time over the
fastest measured). Rows keep every config with its measured ms and prior seconds, so a changed
prior is scored on the same measurements (--rescore). Appends to --out as JSON lines; resumes.

    python benchmarks/fusion_prior_bench.py --out ../docs/img/fusion_prior_bench.jsonl
    python benchmarks/fusion_prior_bench.py --out ../docs/img/fusion_prior_bench.jsonl --report
    python benchmarks/fusion_prior_bench.py --out ../docs/img/fusion_prior_bench.jsonl --rescore

Measure on a quiet machine.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau

import harness
from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.measurement.measure import MeasureSettings, measure
from hlotune.opt.measured_fusion import FusionProblem, random_configs
from hlotune.tuning.models.roofline import ModuleRoofline

PROGRAMS = ("zoo:mobilenet@small", "corpus:jaxmd-lj@small", "zoo:unet@small", "zoo:vit@small")


def bench(program: str, count: int, seed: int) -> dict:
    problem = FusionProblem.load(program)
    configs = random_configs(problem.space, count, random.Random(seed))
    prior = ModuleRoofline(problem.module).predict(configs)
    batch = measure(program, configs, MeasureSettings(seed=seed))
    by_config = {m.config: m for m in batch.measurements}
    rows = [{"config": c.to_dict(), "prior_s": float(p), "status": by_config[c].status,
             "ms": by_config[c].median_ns / 1e6 if by_config[c].ok else None}
            for c, p in zip(configs, prior)]
    return {"program": program, "seed": seed, "default_ms": batch.default_ns / 1e6,
            "noise": batch.noise_floor, "configs": rows, **scores(rows)}


def rescored(row: dict) -> dict:
    """`row` with its configs priced again by the prior as the code now has it."""
    configs = [CompileConfig.from_dict(c["config"]) for c in row["configs"]]
    prior = ModuleRoofline(FusionProblem.load(row["program"]).module).predict(configs)
    rows = [c | {"prior_s": float(p)} for c, p in zip(row["configs"], prior)]
    return row | {"configs": rows, **scores(rows)}


def scores(rows: list[dict], prior: str = "prior_s") -> dict:
    """Kendall's tau of `prior` against measured ms, and the prior favourite's regret, over the
    configs that ran and that the prior could price."""
    kept = [r for r in rows if r["ms"] is not None and np.isfinite(r[prior])]
    ms, scored = np.array([r["ms"] for r in kept]), np.array([r[prior] for r in kept])
    return {"tau": float(kendalltau(scored, ms)[0]), "regret": float(ms[np.argmin(scored)] / ms.min()),
            "scored": len(kept)}


def markdown(rows: list[dict]) -> str:
    cells = [[r["program"], f"{r['default_ms']:.2f}", f"{r['noise']:.1%}", str(r["scored"]), f"{r['tau']:.2f}",
              f"{r['regret']:.3f}x"] for r in rows]
    return harness.markdown(("program", "XLA ms", "noise", "configs", "Kendall tau", "favourite's regret"), cells,
                            align="lrrrrr")


def main() -> None:
    parser = harness.parser(__doc__, programs=list(PROGRAMS), seed=0, out=Path("fusion_prior_bench.jsonl"))
    parser.add_argument("--configs", type=int, default=24, help="random fusion configs a program")
    parser.add_argument("--report", action="store_true", help="print --out's rows as a table")
    parser.add_argument("--rescore", action="store_true", help="price --out's configs again with the current prior")
    args = parser.parse_args()
    if args.report:
        print(markdown(harness.read_rows(args.out, lines=True)))
        return
    log = harness.RowLog(args.out, lines=True)
    if args.rescore:
        for row in list(log.rows):
            log.replace(row, rescored(row))
        print(markdown(log.rows))
        return
    for program in log.todo("program", args.programs):
        row = bench(program, args.configs, args.seed)
        log.add(row)
        print(json.dumps({k: v for k, v in row.items() if k != "configs"}), flush=True)


if __name__ == "__main__":
    main()
