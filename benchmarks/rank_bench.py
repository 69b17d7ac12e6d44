"""How fast the GNN ranks the configs of one graph, against compiling and measuring them.

A cost model pays off in an autotuner only if ranking a config is far cheaper than compiling
and timing it; the goal is 1000x. This scores 10,000 configs of the unet_3d fixture graph
(3163 nodes, 62 configurable; its 1965 measured layouts repeated up to 10k) with an untrained
GraphCostModel, whose weights do not change the time: layout configs with message passing
over the whole graph, pruned to `prune_hops = num_layers` hops (exact), joined before the last
one or two layers only (`config_layers`: the first run once per graph, the rest on the 1- or
2-hop neighbourhood of the configurable nodes) and joined late (each site's layout meets its
node's final embedding: no propagation per config; "sites": the sites of a config attend to
each other first, optionally with the analytical prior added), the shipped layout model's
architecture (`pretrained:layout`), and flags configs with late join. The time is
`predict_scores` end to end, graph encoding included, after one
warm-up call. What a measured config costs comes from the built-in dataset's summaries:
collection seconds over configs tried (measured + failed).

    python benchmarks/rank_bench.py [--configs 10000] [--threads N] [--max-rows R] [--repeats K]
                                    [--cases CASE ...] [--json]

With --repeats K each case is timed K times; the table shows the median and the JSON every run.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

import harness
from hlotune.compiler.configs.flags import FLAG_FEATURE_NAMES
from hlotune.compiler.spaces.space import SearchSpace
from hlotune.data.builtin import resolve
from hlotune.data.dataset import Dataset
from hlotune.data.sample import FlagConfigArrays, GraphSample, LayoutConfigArrays
from hlotune.models import GraphCostModel, ModelSettings, data_fields, predict_scores
from hlotune.models.files import pretrained_folder, read_model_files
from hlotune.models.predict import MAX_ROWS
from hlotune.tuning.strategies.random_search import RandomSearch

REPO = Path(__file__).resolve().parents[1]

FIXTURE = "tpugraphs/npz/layout/xla/default/valid/unet_3d.4x4.bf16.npz"
GOAL = 1000


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__, repeats=1, json=False)
    parser.add_argument("--configs", type=int, default=10_000, help="configs ranked per case")
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
    parser.add_argument("--max-rows", type=int, default=MAX_ROWS,
                        help="node rows per forward pass (predict_scores' chunking)")
    parser.add_argument("--cases", nargs="+", help="only these cases (default: all)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    path = Path(os.environ.get("HLOTUNE_SHARED_DATA") or REPO.parent / "shared" / "data") / FIXTURE
    if not path.is_file():
        sys.exit(f"no fixture at {path} (set HLOTUNE_SHARED_DATA)")
    fixture = Dataset(path)[0]
    layers = ModelSettings().num_layers
    cases = {  # case: (configs, model, the collection whose measuring it replaces)
        "layout": (_layout(fixture, args.configs), ModelSettings(), "layout"),
        "layout pruned": (_layout(fixture, args.configs), ModelSettings(prune_hops=layers), "layout"),
        "layout last 2 layers": (_layout(fixture, args.configs), ModelSettings(config_layers=2), "layout"),
        "layout last layer": (_layout(fixture, args.configs), ModelSettings(config_layers=1), "layout"),
        "layout late join": (_layout(fixture, args.configs), ModelSettings(layout_join="late"), "layout"),
        "layout sites": (_layout(fixture, args.configs), ModelSettings(layout_join="sites"), "layout"),
        "layout sites + prior": (_layout(fixture, args.configs),
                                 ModelSettings(layout_join="sites", analytical_prior=True), "layout"),
        "pretrained:layout": (_layout(fixture, args.configs), _shipped("layout"), "layout"),
        "flags late join": (_flags(fixture, args.configs), ModelSettings(join="late"), "flags"),
    }
    measured = measure_seconds_per_config()
    print(f"{fixture.name}: {fixture.graph.num_nodes} nodes, {args.configs} configs per case, "
          f"{torch.get_num_threads()} torch thread(s), {args.max_rows} rows per pass, CPU")
    results = []
    for case, (sample, config, collection) in cases.items():
        if args.cases and case not in args.cases:
            continue
        runs = [time_ranking(sample, config, args.max_rows) for _ in range(args.repeats)]
        seconds = harness.Spread(tuple(runs)).median
        per_config = seconds / sample.num_configs
        # Until the built-in layout collection is measured, flags stand in for its cost.
        against = collection if collection in measured else next(iter(measured), None)
        results.append({
            "case": case,
            "configs": sample.num_configs,
            "seconds": seconds,
            "runs_s": runs,
            "configs_per_s": sample.num_configs / seconds,
            "seconds_per_10k": per_config * 10_000,
            "measured_collection": against,
            "speedup_vs_measuring": measured[against] / per_config if against else None,
        })
    _print_table(results, measured)
    if args.json:
        print(json.dumps({"graph": fixture.name, "nodes": fixture.graph.num_nodes,
                          "threads": torch.get_num_threads(), "max_rows": args.max_rows,
                          "measure_s_per_config": measured, "results": results}))


def _print_table(results: list[dict], measured: dict[str, float]) -> None:
    for collection, cost in measured.items():
        print(f"compile + measure, built-in {collection}: {cost:.3f} s per config")
    for row in results:
        speedup = row["speedup_vs_measuring"]
        verdict = "" if speedup is None else (
            f", {speedup:,.0f}x faster than measuring {row['measured_collection']} configs"
            + (" (goal met)" if speedup >= GOAL else f" (goal {GOAL}x)"))
        runs = harness.Spread(tuple(row["runs_s"]))
        spread = f" (runs {runs.range()} s)" if len(runs.values) > 1 else ""
        print(f"{row['case']:<20} {row['configs_per_s']:>10,.0f} configs/s, "
              f"{row['seconds_per_10k']:.2f} s per 10k{spread}{verdict}")


def time_ranking(sample: GraphSample, config: ModelSettings, max_rows: int = MAX_ROWS) -> float:
    torch.manual_seed(0)
    model = GraphCostModel(config.with_data(**data_fields(sample)))
    predict_scores(model, sample, indices=np.arange(min(64, sample.num_configs)))  # warm-up
    start = time.perf_counter()
    predict_scores(model, sample, max_rows=max_rows)
    return time.perf_counter() - start


def measure_seconds_per_config() -> dict[str, float]:
    """Per collection of programs (tile's summaries are per kernel, with no timing): collection
    seconds over configs tried, from the built-in summaries."""
    costs = {}
    for collection in ("flags", "layout"):
        results = [json.loads(p.read_text())["result"] for p in resolve(f"builtin:{collection}").glob("*/*.json")]
        tried = sum(r["configs"] + r["failed"] for r in results)
        if tried:
            costs[collection] = sum(r["seconds"] for r in results) / tried
    return costs


def _shipped(collection: str) -> ModelSettings:
    """The shipped model's architecture (its weights do not change the time), data fields
    cleared for the fixture's."""
    return ModelSettings.from_dict(read_model_files(pretrained_folder(collection))[0]).without_data()


def _layout(fixture: GraphSample, count: int) -> GraphSample:
    feat = fixture.configs.node_config_feat
    repeated = np.resize(feat, (count, *feat.shape[1:]))
    configs = LayoutConfigArrays(fixture.configs.node_config_ids, repeated, np.zeros(count, np.int64))
    return GraphSample(fixture.graph, configs, name=fixture.name)


def _flags(fixture: GraphSample, count: int) -> GraphSample:
    rows = np.stack([config.flags.features() for config in RandomSearch(SearchSpace("flags"), 0).ask(64)])
    repeated = np.resize(rows, (count, rows.shape[1]))
    configs = FlagConfigArrays(repeated, np.array(FLAG_FEATURE_NAMES), np.zeros(count, np.int64))
    return GraphSample(fixture.graph, configs, name=fixture.name)


if __name__ == "__main__":
    main()
