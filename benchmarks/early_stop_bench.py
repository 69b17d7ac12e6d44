"""The early stop's price: what `fleet tune`'s `time` and `saving` allocations miss by stopping
a program whose probe found less than STOP_BELOW (fleet/allocation.py), what a second probe of
as many configs, given to the programs the first stopped, would win back and cost, and the
share of a full tune's log gain a probe finds (fleet/prospects.py's PROBE_SHARE).

Two sources, no new measurement:

- the shipped flags collection: each program's configs measured beside its default (about 48
  shared by every program). A probe there is the default and the first PROBE - 1 configs of
  the greedy portfolio fitted without the program's family (tuning/portfolio.py), as a tune
  asks the portfolio first; the full tune, the best of all shared configs. Programs weigh alike.
- the fleet benchmark's tune-everything databases (fleet_bench.py --folder): each program's
  records in the order its tune measured them; the probe is the first PROBE, the full tune all
  (FULL). A program weighs its recorded time a day in the draw (the benchmark's results file).
  The rule stops on the probe's kept speedup; its best record, read here, is the closest
  reading the records hold (the kept one is at most that).

A second probe is the next PROBE configs the same way (the portfolio's next, or the next
records). A stopped program's missed saving is 1 - 1/(its full tune's best); the table gives
their sum as a share of every program's, and the configs the second probe adds, as a share of
the full tunes' configs.

    python benchmarks/early_stop_bench.py
    python benchmarks/early_stop_bench.py --fleet /tmp/hlotune-fleet-bench-fleet_bench_30 --rows docs/img/fleet_bench_30.jsonl
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import harness


@dataclass(frozen=True)
class Probed:
    """One program's probes and full tune: the best speedups after one probe and after two,
    the full tune's best and its configs, and the program's weight."""

    name: str
    probes: tuple[float, float]
    full: float
    configs: int
    weight: float = 1.0


def collection() -> list[Probed]:
    from hlotune.fleet.allocation import PROBE
    from hlotune.tuning.portfolio import greedy, shared_gains

    gains = shared_gains().preserving()  # a fleet tune keeps results
    matrix, families = gains.log_speedups, gains.families
    probed = []
    for family in np.unique(families):
        out = families == family
        first = greedy(matrix[~out], 2 * PROBE - 1)
        for row, name in zip(matrix[out], np.array(gains.programs)[out]):
            best = [math.exp(max(0.0, float(row[first[:k]].max(initial=0.0)))) for k in (PROBE - 1, 2 * PROBE - 1)]
            probed.append(Probed(str(name), (best[0], best[1]), math.exp(max(0.0, float(row.max()))), row.size + 1))
    return probed


def fleet(folder: Path, rows: Path) -> list[Probed]:
    """Each program of the fleet benchmark's first tune-everything run, weighed by draw 0's rates."""
    from hlotune.fleet.allocation import PROBE
    from hlotune.tuning.storage import TuningDatabase

    runs = [row for row in harness.read_rows(rows, lines=True) if row["kind"] == "everything"]
    run = next(row for row in runs if "reweighted_from" not in row)
    before = {name: r for row in harness.read_rows(rows, lines=True) if row["kind"] == "record"
              for name, r in row["before"].items()}
    location = folder / f"everything-draw{run['draw']}-seed{run['seed']}.sqlite"
    probed = []
    with TuningDatabase(str(location)) as db:
        for recording in db.recordings():
            costs = [r.cost for r in db.records(recording.fingerprint) if r.ok and not r.config.flags.changes_numerics]
            if costs:
                weight = run["rates"][recording.name] * before[recording.name]["jit_ms"] / 1e3
                probed.append(Probed(recording.name, (1 / min(costs[:PROBE]), 1 / min(costs[:2 * PROBE])),
                                     1 / min(costs), len(costs), weight))
    return probed


def table(source: str, probed: list[Probed], probes: int) -> list[str]:
    """The rule stopping a program after `probes` probes (1 or 2) that kept less than STOP_BELOW."""
    from hlotune.fleet.allocation import PROBE, STOP_BELOW

    stopped = [p for p in probed if p.probes[probes - 1] < STOP_BELOW]
    saving = sum(p.weight * (1 - 1 / p.full) for p in probed)
    missed = sum(p.weight * (1 - 1 / p.full) for p in stopped)
    added = PROBE * sum(p.probes[0] < STOP_BELOW for p in probed) if probes == 2 else 0
    gained = [p for p in probed if p.full >= STOP_BELOW]
    share = (statistics.median(math.log(max(p.probes[0], 1.0)) / math.log(p.full) for p in gained)
             if gained else math.nan)
    worst = max(stopped, key=lambda p: p.full, default=None)
    return [source, str(probes), str(len(probed)), str(len(stopped)), f"{missed / saving:.1%}" if saving else "—",
            f"{added / sum(p.configs for p in probed):.0%}", f"{worst.name} {worst.full:.3f}x" if worst else "—",
            f"{share:.2f}"]


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--fleet", type=Path, help="a fleet_bench.py --folder with its everything databases")
    parser.add_argument("--rows", type=Path, help="that run's results file (fleet_bench.py --out)")
    args = parser.parse_args()
    sources = {"flags collection (programs alike)": collection()}
    if args.fleet:
        sources[f"fleet benchmark ({args.rows.name}, draw's rates)"] = fleet(args.fleet, args.rows)
    cells = [table(source, probed, probes) for source, probed in sources.items() for probes in (1, 2)]
    print(harness.markdown(("source", "probes", "programs", "stopped", "of the saving missed",
                            "configs added, of the full tunes'", "most missed (its full tune)",
                            "median first probe's share of the log gain"), cells, align="lrrrrrlr"))


if __name__ == "__main__":
    main()
