"""How `hlotune fleet tune` divides its budget among the recorded programs.

An allocation takes the tunable programs (most recorded time first) and a `Spender`, and calls
it to tune a program at a budget until it is done or the fleet budget is spent (BudgetSpent).
A program's budget counts all its evaluated configs, as `hlotune tune` does, so tuning it again
at a larger budget continues its search.

- `time` (the default): most recorded time first, each program at FULL until the budget is
  spent; with a budget of FULL per program, this is tuning everything. Fleets' call rates are
  heavy-tailed, so a few programs hold most of the recorded time, and what any other program
  could save is bounded by its small share. On the fleet benchmark (22 programs, three draws,
  a quarter of tune-everything's configs) it kept 87% (51-98%) of tune-everything's saving at
  25% of its tuning time; halving 91% (83-100%) at 41% (docs/results/tuning.md). It knows
  where the stakes are, not where the gain is: a draw whose largest program gains nothing is
  where it does worst.
- `halving`: successive halving, with the probe as the first rung. Every program is tuned at
  PROBE configs (the default, configs that won elsewhere, the portfolio's first), most recorded
  time first; then the 1/ETA of them whose probe promises the most saving a day (recorded time
  a day x the share the best config found would save) get ETA times the budget, and so on up to
  FULL. Probing the tail costs as much per program as probing the head, and pays back less.
- `model`: halving whose probe is steered by the gain model (gain_model.py): programs are probed
  in order of predicted saving a day (recorded time a day x the share the predicted speedup
  would save), and those predicted below MIN_GAIN not at all; halving's later rungs follow.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # types only: `hlotune --help` lists the allocations without importing numpy
    from hlotune.fleet.tune import Outcome, Spender
    from hlotune.tuning.storage import Recording

    Allocation = Callable[[list[Recording], Spender], None]

PROBE = 6
ETA = 3
FULL = 32
MIN_GAIN = 1.02  # a predicted speedup below this is within the noise a kept config must beat


def halving(programs: list[Recording], spend: Spender) -> None:
    _climb([spend(program, PROBE) for program in programs], spend)


def model_guided(programs: list[Recording], spend: Spender) -> None:
    from hlotune.fleet.gain_model import fleet_gains

    gains = fleet_gains(spend.location, programs)
    saving = {p.program: p.seconds_per_day * (1 - 1 / gains[p.program])
              for p in programs if gains[p.program] >= MIN_GAIN}
    probed = sorted((p for p in programs if p.program in saving), key=lambda p: -saving[p.program])
    _climb([spend(program, PROBE) for program in probed], spend)


def _climb(rung: list[Outcome], spend: Spender) -> None:
    """Halving's rungs after the probe: ETA times the budget to the 1/ETA most promising."""
    budget = PROBE
    while budget < FULL and rung:
        budget = min(budget * ETA, FULL)
        promising = sorted((o for o in rung if o.promise > 0), key=lambda o: -o.promise)
        rung = [spend(o.program, budget) for o in promising[:max(1, len(rung) // ETA)]]


def by_time(programs: list[Recording], spend: Spender) -> None:
    for program in programs:
        spend(program, FULL)


@dataclass(frozen=True)
class AllocationKind:
    """An allocation, and what it does in one line of `hlotune fleet tune --help`."""

    allocate: Allocation
    description: str


ALLOCATIONS: dict[str, AllocationKind] = {
    "time": AllocationKind(by_time, f"most recorded time first, each program at {FULL} configs"),
    "halving": AllocationKind(halving, f"each program probed at {PROBE} configs, then {ETA} times that "
                              f"for the 1/{ETA} promising the most saving a day, and so on up to {FULL}"),
    "model": AllocationKind(model_guided, "halving, probing in the order of the saving a day a gain model "
                            f"predicts, skipping any it predicts below {MIN_GAIN}x"),
}
DEFAULT_ALLOCATION = "time"
