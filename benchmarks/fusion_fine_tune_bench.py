"""Does fine-tuning the GO policy's fusion head on MEASURED speedups help on programs it never saw?

1. Fine-tune: the shipped policy, `opt train --measure`'s loop (tuning/fusion_fine_tune.py) on
   training-family programs (`--train`), `--rounds` x `--samples` measured configs each.
2. Compare, per held-out program (`--programs`; by default the three where fusion_bench's oracle
   beat XLA's fusion beyond the noise, docs/go.md): the shipped and the fine-tuned policy each
   propose `--measured` configs (their sampled proposals ranked by the module roofline, as
   `opt fuse --measure` does), all measured in one batch beside the default; each policy's
   fastest is then re-measured with the other's in a confirmation batch beside fresh default
   replicas, and the gains reported are the confirmation's.

    python benchmarks/fusion_fine_tune_bench.py --out docs/img/fusion_fine_tune_bench.json

Measure on a quiet machine.
"""

from __future__ import annotations

import time
from pathlib import Path

import harness
from hlotune.compiler.measurement.measure import MeasureSettings, measure
from hlotune.opt.commands import PRETRAINED_DIR
from hlotune.opt.fusion_fine_tune import FineTuneSettings, fine_tune
from hlotune.opt.measured_fusion import FusionProblem, best_of, policy_proposals, ranked
from hlotune.opt.policy import GOPolicy

TRAIN = ("zoo:transformer@small", "zoo:gpt@small", "zoo:resnet@small", "corpus:hf-bert@small")
PROGRAMS = ("zoo:unet@small", "zoo:gnn@small", "corpus:hf-whisper@tiny")


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--train", nargs="+", default=list(TRAIN))
    harness.add_common(parser, programs=list(PROGRAMS))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--measured", type=int, default=4, help="proposals measured per policy and program")
    harness.add_common(parser, seed=0, out=Path("fusion_fine_tune_bench.json"))
    args = parser.parse_args()
    shipped, _ = GOPolicy.load(PRETRAINED_DIR)
    tuned, _ = GOPolicy.load(PRETRAINED_DIR)
    start = time.perf_counter()
    steps = fine_tune(tuned, [FusionProblem.load(p) for p in args.train],
                      FineTuneSettings(rounds=args.rounds, samples=args.samples, seed=args.seed),
                      lambda step: print(f"fine-tune round {step.round + 1} {step.program}: sampled "
                                         f"{step.mean_speedup:.3f}x, best {step.best_speedup:.3f}x "
                                         f"(noise {step.noise:.1%})", flush=True))
    fine_tune_s = time.perf_counter() - start
    rows = [compare(program, {"shipped": shipped, "fine-tuned": tuned}, args.measured, args.seed)
            for program in args.programs]
    print("\n" + markdown(rows))
    harness.write_json(args.out, {"settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
                                  "fine_tune_s": fine_tune_s, "steps": [s.__dict__ for s in steps], "rows": rows})


def markdown(rows: list[dict]) -> str:
    header = ("program", "noise floor", "shipped: confirmed speedup", "fine-tuned: confirmed speedup")
    return harness.markdown(header, [
        [row["program"], f"{row['noise']:.1%}",
         *("failed" if row[m] is None else f"{row[m]:.3f}x" for m in ("shipped", "fine-tuned"))]
        for row in rows], align="lrrr")


def compare(program: str, policies: dict, measured: int, seed: int) -> dict:
    """Each policy's `measured` best-ranked proposals in one batch, then each one's fastest
    re-measured together beside fresh default replicas."""
    problem = FusionProblem.load(program)
    chosen = {name: ranked(problem, policy_proposals(problem, policy, 64, seed))[:measured]
              for name, policy in policies.items()}
    explored = measure(program, list(dict.fromkeys(c for configs in chosen.values() for c in configs)),
                       MeasureSettings(seed=seed))
    by_config = {m.config: m for m in explored.measurements}
    fastest = {name: best_of(configs, by_config).best for name, configs in chosen.items()}
    finalists = [c for c in dict.fromkeys(fastest.values()) if c is not None]
    confirmed = measure(program, finalists, MeasureSettings(seed=seed + 1, rounds=10))
    again = {m.config: m for m in confirmed.measurements if m.ok}
    return {"program": program, "noise": confirmed.noise_floor, "proposals": {n: len(c) for n, c in chosen.items()},
            **{name: (confirmed.default_ns / again[c].median_ns if c in again else None)
               for name, c in fastest.items()}}


if __name__ == "__main__":
    main()
