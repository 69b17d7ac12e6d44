"""Delivery benchmark: is a decision applied by hlotune.jit worth what its tune reported?

The AutoFDO loop, program by program (fleet_programs.py), each in fresh processes:

1. record: a worker process runs the program under `hlotune.jit` (it is exported and recorded);
2. tune: `hlotune.tune` on the recorded program (flags, `--budget`, the default engine), from
   the database alone, as `hlotune tune NAME` does;
3. apply: a new worker process runs the program under `hlotune.jit` (which finds the decision)
   and under `jax.jit`, interleaved (compiler/measurement/call_timing.py: blocks of calls in a fresh random
   order every round, each call waiting for its outputs), and reports the delivered speedup,
   jax.jit's per-call time over hlotune.jit's, from the medians over rounds.

Issue 48's goals, per program whose tune kept a config: the delivered gain is at least 0.9 of the
reported one ((delivered - 1) / (reported - 1)), and no applied decision runs below 0.99x of
jax.jit. A program whose tune kept the default runs jax.jit's own executable: its delivered
speedup is the noise of the comparison itself. Rows are kept as they finish (--out, JSON lines),
so a stopped run resumes.

    python benchmarks/jit_delivery_bench.py --programs euler2d tv3d kmeans --budget 16 --out deliver.jsonl
    python benchmarks/jit_delivery_bench.py --report deliver.jsonl
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import harness

ROUNDS = 30
RECORD_CALLS = 20


def _worker(mode: str, name: str, db: str, rounds: int) -> dict:
    """In a fresh process: `record` runs the program under hlotune.jit; `apply` times it beside
    jax.jit."""
    import jax

    import hlotune
    from fleet_programs import BY_NAME
    from hlotune.compiler.measurement.call_timing import interleaved_call_times

    fn, args = BY_NAME[name].make()
    ours = hlotune.jit(fn, db=db)
    if mode == "record":
        for _ in range(RECORD_CALLS):
            jax.block_until_ready(ours(*args))
        return {"choice": ours.choice(*args).source, "fingerprint": ours.choice(*args).fingerprint}
    plain = jax.jit(fn)
    times = interleaved_call_times({"jit": lambda: plain(*args), "hlotune.jit": lambda: ours(*args)},
                                   rounds=rounds, block_s=0.1)
    medians = {k: float(sorted(t)[len(t) // 2]) for k, t in times.items()}
    choice = ours.choice(*args)
    return {"choice": choice.source, "fingerprint": choice.fingerprint, "config": choice.config.to_dict(),
            "jit_ms": medians["jit"] * 1e3, "hlotune_jit_ms": medians["hlotune.jit"] * 1e3,
            "delivered": medians["jit"] / medians["hlotune.jit"]}


def _in_worker(mode: str, name: str, db: str, rounds: int) -> dict:
    command = [sys.executable, __file__, "--worker", mode, name, "--db", db, "--rounds", str(rounds)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"{name} {mode}: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _tune(fingerprint: str, db: str, budget: int, seed: int) -> dict:
    import hlotune
    from hlotune.fleet.recorded import find_recording, recorded_spec
    from hlotune.tuning.storage import TuningDatabase

    with TuningDatabase(db) as database:
        spec = recorded_spec(database, find_recording(database, fingerprint))
    result = hlotune.tune(spec, budget=budget, seed=seed, db=db, progress=False)
    return {"fingerprint": result.fingerprint, "reported": result.speedup, "noise": result.noise,
            "kept_default": result.kept_default, "found": result.found_speedup,
            "candidate_speedup": result.candidate_speedup, "tune_s": result.seconds}


def run(name: str, folder: Path, budget: int, seed: int, rounds: int) -> dict:
    db = str(folder / f"{name}.sqlite")
    recorded = _in_worker("record", name, db, rounds)
    tuned = _tune(recorded["fingerprint"], db, budget, seed)
    applied = _in_worker("apply", name, db, rounds)
    return {"program": name, "budget": budget, "seed": seed, **tuned, **applied}


def report(rows: list[dict]) -> str:
    cells = []
    for row in rows:
        kept = not row["kept_default"]
        share = (row["delivered"] - 1) / (row["reported"] - 1) if kept and row["reported"] > 1 else math.nan
        cells.append([row["program"], "config" if kept else "default", f"{row['noise']:.1%}",
                      f"{row['reported']:.3f}x", f"{row['delivered']:.3f}x",
                      "—" if math.isnan(share) else f"{share:.0%}", f"{row['jit_ms']:.2f}",
                      "below 0.99x" if kept and row["delivered"] < 0.99 else ""])
    header = ("program", "kept", "noise floor", "reported", "delivered", "of the gain", "jax.jit ms", "")
    return harness.markdown(header, cells, align="llrrrrrl")


def main() -> None:
    if "--worker" in sys.argv:
        index = sys.argv.index("--worker")
        mode, name = sys.argv[index + 1:index + 3]
        db, rounds = sys.argv[sys.argv.index("--db") + 1], int(sys.argv[sys.argv.index("--rounds") + 1])
        print(json.dumps(_worker(mode, name, db, rounds)))
        return
    parser = harness.parser(__doc__, programs=["euler2d", "tv3d", "jacobi2d", "kmeans", "mlp_adam"], seed=0)
    parser.add_argument("--budget", type=int, default=16, help="configs a tune evaluates (default 16)")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="interleaved rounds of the apply run")
    parser.add_argument("--report", type=Path, help="print the table of a results file and stop")
    harness.add_common(parser, out=None)
    args = parser.parse_args()
    if args.report:
        print(report(harness.read_rows(args.report, lines=True)))
        return
    log = harness.RowLog(args.out or Path(tempfile.mkdtemp()) / "rows.jsonl", lines=True)
    with tempfile.TemporaryDirectory() as folder:
        for name in log.todo("program", args.programs):
            row = run(name, Path(folder), args.budget, args.seed, args.rounds)
            print(f"{name}: reported {row['reported']:.3f}x, delivered {row['delivered']:.3f}x", file=sys.stderr)
            log.add(row)
    print(report([row for row in log.rows if row["program"] in args.programs]))
    print(f"\n{os.cpu_count()} cores; budget {args.budget}, seed {args.seed}, {args.rounds} rounds.")


if __name__ == "__main__":
    main()
