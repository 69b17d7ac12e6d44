"""How `hlotune fleet tune` divides its budget among the recorded programs.

An allocation takes the tunable programs (most recorded time first) and a `Spender`, and calls
it to tune a program at a budget until it is done or the fleet budget is spent (BudgetSpent).
A program's budget counts all its evaluated configs, as `hlotune tune` does, so tuning it again
at a larger budget continues its search.

- `time` (the default): most recorded time first, each program probed at PROBE configs (the
  default, configs that won elsewhere, the portfolio's first) and tuned on to FULL where its
  probe kept STOP_BELOW or more; a probe that kept nothing gives the program's budget back (the
  early stop), and those programs are tuned on afterwards, in the same order, with what is
  left. With a budget of FULL per program, this is tuning everything. Fleets' call rates are
  heavy-tailed, so a few programs hold most of the recorded time, and what any other program
  could save is bounded by its small share; but the largest program often gains nothing (a
  training step at its roofline), and its configs cost the most: without the stop, a quarter of
  tune-everything's time went to it first (docs/results/tuning.md).
- `halving`: successive halving, with the probe as the first rung. Every program is tuned at
  PROBE configs (the default, configs that won elsewhere, the portfolio's first), most recorded
  time first; then the 1/ETA of them whose probe promises the most saving a day (recorded time
  a day x the share the best config found would save) get ETA times the budget, and so on up to
  FULL. Probing the tail costs as much per program as probing the head, and pays back less.
- `model`: halving whose probe is steered by the gain model (gain_model.py): programs are probed
  in order of predicted saving a day (recorded time a day x the share the predicted speedup
  would save), and those predicted below MIN_GAIN not at all; halving's later rungs follow.
- `saving`: the next configs go where the expected saving a day per tuning second is highest
  (prospects.py): a program's time a day x what its expected speedup would save, over what its
  configs cost. A program is probed PROBE configs at a time; a probe whose tune kept nothing
  STOP_BELOW faster halves the program's expected log gain (NULL_SHRINK: the early stop), so
  its budget goes to the others unless it still promises more per second than they do; a
  probe that kept a gain has the program weighed again by what it found and its measured cost
  a config, and it may be tuned on to FULL. The expected speedup before a probe is the gain
  model's, refitted after each full tune on this database's own tunes; `saving-flat` is the
  same order with one flat prior (FLAT_GAIN) for every program, so that it follows time a day
  over cost alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hlotune.progress import note

if TYPE_CHECKING:  # types only: `hlotune --help` lists the allocations without importing numpy
    from hlotune.fleet.prospects import Prospect
    from hlotune.fleet.tune import Outcome, Spender
    from hlotune.tuning.storage import Recording

    Allocation = Callable[[list[Recording], Spender], None]

PROBE = 6
ETA = 3
FULL = 32
MIN_GAIN = 1.02  # a predicted speedup below this is within the noise a kept config must beat
STOP_BELOW = MIN_GAIN  # a probe that kept less than this speedup found nothing


def halving(programs: list[Recording], spend: Spender) -> None:
    _climb([spend(program, PROBE) for program in programs], spend)


def model_guided(programs: list[Recording], spend: Spender) -> None:
    from hlotune.fleet.gain_model import fleet_gains

    gains = fleet_gains(spend.location, programs)
    saving = {p.fingerprint: p.seconds_per_day * (1 - 1 / gains[p.fingerprint])
              for p in programs if gains[p.fingerprint] >= MIN_GAIN}
    probed = sorted((p for p in programs if p.fingerprint in saving), key=lambda p: -saving[p.fingerprint])
    _climb([spend(program, PROBE) for program in probed], spend)


def _climb(rung: list[Outcome], spend: Spender) -> None:
    """Halving's rungs after the probe: ETA times the budget to the 1/ETA most promising."""
    budget = PROBE
    while budget < FULL and rung:
        budget = min(budget * ETA, FULL)
        promising = sorted((o for o in rung if o.promise > 0), key=lambda o: -o.promise)
        rung = [spend(o.recording, budget) for o in promising[:max(1, len(rung) // ETA)]]


def by_time(programs: list[Recording], spend: Spender, probes: int = 1) -> None:
    """`time`; with `probes` > 1, a probe that kept nothing is followed at once by another of
    PROBE configs, up to `probes` in all, before the program is stopped."""
    passed = []
    for program in programs:
        if any(spend(program, PROBE * k).speedup >= STOP_BELOW for k in range(1, probes + 1)):
            spend(program, FULL)
        else:
            passed.append(program)
    for program in passed:
        spend(program, FULL)
# After a probe that found nothing, the program's expected log gain is cut to this share: on the
# fleet benchmark a hard stop after one probe missed rk4_lorenz96's 2.2x (its probe of 6 found
# 1.03x, 12 configs found 2.0x), a third of draw 3's saving.
NULL_SHRINK = 0.5

Speedups = Callable[[str, "list[Recording]"], "dict[str, float]"]  # expected speedups by fingerprint


def by_saving(programs: list[Recording], spend: Spender, speedups: Speedups, *, refit: bool = False) -> None:
    """Probe, or tune on, whichever program promises the most saving a day per tuning second
    next: probes of PROBE configs until one keeps a gain (each that finds none cuts the
    program's expectation by NULL_SHRINK, so the budget goes elsewhere unless it still
    promises more there), then on to FULL. `speedups` gives the expected speedups before any
    probe, asked again after each full tune where `refit`."""
    from hlotune.fleet.prospects import Prospect, config_costs
    from hlotune.tuning.storage import TuningDatabase

    with TuningDatabase(spend.location) as db:
        costs = config_costs(db, programs)
    gains = speedups(spend.location, programs)
    open_ = [Prospect(p, gains[p.fingerprint], costs[p.fingerprint]) for p in programs]
    while open_:
        value, best = max(((p.value(PROBE, FULL), p) for p in open_), key=lambda pair: pair[0])
        if value <= 0:
            return
        full = best.found is not None
        outcome = spend(best.recording, FULL if full else min(best.configs + PROBE, FULL))
        best.learn(outcome, STOP_BELOW, NULL_SHRINK)
        if full or best.configs >= FULL:
            open_.remove(best)
        if refit and full:  # a full tune: the model learns from it
            _refit(spend, speedups, [p for p in open_ if p.configs == 0])


def _refit(spend: Spender, speedups: Speedups, unprobed: list[Prospect]) -> None:
    """The programs not probed yet, expected anew by `speedups`."""
    if unprobed:
        refitted = speedups(spend.location, [p.recording for p in unprobed])
        for prospect in unprobed:
            prospect.speedup = refitted[prospect.recording.fingerprint]


def model_saving(programs: list[Recording], spend: Spender) -> None:
    """`saving` with the gain model's expectations, refitted after each full tune; the flat one,
    with a note, where lightgbm (the gbdt extra) is not installed."""
    from importlib.util import find_spec

    from hlotune.fleet.gain_model import fleet_gains

    if find_spec("lightgbm") is None:
        note("fleet tune: the saving allocation's gain model needs lightgbm (pip install \"hlotune[gbdt]\"); "
             "expecting one flat gain for every program", show=spend.show)
        flat_saving(programs, spend)
        return
    by_saving(programs, spend, fleet_gains, refit=True)


def flat_saving(programs: list[Recording], spend: Spender) -> None:
    from hlotune.fleet.prospects import FLAT_GAIN

    by_saving(programs, spend, lambda location, recordings: {r.fingerprint: FLAT_GAIN for r in recordings})


@dataclass(frozen=True)
class AllocationKind:
    """An allocation, and what it does in one line of `hlotune fleet tune --help`."""

    allocate: Allocation
    description: str


ALLOCATIONS: dict[str, AllocationKind] = {
    "time": AllocationKind(by_time, f"most recorded time first, each program probed at {PROBE} configs and "
                           f"tuned on to {FULL} where the probe kept {STOP_BELOW}x; the others after, with "
                           "what is left"),
    "halving": AllocationKind(halving, f"each program probed at {PROBE} configs, then {ETA} times that "
                              f"for the 1/{ETA} promising the most saving a day, and so on up to {FULL}"),
    "model": AllocationKind(model_guided, "halving, probing in the order of the saving a day a gain model "
                            f"predicts, skipping any it predicts below {MIN_GAIN}x"),
    "saving": AllocationKind(model_saving, "the next configs where the saving a day the gain model expects, "
                             f"per tuning second, is highest: probes of {PROBE}, each finding nothing "
                             f"halving the expected gain, then up to {FULL} once one keeps {STOP_BELOW}x"),
    "saving-flat": AllocationKind(flat_saving, "as saving, with one flat expected gain for every program "
                                  "in place of the gain model's"),
}
DEFAULT_ALLOCATION = "time"
