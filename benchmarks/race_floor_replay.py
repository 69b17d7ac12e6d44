"""The final check's bar with a pooled noise floor, replayed on live tune_bench runs: which
kept configs it would have dropped and which dropped leaders it would have kept.

The race keeps its leader when the mean log speedup over r rounds exceeds 2 F / sqrt(r), F the
median of the race's own rounds' noise floors (hlotune/tuning/final_check.py). One round's F is
the range of three executables' medians, so it can be small by luck: the v4 runs' one kept
config that verified below 0.99x won a one-round race under F = 1.9% on a program whose search
batches' floors ran from 0.4% to 24%. The alternative replayed here pools the floors: F is the
median over the search's batches and the race's round. Only one-round races can be replayed
(a run's database holds each search batch's floor and the race's F, not each later round's),
and they are most races: a race ends after its first round when its leader clears the bar,
when no finalist could, and at every equal-time run, whose deadline has passed.

What each flip was worth comes from measurements no decision saw: a kept config's fresh batch
("verified"), and a dropped leader's when --verify-dropped measured it.

    python benchmarks/race_floor_replay.py docs/img/tune_bench_v4.json docs/img/tune_bench_v4_corpus.json \
        --db-dir ~/.cache/hlotune/tune_bench_v4 --out docs/img/race_floor_replay.json
"""

from __future__ import annotations

import math
import sqlite3
import sys
from pathlib import Path

import harness
import numpy as np

from hlotune.tuning.final_check import BAR_PER_FLOOR


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__, out=None)
    parser.add_argument("rows", type=Path, nargs="+", help="live tune_bench.py results")
    parser.add_argument("--db-dir", type=Path, nargs="+", required=True,
                        help="folders holding the runs' databases (tune_bench.py --db-dir)")
    args = parser.parse_args(argv)
    races = [race for path in args.rows for run in harness.read_rows(path)
             if (race := replayed(run, args.db_dir)) is not None]
    flips = [race for race in races if race["kept"] != race["would_keep"]]
    print(harness.markdown(["program", "strategy", "seed", "budget", "race's F", "pooled F", "round-1 speedup",
                            "was", "would be", "verified"], [_cells(flip) for flip in flips]))
    print(summary(races))
    if args.out:
        harness.write_json(args.out, races)


def replayed(run: dict, db_dirs: list[Path]) -> dict | None:
    """`run`'s one-round race and its decision under the pooled floor (None: not one round)."""
    database = next((folder / run["db"] for folder in db_dirs if (folder / run.get("db", "")).is_file()), None)
    if database is None:
        return None
    with sqlite3.connect(database) as connection:
        decision = connection.execute("SELECT noise_floor, rounds, confirmed_speedup, chosen = candidate "
                                      "FROM decisions").fetchone()
        # a batch's configs all carry its floor: one distinct value per search batch
        floors = [row[0] for row in connection.execute(
            "SELECT DISTINCT noise_floor FROM measurements WHERE noise_floor IS NOT NULL")]
    if decision is None or decision[1] != 1 or decision[2] is None or decision[0] is None:
        return None
    race_floor, _, speedup, kept = decision
    pooled = float(np.median(floors + [race_floor]))
    worth = run.get("verified") if kept else (run.get("dropped") or {}).get("verified")
    return {"program": run["program"], "strategy": run["strategy"], "seed": run["seed"],
            "budget": int(next(iter(run["kept"]))), "race_floor": race_floor, "pooled_floor": pooled,
            "round_speedup": speedup, "kept": bool(kept),
            "would_keep": math.log(speedup) > BAR_PER_FLOOR * pooled, "verified": worth}


def summary(races: list[dict]) -> str:
    """Per strategy: kept configs the pooled floor drops, and how they verified."""
    lines = []
    for strategy in sorted({race["strategy"] for race in races}):
        mine = [race for race in races if race["strategy"] == strategy]
        dropped = [r["verified"] for r in mine if r["kept"] and not r["would_keep"] and r["verified"]]
        kept = [r for r in mine if r["would_keep"] and not r["kept"]]
        slower, faster = sum(v < 0.99 for v in dropped), sum(v > 1.02 for v in dropped)
        lines.append(f"{strategy}: {len(mine)} one-round races; {len(dropped)} kept configs dropped ({slower} "
                     f"verified below 0.99x, {faster} above 1.02x); {len(kept)} dropped leaders kept")
    return "\n".join(lines)


def _cells(flip: dict) -> list[str]:
    verified = "-" if flip["verified"] is None else f"{flip['verified']:.3f}x"
    return [flip["program"], flip["strategy"], str(flip["seed"]), str(flip["budget"]), f"{flip['race_floor']:.3f}",
            f"{flip['pooled_floor']:.3f}", f"{flip['round_speedup']:.3f}x", "kept" if flip["kept"] else "dropped",
            "dropped" if flip["kept"] else "kept", verified]


if __name__ == "__main__":
    sys.exit(main())
