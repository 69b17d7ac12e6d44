"""Verification benchmark: where should a fleet tune time the decisions it kept?

`hlotune fleet tune` times each kept decision beside jax.jit in its own process, after its
tunes (tuning/verification.py): torch loaded, many programs compiled and measured there. The fleet
benchmark's after-run times the same decision in a fresh process, through `hlotune.jit`, as the
program runs (fleet_bench.py). This times each decision of one fleet benchmark run again in
fresh processes, with the same timing as the fleet tune's (tuning/verification.py's time_config),
and sets the three beside each other: which reading says what the program delivers? A reading
that differs from the after-run by more than a process's noise misleads both the floor a
decision must clear (VERIFIED_FLOOR) and what `fleet report` predicts.

    python benchmarks/verify_bench.py docs/img/fleet_bench_22.jsonl --kind everything --out verify.jsonl
    python benchmarks/verify_bench.py --report verify.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import harness


def fresh(location: str, name: str, rounds: int) -> float:
    """The decision's speedup over jax.jit, timed in a new process."""
    command = [sys.executable, __file__, "--worker", location, name, "--rounds", str(rounds)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"{name}: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])["speedup"]


def _worker(location: str, name: str, rounds: int) -> dict:
    from hlotune.fleet.recorded import recorded_spec
    from hlotune.programs import load_program
    from hlotune.tuning.storage import TuningDatabase
    from hlotune.tuning.verification import time_config

    with TuningDatabase(location) as db:
        recording = next(r for r in db.recordings() if r.name == name)
        decision, spec = db.best(recording.fingerprint), recorded_spec(db, recording)
    return {"speedup": time_config(load_program(spec), decision.chosen, rounds).speedup}


def measure(row: dict, location: str, processes: int, rounds: int) -> list[dict]:
    """Per program the run verified: the fleet tune's reading, `processes` fresh ones, and the
    after-run's delivered speedup."""
    return [{"program": name, "in_tune": in_tune, "after_run": row["after"][name].get("delivered"),
             "fresh": [fresh(location, name, rounds) for _ in range(processes)]}
            for name, in_tune in row["tuned"]["verified"].items()]


def report(rows: list[dict]) -> str:
    cells = [[r["program"], f"{r['in_tune']:.3f}x", " ".join(f"{s:.3f}x" for s in r["fresh"]),
              f"{r['after_run']:.3f}x" if r["after_run"] else "—"] for r in rows]
    table = harness.markdown(("program", "in the fleet tune's process", "fresh processes", "after-run"),
                             cells, align="lrrr")
    return table + "\n\n" + agreement(rows)


def agreement(rows: list[dict]) -> str:
    """How far each reading is from the after-run: the median and largest |log ratio|, as a
    percentage, and the decisions each would apply (>= VERIFIED_FLOOR) that delivered < 0.99x."""
    from hlotune.tuning.storage.fleet_log import VERIFIED_FLOOR

    rows = [r for r in rows if r["after_run"]]
    readings = {"in the fleet tune's process": [r["in_tune"] for r in rows],
                "fresh process (median)": [float(np.median(r["fresh"])) for r in rows]}
    cells = []
    for label, values in readings.items():
        errors = [abs(math.log(v / r["after_run"])) for v, r in zip(values, rows)]
        wrong = [r["program"] for v, r in zip(values, rows) if v >= VERIFIED_FLOOR and r["after_run"] < 0.99]
        cells.append([label, f"{100 * np.median(errors):.1f}%", f"{100 * max(errors):.1f}%", ", ".join(wrong) or "none"])
    return harness.markdown(("reading", "median error (log ratio)", "largest", "applied, delivered < 0.99x"),
                            cells, align="lrrl")


def main() -> None:
    parser = harness.parser(__doc__, out=None)
    parser.add_argument("results", type=Path, nargs="?", help="a fleet_bench.py results file")
    parser.add_argument("--kind", default="everything", help="the run's allocation (default: everything)")
    parser.add_argument("--draw", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folder", type=Path, help="the fleet benchmark's databases (default: its own default)")
    parser.add_argument("--processes", type=int, default=2, help="fresh processes a decision (default 2)")
    parser.add_argument("--rounds", type=int, default=10, help="interleaved rounds, as fleet tune's (default 10)")
    parser.add_argument("--report", type=Path, help="print the tables of a results file and stop")
    parser.add_argument("--worker", nargs=2, metavar=("DB", "PROGRAM"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(_worker(*args.worker, args.rounds)))
        return
    if args.report:
        print(report(harness.read_rows(args.report, lines=True)))
        return
    if args.results is None:
        parser.error("name a fleet_bench.py results file, or --report")
    runs = harness.read_rows(args.results, lines=True)
    row = next((r for r in runs if (r["kind"], r.get("draw"), r.get("seed")) == (args.kind, args.draw, args.seed)), None)
    if row is None:
        parser.error(f"{args.results} holds no {args.kind} run of draw {args.draw}, seed {args.seed}")
    folder = args.folder or Path(tempfile.gettempdir()) / f"hlotune-fleet-bench-{args.results.stem}"
    location = str(folder / f"{args.kind}-draw{args.draw}-seed{args.seed}.sqlite")
    rows = measure(row, location, args.processes, args.rounds)
    if args.out:
        harness.write_rows(args.out, rows, lines=True)
    print(report(rows))


if __name__ == "__main__":
    main()
