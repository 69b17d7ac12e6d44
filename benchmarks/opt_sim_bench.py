"""How fast the GO simulator runs on large graphs: building the op graph and simulating a step.

Modules composed from zoo programs (hlotune.hlo.compose) of each size in HLO instructions are
turned into OpGraphs (called computations fold into their callers, so there are fewer ops than
instructions) and simulated on a uniform machine under the baselines' assignments. Times are
medians over repeats; the simulated step times are the simulator's estimates, not measurements.

    python benchmarks/opt_sim_bench.py [--nodes 50000,80000] [--devices 4] [--repeats 3]
                                       [--optimized] [--json]
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass

import harness
from hlotune.hlo.compose import compose_modules, zoo_protos
from hlotune.hlo.proto import graph_from_proto
from hlotune.opt import baselines
from hlotune.opt.costs import op_graph
from hlotune.opt.device import DeviceModel
from hlotune.opt.simulator import simulate


@dataclass
class Row:
    hlo_nodes: int
    ops: int
    edges: int
    build_s: float  # HloGraph -> OpGraph
    assignment: str
    assign_s: float  # computing the baseline's arrays
    simulate_s: float
    step_time_s: float  # simulated
    transfers: int


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    protos = list(zoo_protos(optimized=args.optimized))
    devices = DeviceModel.uniform(args.devices)
    rows = []
    for size in args.nodes:
        hlo = graph_from_proto(compose_modules(protos, size))
        building, graph = harness.timed(args.repeats, lambda: op_graph(hlo))
        for name, assign in _assignments(graph, devices).items():
            assigning, arrays = harness.timed(args.repeats, assign)
            simulating, result = harness.timed(args.repeats, lambda: simulate(graph, devices, *arrays))
            rows.append(Row(hlo.num_nodes, graph.num_ops, graph.num_edges, building.median, name,
                            assigning.median, simulating.median, result.step_time_s, result.num_transfers))
    print(_table(rows))
    if args.json:
        print(json.dumps({"devices": args.devices, "rows": [asdict(row) for row in rows]}))


def _assignments(graph, devices) -> dict:
    """Name -> a function giving (placement, priority, fuse) for simulate."""

    def metis_heft_fusion():
        placement = baselines.metis_placement(graph, devices)
        return (placement, baselines.heft_priorities(graph, devices, placement),
                baselines.greedy_fusion(graph, placement))

    return {
        "one device": lambda: (None, None, None),
        "expert": lambda: (baselines.expert_placement(graph, devices), None, None),
        "random": lambda: (baselines.random_placement(graph, devices), None, None),
        "metis": lambda: (baselines.metis_placement(graph, devices), None, None),
        "metis+heft+fusion": metis_heft_fusion,
    }


def _parser() -> argparse.ArgumentParser:
    parser = harness.parser(__doc__, repeats=3, json=False)
    parser.add_argument("--nodes", type=harness.int_list, default=[50_000, 80_000],
                        help="composed sizes in HLO instructions")
    parser.add_argument("--devices", type=int, default=4)
    parser.add_argument("--optimized", action="store_true",
                        help="compose XLA-optimised modules (mostly fusions: far fewer ops)")
    return parser


def _table(rows: list[Row]) -> str:
    header = ("HLO nodes", "ops", "edges", "build s", "assignment", "assign s", "simulate s",
              "sim step s", "transfers")
    cells = [(f"{r.hlo_nodes:,}", f"{r.ops:,}", f"{r.edges:,}", f"{r.build_s:.3f}", r.assignment,
              f"{r.assign_s:.3f}", f"{r.simulate_s:.3f}", f"{r.step_time_s:.4g}", f"{r.transfers:,}")
             for r in rows]
    return harness.text_table(header, cells, align="r" * len(header))


if __name__ == "__main__":
    main()
