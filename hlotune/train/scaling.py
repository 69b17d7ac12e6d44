"""Train steps on one graph of N nodes, whole-graph or GST, and their cost: one run of
benchmarks/scale_bench.py, each in a fresh process (`main`).

The graph is real HLO at scale: zoo programs' modules composed to N nodes (`hlo.compose`),
featurized as TpuGraphs. Its configs are layout-like: the dot, convolution, reshape and
transpose nodes are configurable (as in the built-in layout data), each config gives them
random output minor-to-major orders, and the runtimes are synthetic (a node costs more when its
minor-most dimension is not the default one, weighted by its log size), since nothing measures
a 500k-node program here. Training goes through `hlotune.train.train`, one graph, one step per
epoch, so what is timed is the real trainer.

The graph is built in a child process (which imports jax) and cached as an npz, so the peak
RSS reported is the training's. `max_rss_mb` stops a run whose RSS passes it: a full-graph run
at 500k nodes would otherwise take the machine down.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from hlotune.errors import HlotuneError

MODES = ("gst", "full")
CONFIGURABLE = ("dot", "convolution", "reshape", "transpose")
_DIMS, _PRODUCT = slice(21, 27), 28  # node_feat: output shape dims, their product


@dataclass(frozen=True)
class ScaleSettings:
    nodes: int
    mode: str
    steps: int = 3
    configs: int = 4  # per step
    pool: int = 32  # configs of the graph
    segment_size: int = 20_000
    segments_sampled: int = 1
    hidden: int = 64
    max_rss_mb: float | None = None
    cache: Path | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise HlotuneError(f"mode must be gst or full, got {self.mode!r}")
        if self.nodes < 1000:
            raise HlotuneError(f"--nodes must be at least 1000, got {self.nodes}")
        if self.steps < 2 or self.configs < 2 or self.pool < self.configs:
            raise HlotuneError("need at least 2 steps, 2 configs per step and a pool that big")


@dataclass
class ScaleResult:
    nodes: int
    edges: int
    mode: str
    configs: int  # per step
    configurable: int  # configurable nodes
    segments: int | None  # asked of METIS
    peak_rss_mb: float
    step_s: float | None  # median over the steps after the first
    first_step_s: float | None  # includes partitioning and filling the history table
    failed: str | None = None
    runtimes: str = "synthetic"


def run(settings: ScaleSettings) -> ScaleResult:
    """Build (or reuse) the graph, train `steps` steps; a result with `failed` set when the RSS
    cap was hit (this process then exits at once, so `main` never returns: see `_watchdog`)."""
    from hlotune.data.npz import read_sample

    path = graph_file(settings)
    sample = read_sample(path)
    configurable = int(sample.configs.node_config_ids.size)
    base = ScaleResult(
        nodes=sample.graph.num_nodes, edges=sample.graph.num_edges, mode=settings.mode,
        configs=settings.configs, configurable=configurable, segments=None, peak_rss_mb=0.0,
        step_s=None, first_step_s=None,
    )
    del sample
    if settings.max_rss_mb is not None:
        _watchdog(settings.max_rss_mb, base)
    seconds = _train(path, settings)
    if settings.mode == "gst":
        base.segments = math.ceil(base.nodes / settings.segment_size)
    base.first_step_s = round(seconds[0], 3)
    base.step_s = round(float(np.median(seconds[1:])), 3)
    base.peak_rss_mb = round(_peak_rss_mb(), 1)
    return base


def main(argv: list[str], prog: str) -> int:
    """One run, as the command line `prog ARGV` asks; bad input raises HlotuneError."""
    args = _parser(prog).parse_args(argv)
    result = run(ScaleSettings(
        nodes=args.nodes, mode=args.mode, steps=args.steps, configs=args.configs,
        segment_size=args.segment_size, segments_sampled=args.segments_sampled,
        max_rss_mb=args.max_rss_mb, cache=args.cache,
    ))
    if args.json:
        print(json.dumps(asdict(result)))
    else:
        print(f"{result.nodes:,} nodes, {result.edges:,} edges, {result.mode}: peak RSS "
              f"{result.peak_rss_mb:,.0f} MB, {result.step_s:.2f} s/step "
              f"({result.configs} configs per step, synthetic runtimes)")
    return 0


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Build a graph of N nodes from real zoo programs' HLO (layout-like configs, "
        "synthetic runtimes), train a few steps on it whole (full) or by graph segment "
        "training (gst), and report nodes, edges, mode, peak_rss_mb, step_s and configs. "
        "Run each size in a fresh process: peak RSS is the process's.",
    )
    parser.add_argument("--nodes", type=int, required=True, metavar="N")
    parser.add_argument("--mode", choices=MODES, required=True)
    parser.add_argument("--steps", type=int, default=3, help="training steps (default 3)")
    parser.add_argument("--configs", type=int, default=4, help="configs per step (default 4)")
    parser.add_argument("--segment-size", type=int, default=20_000, help="gst (default 20000)")
    parser.add_argument("--segments-sampled", type=int, default=1, help="gst (default 1)")
    parser.add_argument("--max-rss-mb", type=float, help="stop (exit 1) past this RSS")
    parser.add_argument("--cache", type=Path, metavar="DIR", help="keep the built graphs here")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    return parser


def graph_file(settings: ScaleSettings) -> Path:
    """The npz of the N-node graph, built by a child process unless the cache has it."""
    folder = settings.cache or Path(tempfile.gettempdir()) / "hlotune-scale"
    path = folder / f"composed_{settings.nodes}_{settings.pool}.npz"
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "hlotune.train.scaling", str(settings.nodes),
                   str(settings.pool), str(path)]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise HlotuneError(f"building the {settings.nodes}-node graph failed: "
                               f"{done.stderr.strip().splitlines()[-1:]}")
    return path


def build_graph(nodes: int, pool: int, path: Path) -> None:
    """Compose, featurize and give the graph `pool` layout-like configs (seeded)."""
    from hlotune.data.npz import write_sample
    from hlotune.data.sample import GraphSample, LayoutConfigArrays
    from hlotune.hlo.compose import compose_modules, zoo_protos
    from hlotune.hlo.featurize import featurize
    from hlotune.hlo.opcodes import opcode_id
    from hlotune.hlo.proto import graph_from_proto

    arrays = featurize(graph_from_proto(compose_modules(zoo_protos(), nodes)))
    codes = [opcode_id(name) for name in CONFIGURABLE]
    ids = np.flatnonzero(np.isin(arrays.node_opcode, codes)).astype(np.int64)
    rank = np.clip((arrays.node_feat[ids, _DIMS] > 0).sum(axis=1), 1, 6)
    rng = np.random.default_rng(0)
    feat = np.full((pool, ids.size, 18), -1.0, np.float32)
    for c in range(1, pool):  # config 0: the compiler default (all -1)
        keys = rng.random((ids.size, 6)) + (np.arange(6) >= rank[:, None])  # pads sort last
        order = np.argsort(keys, axis=1)
        feat[c, :, :6] = np.where(np.arange(6) < rank[:, None], order, -1)
    minor_changed = (feat[:, :, 0] >= 0) & (feat[:, :, 0] != rank - 1)
    weight = np.log1p(np.abs(arrays.node_feat[ids, _PRODUCT]))
    runtime = 1e6 * (1.0 + (minor_changed * weight).sum(axis=1) / max(weight.sum(), 1.0))
    configs = LayoutConfigArrays(ids, feat, runtime.astype(np.int64))
    write_sample(path, GraphSample(arrays, configs, name=f"composed_{nodes}"))


def _train(path: Path, settings: ScaleSettings) -> list[float]:
    """Seconds of each step: one-graph epochs, from the trainer's log."""
    from hlotune.models.settings import ModelSettings
    from hlotune.train import trainer
    from hlotune.train.gst import GSTSettings

    gst = None
    if settings.mode == "gst":
        gst = GSTSettings(settings.segment_size, settings.segments_sampled)
    recipe = trainer.TrainSettings(epochs=settings.steps, configs_per_batch=settings.configs, gst=gst)
    with tempfile.TemporaryDirectory() as out:
        result = trainer.train(path, None, Path(out) / "run", recipe, progress=False,
                               model_settings=ModelSettings(hidden_dim=settings.hidden))
    return [row.seconds for row in result.history]


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _current_rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _watchdog(limit_mb: float, result: ScaleResult) -> None:
    """Poll the RSS; past `limit_mb`, print `result` as failed (JSON, for the benchmark) and the
    one-line error, and leave at once with exit code 1: the run went past the user's cap."""
    def watch() -> None:
        while True:
            rss = _current_rss_mb()
            if rss > limit_mb:
                result.peak_rss_mb = round(rss, 1)
                result.failed = f"RSS passed the {limit_mb:.0f} MB cap"
                print(json.dumps(asdict(result)), flush=True)
                print(f"hlotune: error: {result.nodes} nodes, {result.mode}: {result.failed} "
                      "(--max-rss-mb)", file=sys.stderr, flush=True)
                os._exit(1)
            time.sleep(0.02)

    threading.Thread(target=watch, daemon=True).start()


if __name__ == "__main__":  # the builder child: NODES POOL OUT.npz
    build_graph(int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]))
