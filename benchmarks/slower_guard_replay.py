"""Slower-guard replay: what the final check's guard against a slower report would have done to
the configs that Tuner v4's benchmark runs kept.

Since issue 48, a tune keeps the default where the batch measured after choosing (the
"reported" speedup) finds its candidate slower than the default beyond that batch's noise
floor: a decision is applied wherever the program runs. The v4 rows (tune_bench.py results in
docs/img) hold each kept config's reported speedup and a verified one, from a fresh batch
measured later. A report below 1.0 is necessary for the guard to drop a config (the floor only
narrows it), so the configs reported below 1.0 bound what it drops: the real gains (verified
above 1) it would have lost, and the slower configs (verified below 0.99) it would have caught.

    python benchmarks/slower_guard_replay.py
"""

from __future__ import annotations

import json
from pathlib import Path

import harness

ROWS = ("tune_bench_v4.json", "tune_bench_v4_b16.json", "tune_bench_v4_b64.json", "tune_bench_v4_corpus.json")
IMG = Path(__file__).resolve().parents[1] / "docs" / "img"


def main() -> None:
    harness.parser(__doc__).parse_args()
    rows = [row for name in ROWS for row in json.loads((IMG / name).read_text())]
    kept = [row for row in rows if not row["kept_default"] and row.get("verified") is not None]
    low = [row for row in kept if row["reported"] < 1.0]
    slower = [row for row in kept if row["verified"] < 0.99]
    cells = [[row["program"], row["strategy"], str(row["seed"]), f"{row['reported']:.3f}x", f"{row['verified']:.3f}x"]
             for row in low]
    print(harness.markdown(("program", "strategy", "seed", "reported", "verified"), cells, align="lllrr"))
    print(f"\n{len(kept)} kept configs; {len(low)} reported below 1.0, of which {sum(r['verified'] > 1 for r in low)} "
          f"verified faster (real gains the guard may drop); {len(slower)} verified below 0.99, of which "
          f"{sum(r['reported'] < 1.0 for r in slower)} reported below 1.0 (caught).")


if __name__ == "__main__":
    main()
