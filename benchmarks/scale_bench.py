"""Training memory and step time against graph size, whole-graph vs Graph Segment Training.

Runs one training run (hlotune/train/scaling.py) per (size, mode), each in a fresh process so that its
peak RSS is its own, writes every result as JSON and plots peak RSS and step time against nodes
to docs/img/scale_memory.png. Full-graph runs are stopped at --max-rss-mb (a failed point).

    OMP_NUM_THREADS=1 python benchmarks/scale_bench.py [--sizes 50000,200000,500000]
    python benchmarks/scale_bench.py one --nodes N --mode gst|full [--json]    # one run
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import harness

REPO = Path(__file__).resolve().parents[1]
PLOT = REPO / "docs" / "img" / "scale_memory.png"


def main(argv: list[str]) -> None:
    if argv[:1] == ["one"]:
        sys.exit(_one(argv[1:]))
    args = _parser().parse_args(argv)
    results = []
    for size in args.sizes:
        for mode in ("gst", "full"):
            result = _run(size, mode, args)
            results.append(result)
            print(json.dumps(result), flush=True)
    harness.write_json(args.out, {"results": results}, end="\n")
    _plot(results, args.max_rss_mb, args.plot)
    print(_table(results))


def _parser() -> argparse.ArgumentParser:
    parser = harness.parser(__doc__, out=PLOT.with_suffix(".json"), plot=PLOT)
    parser.add_argument("--sizes", type=harness.int_list, default=[50_000, 200_000, 500_000])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--max-rss-mb", type=float, default=10_000)
    parser.add_argument("--cache", type=Path, help="keep the built graphs here")
    return parser


def _one(argv: list[str]) -> int:
    from hlotune.errors import HlotuneError
    from hlotune.train import scaling

    try:
        return scaling.main(argv, prog="python benchmarks/scale_bench.py one")
    except HlotuneError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


def _run(size: int, mode: str, args: argparse.Namespace) -> dict:
    command = [sys.executable, __file__, "one", "--nodes", str(size), "--mode", mode,
               "--steps", str(args.steps), "--max-rss-mb", str(args.max_rss_mb), "--json"]
    if args.cache:
        command += ["--cache", str(args.cache)]
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env)
    lines = done.stdout.strip().splitlines()
    if not lines or not lines[-1].startswith("{"):
        return {"nodes": size, "mode": mode, "failed": done.stderr.strip()[-300:]}
    return json.loads(lines[-1])


def _plot(results: list[dict], cap: float, path: Path) -> None:
    fig, (memory, time) = harness.subplots(1, 2, figsize=(10, 4))
    for mode, marker in (("gst", "o"), ("full", "s")):
        rows = [r for r in results if r["mode"] == mode and "edges" in r]
        done = [r for r in rows if not r.get("failed")]
        memory.plot([r["nodes"] for r in done], [r["peak_rss_mb"] for r in done],
                    marker=marker, label=mode)
        failed = [r for r in rows if r.get("failed")]
        if failed:
            memory.scatter([r["nodes"] for r in failed], [r["peak_rss_mb"] for r in failed],
                           marker="x", color="red", zorder=3, label=f"{mode}: stopped at cap")
        time.plot([r["nodes"] for r in done], [r["step_s"] for r in done], marker=marker,
                  label=mode)
    memory.axhline(cap, color="grey", linestyle="--", linewidth=1, label="RSS cap")
    memory.axhline(8192, color="green", linestyle=":", linewidth=1, label="8 GB goal")
    memory.set(xlabel="nodes", ylabel="peak RSS (MB)", title="training memory")
    time.set(xlabel="nodes", ylabel="seconds per step", title="step time (1 thread)")
    for axis in (memory, time):
        axis.legend()
        axis.grid(alpha=0.3)
    fig.suptitle("Composed zoo HLO, layout-like configs (synthetic runtimes), 4 configs/step")
    harness.save_figure(fig, path)


def _table(results: list[dict]) -> str:
    header = ("nodes", "edges", "mode", "peak_rss_mb", "step_s", "note")
    return harness.text_table(header, [
        [str(r["nodes"]), str(r.get("edges", "")), r["mode"], str(r.get("peak_rss_mb", "")),
         str(r.get("step_s") or ""), r.get("failed") or ""] for r in results], rule=False)


if __name__ == "__main__":
    main(sys.argv[1:])
