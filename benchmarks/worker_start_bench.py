"""Worker start benchmark: a measurement worker forked from the zygote against one started cold.

Each start is what a tune pays for a program, and again after each config that crashes or
hangs XLA: a worker process up, the program loaded and traced (measure.py's `_Session`), then
stopped. Cold and forked starts alternate in one process (HLOTUNE_FORK_WORKERS switches), so
the machine's drift falls on both alike. The zygote's own start, paid once per process, is the
first forked start's extra and is shown apart.

    python benchmarks/worker_start_bench.py
    python benchmarks/worker_start_bench.py --programs zoo:mlp@small corpus:hf-vit@tiny-bf16 --repeats 10
"""

from __future__ import annotations

import json
import os
import time

import harness
from hlotune.compiler.measure import MeasureSettings, _Session
from hlotune.compiler.zygote import SWITCH


def start_seconds(program: str, forked: bool) -> float:
    os.environ[SWITCH] = "1" if forked else "0"
    start = time.perf_counter()
    with _Session(program, MeasureSettings()):
        return time.perf_counter() - start


def measure(program: str, repeats: int) -> dict:
    first_forked = start_seconds(program, forked=True)  # boots this process's zygote
    cold, forked = [], []
    for _ in range(repeats):
        cold.append(start_seconds(program, forked=False))
        forked.append(start_seconds(program, forked=True))
    return {"program": program, "cold_s": cold, "forked_s": forked, "first_forked_s": first_forked}


def report(rows: list[dict]) -> str:
    cells = []
    for row in rows:
        cold, forked = harness.Spread(tuple(row["cold_s"])), harness.Spread(tuple(row["forked_s"]))
        cells.append([row["program"], f"{cold.median:.2f} ({cold.range()})",
                      f"{forked.median:.2f} ({forked.range()})", f"{cold.median / forked.median:.2f}x",
                      f"{row['first_forked_s']:.2f}"])
    return harness.markdown(("program", "cold start, s (range)", "forked start, s (range)",
                             "cold / forked", "first forked start, s"), cells, align="lrrrr")


def main() -> None:
    args = harness.parser(__doc__, programs=["zoo:mlp@small", "zoo:transformer@small"], repeats=7,
                          out=None, json=False).parse_args()
    rows = [measure(program, args.repeats) for program in args.programs]
    if args.out:
        harness.write_json(args.out, rows)
    print(report(rows))
    if args.json:
        print(json.dumps(rows))


if __name__ == "__main__":
    main()
