"""benchmarks/tune_bench.py: the live report's numbers on hand-built rows, and run-by-run resume
with the tune mocked (nothing is compiled or measured here)."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from types import SimpleNamespace

import pytest
from conftest import REPO

from hlotune.compiler.configs.config import DEFAULT_CONFIG, CompileConfig
from hlotune.compiler.configs.flags import FlagConfig

sys.path.insert(0, str(REPO / "benchmarks"))  # the script imports its folder's harness, as run
spec = importlib.util.spec_from_file_location("tune_bench", REPO / "benchmarks" / "tune_bench.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)

L = math.log(1.1)


def synthetic(program, strategy, seed, kept, verified, oracle, dropped=None):
    """A made-up live run at budget 8: found 5% above what it kept."""
    return {"program": program, "space": "flags", "strategy": strategy, "seed": seed, "oracle_speedup": oracle,
            "history": [1.0, kept * 1.05], "kept": {"8": kept}, "live": True, "kept_default": kept == 1.0,
            "reported": kept, "verified": verified, "dropped": dropped}


@pytest.fixture
def rows():
    """Synthetic: a (oracle 1.21 = 1.1^2), b (no gain), c (oracle 1.1); default and random, seeds 0-1.
    The default's seed 1 on c dropped a leader found at 1.1025x that verifies at 1.05x."""
    return bench.common_oracles([
        synthetic("synthetic:a", "default", 0, 1.21, 1.1, 1.21),
        synthetic("synthetic:a", "default", 1, 1.1, 1.1, 1.21),
        synthetic("synthetic:a", "random", 0, 1.0, 1.0, 1.21),
        synthetic("synthetic:a", "random", 1, 1.1, 0.98, 1.21),
        synthetic("synthetic:b", "default", 0, 1.0, 1.0, 1.0),
        synthetic("synthetic:b", "default", 1, 1.0, 1.0, 1.0),
        synthetic("synthetic:b", "random", 0, 1.0, 1.0, 1.0),
        synthetic("synthetic:b", "random", 1, 1.0, 1.0, 1.0),
        synthetic("synthetic:c", "default", 0, 1.1, 1.1, 1.1),
        synthetic("synthetic:c", "default", 1, 1.0, 1.0, 1.1,
                  dropped={"config": {}, "found": 1.05 ** 2, "verified": 1.05}),
        synthetic("synthetic:c", "random", 0, 1.1, 1.1, 1.1),
        synthetic("synthetic:c", "random", 1, 1.1, 1.1, 1.1),
    ])


def test_strategy_stats(rows):
    default, rand = (bench.strategy_stats(rows, name) for name in ("default", "random"))
    assert default["kept"] == pytest.approx(1.1 ** (4 / 6))  # 1.21 * 1.1 * 1.1 over six runs
    assert default["verified"] == pytest.approx(1.1 ** (3 / 6))
    assert default["found"] == pytest.approx(1.05 * 1.1 ** (4 / 6))
    # log shares: a's seeds 1 and 0.5 (median 0.75), c's 1 and 0 (0.5); b has no gain
    assert default["share_kept"] == pytest.approx(0.625)
    assert default["share_verified"] == pytest.approx(0.5)
    assert (default["kept_configs"], default["slower"]) == (3, 0)
    assert (default["dropped"], default["dropped_measured"], default["dropped_real"]) == (1, 1, 1)
    assert rand["kept"] == pytest.approx(1.1 ** 0.5)
    assert rand["verified"] == pytest.approx((0.98 * 1.21) ** (1 / 6))
    assert rand["share_kept"] == pytest.approx(0.625)  # a: 0 and 0.5 (0.25); c: 1 and 1
    assert (rand["kept_configs"], rand["slower"], rand["dropped"]) == (3, 1, 0)


def test_paired_ratio(rows):
    programs, (ratio, low, high) = bench.paired_ratio(rows, "random", "default", bench._kept)
    # per program, the mean log ratio over seeds: a (-2L + 0) / 2, b 0, c (0 + L) / 2
    assert programs == 3
    assert ratio == pytest.approx(math.exp(-L / 6))
    assert low <= ratio <= high
    assert bench.paired_ratio(rows, "random", "default", bench._kept)[1] == (ratio, low, high)  # fixed seed
    _, (back, back_low, back_high) = bench.paired_ratio(rows, "default", "random", bench._kept)
    assert (back, back_low, back_high) == pytest.approx((1 / ratio, 1 / high, 1 / low))


def test_paired_ratio_pairs_by_seed(rows):
    """A seed one strategy lacks is left out of the pair, not set against another seed."""
    fewer = [r for r in rows if not (r["strategy"] == "random" and r["seed"] == 1)]
    _, (ratio, _, _) = bench.paired_ratio(fewer, "random", "default", bench._kept)
    assert ratio == pytest.approx(math.exp((-2 * L + 0 + 0) / 3))  # seed 0 alone: a -2L, b 0, c 0


def test_live_report_tables(rows):
    text = bench.live_report(rows)
    assert "## live, flags, budget 8" in text
    assert "| random | default | 3 |" in text  # the default is the one paired with first
    assert f"| default | 6 | {1.1 ** (4 / 6):.3f}x |" in text
    assert "| 1 (1 of 1) |" in text  # the dropped leader, real above 1.02x
    assert "| default | 1 | 1.103x | 1.050x | 1 | 0 | 0.50 |" in text  # half its found log gain was luck


def test_hindsight_pairs_each_strategy_with_the_best_kept_per_run(rows):
    """Per program and seed, the larger kept of default and random: over the default a gains 0,
    b 0 and c (0 + L) / 2; over random a (2L + 0) / 2, b 0 and c 0."""
    text = bench.hindsight(rows)
    for over, log_ratio in (("default", L / 6), ("random", L / 3)):
        assert f"| {bench.HINDSIGHT} | {over} | 3 | {math.exp(log_ratio):.3f} [" in text
    assert bench.hindsight([r for r in rows if r["strategy"] == "default"]) == ""  # nothing to pick from


class CutOff(Exception):
    """The benchmark killed in the middle of a run."""


def fake_run(calls, fail_at=None):
    def run(program, name, seed, budget, args):
        calls.append((program, name, seed, budget))
        if len(calls) == fail_at:
            raise CutOff
        return synthetic(program, name, seed, 1.1, 1.1, None) | {
            "kept": {str(budget): 1.1}, "db": "x.sqlite", "fingerprint": "f", "seconds": 1.0}
    return run


@pytest.fixture
def argv(tmp_path):
    return ["--live", "synthetic:a", "synthetic:b", "--strategies", "random", "default", "--seeds", "2",
            "--budget", "8", "32", "--out", str(tmp_path / "out.json"), "--plot", str(tmp_path / "plot.png"),
            "--db-dir", str(tmp_path / "dbs")]


def test_resume_skips_saved_runs(tmp_path, argv, monkeypatch):
    calls = []
    monkeypatch.setattr(bench, "live_run", fake_run(calls, fail_at=5))
    monkeypatch.setattr(bench, "confirmed_oracle", lambda *_: 1.2)
    with pytest.raises(CutOff):
        bench.main(argv)
    saved = json.loads((tmp_path / "out.json").read_text())
    assert [(r["program"], r["strategy"], r["seed"], bench._budget(r)) for r in saved] == calls[:4]
    calls.clear()
    monkeypatch.setattr(bench, "live_run", fake_run(calls))
    bench.main(argv)
    assert len(calls) == 2 * 2 * 2 * 2 - 4  # programs x seeds x budgets x strategies, less the four saved
    saved = json.loads((tmp_path / "out.json").read_text())
    assert len(saved) == 16 and all(r["oracle_speedup"] == 1.2 for r in saved)
    calls.clear()
    bench.main(argv)
    assert calls == []


def test_unknown_recipe_is_skipped(monkeypatch, capsys):
    monkeypatch.setitem(bench.LIVE, "synthetic+new", {"first_generation": "not-yet"})
    assert bench.runnable(["random", "synthetic+new"], bench.ROOT) == ["random"]
    assert "skipping synthetic+new" in capsys.readouterr().err


def test_dropped_leader():
    """A kept default drops the final check's leader, raced or stopped at the gate."""
    leader = CompileConfig(FlagConfig.from_dict({"xla_cpu_experimental_ynn_fusion_type": "LIBRARY_FUSION_TYPE_REDUCE"}))
    result = SimpleNamespace(kept_default=True, confirm_rounds=2, candidate=leader, found_speedup=1.1,
                             confirmed_speedup=1.03, candidate_speedup=1.01, noise=0.02)
    assert bench._dropped(result) == {"config": leader.to_dict(), "found": 1.1, "confirmed": 1.03,
                                      "last_round": 1.01, "rounds": 2, "noise": 0.02}
    assert bench._dropped(SimpleNamespace(**vars(result) | {"confirm_rounds": 0, "noise": math.nan}))["noise"] is None
    assert bench._dropped(SimpleNamespace(kept_default=True, candidate=DEFAULT_CONFIG)) is None
    assert bench._dropped(SimpleNamespace(kept_default=False, candidate=leader)) is None
