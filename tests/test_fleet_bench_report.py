"""The fleet benchmark's report on its committed results (docs/img): the shortfall's parts add
up to the gap, and knowing where the saving is never costs more than probing for it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "img" / "fleet_bench_30_stop.jsonl"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import fleet_bench
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return fleet_bench


@pytest.fixture(scope="module")
def rows():
    return [json.loads(line) for line in RESULTS.read_text().splitlines()]


def test_a_runs_losses_add_up_to_its_gap_to_everything(bench, rows):
    before = bench._recorded(rows)
    reference = {(r["draw"], r["seed"]): r for r in rows if r["kind"] == "everything"}
    runs = [r for r in rows if r["kind"] == "time" and "fleet_portfolio" in r]
    assert len(runs) >= 9
    for row in runs:
        base = reference[bench._reference_key(row)]
        lost = bench.losses(row, base, before)
        gap = 1 - sum(bench.saving(row, before).values()) / sum(bench.saving(base, before).values())
        assert sum(lost.values()) == pytest.approx(gap)


def test_foresight_costs_no_more_than_probing_in_time_order(bench, rows):
    table = bench.foresight(rows).split("\n\n")[0].splitlines()[2:]
    assert len(table) == sum(r["kind"] == "everything" for r in rows)
    for line in table:
        _, knew_75, knew_90, probed_75, probed_90 = (cell.strip().rstrip("%") for cell in line.strip("|").split("|"))
        assert int(knew_75) <= int(knew_90) and int(knew_75) <= int(probed_75) and int(knew_90) <= int(probed_90)


def test_reach_counts_each_probed_program_once_and_sees_a_second_pass(bench, rows):
    """Every probed program was tuned on or kept its empty probe; a run whose budget outlasted
    the first pass (a program tuned again after the next ones) reads as reaching the second pass."""
    def cells(table):
        return [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[2:]]

    for _, _, probed, on, empty, _, second in cells(bench.reach(rows)):
        assert int(probed.split(" of ")[0]) == int(on) + int(empty) and second == "no"
    tunes = [{"program": "a", "budget": 6, "measured": 6, "speedup": 1.0},
             {"program": "b", "budget": 6, "measured": 6, "speedup": 1.5},
             {"program": "b", "budget": 32, "measured": 26, "speedup": 1.6},
             {"program": "a", "budget": 32, "measured": 26, "speedup": 1.3}]
    run = {"kind": "time", "draw": 0, "seed": 0, "share": 0.25, "equal": "time", "fleet_portfolio": True,
           "tuned": {"tunes": tunes, "measured": 64}, "after": {"a": {}, "b": {}}}
    [(_, _, probed, on, empty, share, second)] = cells(bench.reach([run]))
    assert (probed, on, empty, share, second) == ("2 of 2", "2", "0", "0%", "yes")
