"""How parse and featurize time and peak memory grow with module size.

Measures the real TpuGraphs fixture and modules composed from zoo programs (hlotune.hlo.compose)
side by side. Every measurement runs in a fresh subprocess, so a size's peak RSS is its own,
and each number is the median over repeats. Time per 1k instructions shows linearity.
Linux carries a process's peak RSS over fork and exec, so this parent stays small: it never
imports jax or hlotune's featurizer, and composing the modules runs in a subprocess too.

    python benchmarks/featurize_bench.py [--nodes 500000] [--sizes 50000,200000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import harness

REPO = Path(__file__).resolve().parents[1]
FIXTURE = "tpugraphs/pb/layout/xla/default/valid/unet_3d.4x4.bf16.hlo_module.pb"


@dataclass
class Result:
    module: str
    nodes: int
    edges: int
    parse_s: float
    featurize_s: float
    total_s: float
    ms_per_1k_nodes: float
    peak_rss_mb: float
    start_rss_mb: float  # after imports and reading the file: the interpreter's share
    repeats: int


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    if args.measure:
        print(json.dumps(measure(Path(args.measure))))
        return
    sizes = sorted({size for size in args.sizes if size < args.nodes} | {args.nodes})
    if args.compose:
        _write_composed(Path(args.compose), sizes)
        return
    results = []
    fixture = _shared_data() / FIXTURE
    if fixture.is_file():
        results.append(_median_run("unet_3d fixture", fixture, args.repeats))
    else:
        print(f"(no fixture at {fixture}; set HLOTUNE_SHARED_DATA)")
    results += _composed_runs(sizes, args)
    print(_table(results))
    if args.json:
        print(json.dumps({"results": [asdict(r) for r in results]}))


def _parser() -> argparse.ArgumentParser:
    parser = harness.parser(__doc__, repeats=3, json=False)
    parser.add_argument("--nodes", type=int, default=500_000, help="largest composed size")
    parser.add_argument(
        "--sizes", type=harness.int_list, default=[50_000, 200_000, 500_000],
        help="composed sizes, comma separated (those above --nodes are dropped)",
    )
    parser.add_argument("--largest-repeats", type=int, default=1, help="runs of the largest size")
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # subprocess: one measurement
    parser.add_argument("--compose", help=argparse.SUPPRESS)  # subprocess: write the modules
    return parser


def measure(path: Path) -> dict:
    """One run in this process: parse, featurize, and the peak RSS it reached."""
    from hlotune.hlo.featurize import featurize
    from hlotune.hlo.proto import graph_from_proto

    data = path.read_bytes()
    start_rss = _peak_rss_mb()
    t0 = time.perf_counter()
    graph = graph_from_proto(data)
    t1 = time.perf_counter()
    arrays = featurize(graph)
    t2 = time.perf_counter()
    return {
        "nodes": arrays.num_nodes,
        "edges": int(arrays.edge_index.shape[0]),
        "parse_s": t1 - t0,
        "featurize_s": t2 - t1,
        "peak_rss_mb": _peak_rss_mb(),
        "start_rss_mb": start_rss,
    }


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def _composed_runs(sizes: list[int], args: argparse.Namespace) -> list[Result]:
    results = []
    with tempfile.TemporaryDirectory() as folder:
        _run_script("--compose", folder, "--sizes", ",".join(map(str, sizes)), "--nodes",
                    str(sizes[-1]))
        for size in sizes:
            path = _composed_path(Path(folder), size)
            repeats = args.largest_repeats if size == sizes[-1] else args.repeats
            results.append(_median_run(f"composed {size / 1000:g}k", path, repeats))
            path.unlink()
    return results


def _write_composed(folder: Path, sizes: list[int]) -> None:
    from hlotune.hlo.compose import compose_modules, zoo_protos

    protos = list(zoo_protos())
    for size in sizes:
        _composed_path(folder, size).write_bytes(compose_modules(protos, size))


def _composed_path(folder: Path, size: int) -> Path:
    return folder / f"composed_{size}.pb"


def _median_run(label: str, path: Path, repeats: int) -> Result:
    runs = [json.loads(_run_script("--measure", str(path))) for _ in range(max(1, repeats))]

    def median(key: str) -> float:
        return statistics.median(run[key] for run in runs)

    parse, feat = median("parse_s"), median("featurize_s")
    total = statistics.median(run["parse_s"] + run["featurize_s"] for run in runs)
    nodes = runs[0]["nodes"]
    return Result(
        module=label,
        nodes=nodes,
        edges=runs[0]["edges"],
        parse_s=round(parse, 3),
        featurize_s=round(feat, 3),
        total_s=round(total, 3),
        ms_per_1k_nodes=round(1000 * total / nodes * 1000, 2),
        peak_rss_mb=round(median("peak_rss_mb"), 1),
        start_rss_mb=round(median("start_rss_mb"), 1),
        repeats=len(runs),
    )


def _run_script(*args: str) -> str:
    """This script in a fresh interpreter; its last line of output."""
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stderr}")
    lines = done.stdout.strip().splitlines()
    return lines[-1] if lines else ""


def _shared_data() -> Path:
    return Path(os.environ.get("HLOTUNE_SHARED_DATA") or REPO.parent / "shared" / "data")


def _table(results: list[Result]) -> str:
    header = ("module", "nodes", "edges", "parse s", "featurize s", "total s", "ms/1k nodes",
              "peak RSS MB", "start RSS MB", "runs")
    rows = [(r.module, f"{r.nodes:,}", f"{r.edges:,}", f"{r.parse_s:.3f}", f"{r.featurize_s:.3f}",
             f"{r.total_s:.3f}", f"{r.ms_per_1k_nodes:.1f}", f"{r.peak_rss_mb:.0f}",
             f"{r.start_rss_mb:.0f}", str(r.repeats)) for r in results]
    return harness.text_table(header, rows, align="l" + "r" * 9)


if __name__ == "__main__":
    main()
