"""What a config costs on programs a user brings (Tuner v4's goal: at most 1.5x its compile time
plus the timed runs its noise target needs, on programs of 100 ms or more a run).

Each program is tuned once as a user would (`hlotune.tune`, flags, the default search) on a
database of its own. A callback stamps the search's batches; the database holds each measured
config's compile seconds, its samples and whether early stopping cut them short. Per program:

- search s per config: the search's wall time (asking, ranking, compiling, every timed run, the
  default's runs beside each batch) over the configs it measured;
- need s per config: each measured config's compile seconds plus its own samples times its
  median (the runs that config's measurement kept), the median over configs;
- cost ratio: the search's wall time over the sum of every measured config's need (the goal is
  at most 1.5);
- samples: the median count per config, and how many configs early stopping cut short;
- the final check's seconds and its rounds, after the search.

    python benchmarks/config_cost_bench.py                       # zoo:resnet@base, zoo:gpt@base
    python benchmarks/config_cost_bench.py --programs zoo:gpt@base --budget 8 --out cost.json
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import harness
from hlotune.tuning import Callback
from hlotune.tuning.storage import TuningDatabase
from hlotune.tuning.options import TuneOptions
from hlotune.tuning.tuner import tune

PROGRAMS = ["zoo:resnet@base", "zoo:gpt@base"]  # 140 ms and 97 ms a run on the 2-core machine
GOAL = 1.5


class BatchClock(Callback):
    """Monotonic stamps: the search's start, its last batch's end (the start if it measured
    none) and the tune's end, so the search and the final check are told apart."""

    def __init__(self) -> None:
        self.start = self.searched = self.end = 0.0

    def on_start(self, tuner) -> None:
        self.start = self.searched = time.monotonic()

    def after_batch(self, tuner, trials) -> None:
        self.searched = time.monotonic()

    def on_end(self, tuner) -> None:
        self.end = time.monotonic()


def measure(program: str, budget: int, seed: int, db_dir: Path) -> dict:
    """One tune of `program` and what its configs cost."""
    db = db_dir / f"{program.replace(':', '_').replace('@', '-')}-s{seed}-b{budget}.sqlite"
    db.unlink(missing_ok=True)
    clock = BatchClock()
    started = time.monotonic()
    result = tune(program, options=TuneOptions(space="flags", budget=budget, seed=seed), db=db,
                  callbacks=[clock], progress=False)
    total = time.monotonic() - started
    with TuningDatabase(db) as database:
        records = [r for r in database.records(result.fingerprint) if r.ok and r.samples]
    # the default's row is its reference executable's; the others are the search's candidates
    configs = [r for r in records if not r.config.is_default]
    needs = [r.compile_s + len(r.samples) * r.median_ns * 1e-9 for r in configs]
    search_s = clock.searched - clock.start
    return {
        "program": program, "budget": budget, "seed": seed, "default_ms": result.default_ms,
        "configs": len(configs), "search_s": search_s, "final_check_s": clock.end - clock.searched,
        "final_check_rounds": result.confirm_rounds, "tune_s": total,
        "search_s_per_config": search_s / max(len(configs), 1),
        "need_s_per_config": statistics.median(needs) if needs else None,
        "compile_s": statistics.median(r.compile_s for r in configs) if configs else None,
        "cost_ratio": search_s / sum(needs) if needs else None,
        "samples": statistics.median(len(r.samples) for r in configs) if configs else None,
        "stopped": sum(r.stopped for r in configs), "speedup": result.speedup,
    }


HEADER = ["program", "run ms", "configs", "search s / config", "need s / config (median)",
          "compile s (median)", f"cost ratio (goal <= {GOAL})", "samples (median)", "stopped early",
          "final check s (rounds)", "kept"]


def cells(r: dict) -> list[str]:
    return [r["program"], f"{r['default_ms']:.1f}", str(r["configs"]), f"{r['search_s_per_config']:.1f}",
            f"{r['need_s_per_config']:.1f}", f"{r['compile_s']:.2f}", f"{r['cost_ratio']:.2f}",
            f"{r['samples']:.0f}", f"{r['stopped']} of {r['configs']}",
            f"{r['final_check_s']:.1f} ({r['final_check_rounds']})", f"{r['speedup']:.3f}x"]


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__, programs=PROGRAMS, seed=0, out=None)
    parser.add_argument("--budget", type=int, default=8, help="configs per tune (default: %(default)s)")
    args = parser.parse_args(argv)
    print(harness.markdown_header(HEADER), flush=True)
    with tempfile.TemporaryDirectory(prefix="hlotune-config-cost-") as db_dir:
        rows = []
        for program in args.programs:
            rows.append(measure(program, args.budget, args.seed, Path(db_dir)))
            print(harness.markdown_row(cells(rows[-1])), flush=True)
    if args.out:
        harness.write_rows(args.out, rows)


if __name__ == "__main__":
    main()
