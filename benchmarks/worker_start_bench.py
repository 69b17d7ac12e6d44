"""Worker start benchmark: a measurement worker forked from the zygote against one started cold,
and one that reads the program's example arguments from the file an earlier worker wrote
(compiler/measurement/argument_files.py) against one that runs the program's init.

Each start is what a tune pays for a program, and again after each config that crashes or
hangs XLA: a worker process up, the program loaded and traced (compiler/measurement/worker_session.py), then
stopped. The three kinds alternate in one process (HLOTUNE_FORK_WORKERS switches; the file is
removed before a start that must run init, which then writes it again), so the machine's drift
falls on all alike. The zygote's own start, paid once per process, is the first forked start's
extra and is shown apart.

    python benchmarks/worker_start_bench.py
    python benchmarks/worker_start_bench.py --programs zoo:mlp@small corpus:hf-vit@tiny-bf16 --repeats 10
"""

from __future__ import annotations

import json
import os
import time

import harness
from hlotune.compiler.measurement.argument_files import argument_file
from hlotune.compiler.measurement.measure import MeasureSettings
from hlotune.compiler.measurement.worker_session import WorkerSession
from hlotune.compiler.measurement.zygote import SWITCH


def start_seconds(program: str, forked: bool, handed: bool = False) -> float:
    """One start; `handed`: the arguments are read from the file, else init makes them."""
    os.environ[SWITCH] = "1" if forked else "0"
    if not handed and (path := argument_file(program)) is not None and os.path.exists(path):
        os.remove(path)
    start = time.perf_counter()
    with WorkerSession(program, MeasureSettings()):
        return time.perf_counter() - start


def measure(program: str, repeats: int) -> dict:
    first_forked = start_seconds(program, forked=True)  # boots this process's zygote
    cold, forked, handed = [], [], []
    for _ in range(repeats):
        cold.append(start_seconds(program, forked=False))
        forked.append(start_seconds(program, forked=True))
        handed.append(start_seconds(program, forked=True, handed=True))
    return {"program": program, "cold_s": cold, "forked_s": forked, "handed_s": handed,
            "first_forked_s": first_forked}


def report(rows: list[dict]) -> str:
    cells = []
    for row in rows:
        cold, forked, handed = (harness.Spread(tuple(row[k])) for k in ("cold_s", "forked_s", "handed_s"))
        cells.append([row["program"], f"{cold.median:.2f} ({cold.range()})",
                      f"{forked.median:.2f} ({forked.range()})", f"{cold.median / forked.median:.2f}x",
                      f"{handed.median:.2f} ({handed.range()})", f"{forked.median / handed.median:.2f}x",
                      f"{row['first_forked_s']:.2f}"])
    return harness.markdown(("program", "cold start, s (range)", "forked start, s (range)", "cold / forked",
                             "forked, arguments from the file, s (range)", "init / file",
                             "first forked start, s"), cells, align="lrrrrrr")


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
