"""Training throughput (configs per second) and a time-per-epoch estimate for full TpuGraphs.

Each real graph is trained alone for a few one-step epochs (the trainer's own loop, model and
defaults) and the median step is kept. Built-in collections are timed as whole epochs. For the
full TpuGraphs download, the time of an epoch (one step per training graph) is ESTIMATED as the
collection's published count of training graphs times the step time on the fixture graph of
that collection: the real graphs vary in size around it, so treat it as an order of magnitude.

    OMP_NUM_THREADS=1 python benchmarks/train_bench.py [--configs-per-batch 16] [--json]
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
from pathlib import Path

import torch

import harness
from hlotune.data.dataset import Dataset
from hlotune.data.npz import read_sample
from hlotune.models.settings import ModelSettings
from hlotune.train import TrainSettings, train

# Training graphs per collection in the public TpuGraphs download (its train splits).
TPUGRAPHS_TRAIN_GRAPHS = {
    "tile/xla": 5709,
    "layout/xla/random": 69,
    "layout/xla/default": 61,
    "layout/nlp/random": 207,
    "layout/nlp/default": 198,
}


def shared_tpugraphs() -> Path | None:
    root = os.environ.get("HLOTUNE_SHARED_DATA")
    folder = Path(root) if root else Path(__file__).resolve().parents[2] / "shared" / "data"
    return folder / "tpugraphs" / "npz" if (folder / "tpugraphs").is_dir() else None


def step_seconds(path: Path, config: ModelSettings, configs: int, steps: int) -> float:
    """Median seconds of a training step on the one graph at `path` (the first step warms up)."""
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "data"
        data.mkdir()
        (data / path.name).symlink_to(path.resolve())
        result = train(data, None, Path(folder) / "run",
                       TrainSettings(epochs=steps + 1, configs_per_batch=configs),
                       model_settings=config, progress=False)
    return statistics.median(row.seconds for row in result.history[1:])


def epoch_seconds(split: str, config: ModelSettings, configs: int) -> float:
    with tempfile.TemporaryDirectory() as folder:
        result = train(split, None, Path(folder) / "run", TrainSettings(epochs=2, configs_per_batch=configs),
                       model_settings=config, progress=False)
    return result.history[-1].seconds


def fixture_rows(root: Path, configs: int, steps: int) -> list[dict]:
    rows = []
    for collection, count in TPUGRAPHS_TRAIN_GRAPHS.items():
        samples = [(f, read_sample(f)) for f in sorted((root / collection).glob("*/*.npz"))]
        labelled = [(f, s) for f, s in samples if s.labelled]
        if not labelled:
            continue
        path, sample = max(labelled, key=lambda pair: pair[1].graph.num_nodes)
        config = ModelSettings(prune_hops=3) if collection.startswith("layout") else ModelSettings()
        batch = min(configs, sample.num_configs)
        seconds = step_seconds(path, config, batch, steps)
        rows.append({
            "data": f"{collection} ({path.stem}, {sample.graph.num_nodes:,} nodes)",
            "step_s": seconds, "configs_per_s": batch / seconds,
            "train_graphs": count, "epoch_estimate_s": count * seconds,
        })
    return rows


def builtin_rows(configs: int) -> list[dict]:
    rows = []
    for collection in ("flags", "layout"):
        split = f"builtin:{collection}/train"
        config = ModelSettings(prune_hops=3) if collection == "layout" else ModelSettings()
        graphs = sum(1 for sample in Dataset(split) if sample.labelled)
        seconds = epoch_seconds(split, config, configs)
        rows.append({"data": split, "step_s": seconds / graphs,
                     "configs_per_s": graphs * configs / seconds, "train_graphs": graphs,
                     "epoch_s": seconds})
    return rows


def markdown(rows: list[dict]) -> str:
    return harness.markdown(("data", "s/step", "configs/s", "train graphs", "time per epoch"), [
        [row["data"], f"{row['step_s']:.3f}", f"{row['configs_per_s']:,.0f}", f"{row['train_graphs']:,}",
         f"{row['epoch_s']:.1f} s (measured)" if "epoch_s" in row else f"~{row['epoch_estimate_s']:.0f} s (estimate)"]
        for row in rows])


def main() -> None:
    parser = harness.parser(__doc__, json=False)
    parser.add_argument("--configs-per-batch", type=int, default=16)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    rows = builtin_rows(args.configs_per_batch)
    root = shared_tpugraphs()
    if root is None:
        print("no TpuGraphs fixtures (../shared/data or $HLOTUNE_SHARED_DATA): built-in data only")
    else:
        rows += fixture_rows(root, args.configs_per_batch, args.steps)
    print(markdown(rows))
    if args.json:
        print(json.dumps(rows))


if __name__ == "__main__":
    main()
