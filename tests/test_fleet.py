"""hlotune fleet tune and report: one budget across the recorded programs, resumed, verified."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import pytest

import hlotune
from hlotune.fleet.allocation import FULL, PROBE, STOP_BELOW, by_time, halving
from hlotune.fleet.tune import BudgetSpent, Outcome
from hlotune.fleet.recorder import recorder_for
from hlotune.tuning.storage import Recording


def rolled(u):
    for _ in range(6):
        u = 0.25 * (jnp.roll(u, 1, 0) + jnp.roll(u, -1, 0) + jnp.roll(u, 1, 1) + jnp.roll(u, -1, 1))
    return u


def squashed(x, w):
    return jnp.tanh(x @ w) @ w


@pytest.fixture
def fleet(tmp_path) -> str:
    """Two programs recorded by hlotune.jit, `rolled` called far more often: 40 times the calls,
    so one sampled call of `squashed` slowed down by the other test worker cannot outweigh it."""
    location = str(tmp_path / "fleet.sqlite")
    first, second = hlotune.jit(rolled, db=location), hlotune.jit(squashed, db=location)
    u, x = jnp.ones((128, 128)), jnp.ones((64, 64))
    for _ in range(120):
        jax.block_until_ready(first(u))
    for _ in range(3):
        jax.block_until_ready(second(x, x))
    recorder_for(location).flush()
    return location


def test_a_fleet_tune_spends_its_budget_most_recorded_time_first_and_resumes(fleet, cli, tmp_path):
    done = cli("fleet", "tune", "--db", fleet, "--budget", PROBE, "--allocation", "halving", "--json", "--quiet")
    assert done.returncode == 0, done.stderr
    first = json.loads(done.stdout)
    assert [t["program"] for t in first["tunes"]] == [f"{__name__}.rolled"]  # the budget went to it
    assert first["measured"] >= PROBE - 1
    again = json.loads(cli("fleet", "tune", "--db", fleet, "--budget", PROBE, "--allocation", "halving", "--json",
                           "--quiet").stdout)
    assert again["tunes"][0]["measured"] == 0  # resumed: nothing measured twice
    assert [t["program"] for t in again["tunes"]][:2] == [f"{__name__}.rolled", f"{__name__}.squashed"]
    report = json.loads(cli("fleet", "report", "--db", fleet, "--json").stdout)
    rolled_row = next(p for p in report["programs"] if p["name"].endswith("rolled"))
    assert rolled_row["tuning_s"] > 0 and rolled_row["recorded_s"] > 0 and rolled_row["reported"] is not None
    assert (rolled_row["verified"] is None) == (rolled_row["reported"] == 1.0)  # kept configs are verified
    assert report["tuning_s"] >= rolled_row["tuning_s"]
    status = [json.loads(line) for line in cli("fleet", "status", "--db", fleet, "--json").stdout.splitlines()]
    assert status[0]["name"].endswith("rolled") and status[0]["decision"] != "not tuned"
    page = tmp_path / "report.html"
    assert cli("report", "--db", fleet, "--out", page, "--no-profile").returncode == 0
    assert "The fleet: what tuning saves where the programs run" in page.read_text()


def _recording(name: str, seconds: float) -> Recording:
    return Recording(name * 8, name, "", True, "", 0.0, 10, seconds, 86400.0)


def test_halving_probes_everything_then_gives_more_to_the_most_promising():
    programs = [_recording(name, seconds) for name, seconds in (("a", 9.0), ("b", 5.0), ("c", 3.0), ("d", 1.0))]
    found = {"a": 1.0, "b": 1.5, "c": 1.01, "d": 2.0}  # b saves 5/3 s a day, d 1/2, a nothing
    spent = []

    def spend(program, budget):
        spent.append((program.name, budget))
        return Outcome(program, budget, budget, 1.0, found[program.name], 1.0)

    halving(programs, spend)
    assert spent[:4] == [("a", PROBE), ("b", PROBE), ("c", PROBE), ("d", PROBE)]
    assert spent[4] == ("b", PROBE * 3)  # a third of four: one program, the most promising
    assert spent[-1][1] == 32 and {name for name, _ in spent[4:]} == {"b"}


def test_time_probes_in_time_order_tunes_on_what_kept_a_gain_and_the_rest_after():
    """The early stop: `a` holds the most time and its probe keeps nothing, so `b`, whose probe
    keeps a gain, is tuned on first; `a` and `c` are tuned on only with what is left."""
    programs = [_recording(name, seconds) for name, seconds in (("a", 9.0), ("b", 5.0), ("c", 3.0))]
    kept = {"a": 1.0, "b": 1.5, "c": STOP_BELOW - 0.005}
    spent = []

    def spend(program, budget):
        spent.append((program.name, budget))
        return Outcome(program, budget, budget, 1.0, kept[program.name], kept[program.name])

    by_time(programs, spend)
    assert spent == [("a", PROBE), ("b", PROBE), ("b", FULL), ("c", PROBE), ("a", FULL), ("c", FULL)]


def test_time_with_two_probes_probes_again_at_once_before_stopping():
    """`a`'s first probe keeps nothing and its second a gain, so it is tuned on; `b` keeps
    nothing in either probe and waits for the second pass."""
    programs = [_recording(name, seconds) for name, seconds in (("a", 9.0), ("b", 5.0))]
    spent = []

    def spend(program, budget):
        spent.append((program.name, budget))
        kept = 1.3 if program.name == "a" and budget > PROBE else 1.0
        return Outcome(program, budget, budget, 1.0, kept, kept)

    by_time(programs, spend, probes=2)
    assert spent == [("a", PROBE), ("a", 2 * PROBE), ("a", FULL), ("b", PROBE), ("b", 2 * PROBE), ("b", FULL)]


def test_an_allocation_stops_where_the_budget_is_spent():
    programs = [_recording(name, 1.0) for name in "abc"]
    spent = []

    def spend(program, budget):
        if len(spent) == 2:
            raise BudgetSpent
        spent.append(program.name)
        return Outcome(program, budget, budget, 1.0, 1.0, 1.0)

    with pytest.raises(BudgetSpent):
        by_time(programs, spend)
    assert spent == ["a", "b"]


def test_saving_tunes_where_a_tuning_second_saves_most_and_shrinks_what_a_probe_that_finds_nothing_expects(tmp_path):
    """A known answer: `heavy` holds the most time, but its configs cost 8 s (80 ms calls) and it
    gains nothing; `cheap` (5 ms calls) gains 2x; `small` gains 1.5x on a sixth of cheap's time.
    Per tuning second cheap's probe comes first, then heavy's, which finds nothing: its expected
    gain halves, so cheap is tuned on to FULL before heavy is probed again, and each probe of
    heavy that finds nothing sends the next configs elsewhere while anything promises more."""
    from hlotune.fleet.allocation import flat_saving

    programs = [Recording(name * 8, name, "", True, "", 0.0, calls, seconds, 86400.0)
                for name, calls, seconds in (("heavy", 12500, 1000.0), ("cheap", 120000, 600.0),
                                             ("small", 20000, 100.0))]
    found = {"heavy": 1.0, "cheap": 2.0, "small": 1.5}
    config_s = {"heavy": 8.0, "cheap": 1.5, "small": 1.5}

    class Spend:
        location = str(tmp_path / "fleet.sqlite")
        spent: list = []

        def __call__(self, program, budget):
            self.spent.append((program.name, budget))
            done = self.spent.count((program.name, budget)) == 1 and budget - max(
                [b for n, b in self.spent[:-1] if n == program.name], default=0)
            return Outcome(program, budget, done, config_s[program.name] * done, found[program.name],
                           found[program.name])

    spend = Spend()
    flat_saving(programs, spend)
    assert spend.spent[:7] == [("cheap", PROBE), ("heavy", PROBE), ("cheap", FULL), ("heavy", 2 * PROBE),
                               ("small", PROBE), ("heavy", 3 * PROBE), ("small", FULL)]
    assert spend.spent[7:] == [("heavy", b) for b in (4 * PROBE, 5 * PROBE, FULL)]  # nothing else is left
    found["small"] = STOP_BELOW - 0.005  # a probe that found less than STOP_BELOW: probed on, never tuned on
    spend.spent.clear()
    flat_saving(programs, spend)
    assert ("small", FULL) in spend.spent and spend.spent.index(("small", 2 * PROBE)) > spend.spent.index(("cheap", FULL))
