"""The field: what each process's trial of a decision found where the program runs, and the one
rule that says whether a decision applies.

A tune's speedup is measured in a worker, and its verification beside jax.jit in one process;
memory layout alone moves a program's speed by 5-30% from one process to the next, so
`hlotune.jit` trials a decision in every process (fleet/trial.py) and writes each trial here:
its calls paired, the pairs the decision won, the median pair's speedup, the median call under
each executable, and its verdict: KEPT or REJECTED where the trial decided, TIED where it
reached its bound undecided, UNFINISHED where the process ended first. The pairs of every
trial pool: a decision the field's pairs show faster (`confirmed`, the same sign test a trial
runs) is kept by a process whose own trial ties.

The rule (`TuningDatabase.state`), used by hlotune.jit, @autotune, `fleet status` and
`fleet report` alike: the latest decision (numerics-safe unless allowed) is a candidate unless
it kept the default, its latest verification beside jax.jit found it below VERIFIED_FLOOR, or
the field retired it. A decision is RETIRED once RETIRE_AFTER processes or more finished its
trial and either those that rejected it outnumber those that kept it, their median speedup is
below RETIRE_BELOW, or the field's pairs show it no faster beyond a tie. A candidate is APPLIED
once the field's pairs confirm it, and ON TRIAL before. A program with no decision under this
jax/jaxlib whose decision under another release (on this machine) did not keep the default has
that one CARRIED over: on trial, never applied untested, until trials under this release
confirm it.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass

from hlotune.tuning.storage.base import Decision
from hlotune.tuning.storage.connection import Connection
from hlotune.tuning.storage.fleet_log import Verification

# a trial's verdict in one process:
KEPT, REJECTED, TIED, UNFINISHED = "kept", "rejected", "tied", "unfinished"
ALPHA = 0.005  # a sign test's one-sided error for keeping a decision (a trial looks after each pair)
ALPHA_REJECT = 0.05  # and for rejecting one: a wrong rejection costs a gain, a wrong keep every call
RETIRE_AFTER = 3  # finished trials, at least, before the field may retire a decision
RETIRE_BELOW = 0.99  # the field's median speedup under which a decision is retired
# A decision's standing, as `fleet status` prints it:
NOT_TUNED, DEFAULT_KEPT, NO_VERIFIED_GAIN = "not tuned", "default kept", "no verified gain"
RETIRED, ON_TRIAL, APPLIED = "retired", "on trial", "applied"
CARRIED = "carried over"  # another jax release's decision: on trial here, never applied untested
_KEY = "program = ? AND machine = ? AND jax = ? AND jaxlib = ?"


@dataclass(frozen=True)
class TrialOutcome:
    """One process's trial of a config beside jax.jit: pairs of calls, one under each."""

    config_key: str
    pairs: int  # counted
    wins: int  # pairs whose jax.jit call took more than TIE times the config's
    speedup: float  # the config's: the median of the pairs' ratios (1 before a pair)
    jit_ns: float  # median call under jax.jit's executable (nan before a pair)
    tuned_ns: float  # under the config's
    verdict: str  # KEPT, REJECTED, TIED or UNFINISHED
    compile_s: float  # the config's compile in that process (the trial's second compile)


@dataclass(frozen=True)
class FieldStats:
    """A config's trials over every process of this machine kind and compiler."""

    trials: tuple[TrialOutcome, ...]

    @property
    def finished(self) -> list[TrialOutcome]:
        return [t for t in self.trials if t.verdict != UNFINISHED]

    @property
    def kept(self) -> int:
        return sum(t.verdict == KEPT for t in self.trials)

    @property
    def rejected(self) -> int:
        return sum(t.verdict == REJECTED for t in self.trials)

    @property
    def pairs(self) -> int:
        return sum(t.pairs for t in self.trials)

    @property
    def wins(self) -> int:
        return sum(t.wins for t in self.trials)

    @property
    def speedups(self) -> list[float]:
        """Each finished trial's speedup, in its process."""
        return sorted(t.speedup for t in self.finished)

    @property
    def median(self) -> float | None:
        return statistics.median(self.speedups) if self.finished else None

    @property
    def retired(self) -> bool:
        if len(self.finished) < RETIRE_AFTER:
            return False
        return (self.rejected > self.kept or self.median < RETIRE_BELOW
                or coin_tail(self.pairs - self.wins, self.pairs) < ALPHA_REJECT)

    @property
    def confirmed(self) -> bool:
        """The field's pairs show the decision faster beyond a tie."""
        return shown_faster(self.wins, self.pairs)


def shown_faster(wins: int, pairs: int) -> bool:
    return pairs > 0 and coin_tail(wins, pairs) < ALPHA


def coin_tail(heads: int, flips: int) -> float:
    """P(at least `heads` heads in `flips` tosses of a fair coin)."""
    return sum(math.comb(flips, k) for k in range(max(heads, 0), flips + 1)) / 2 ** flips


@dataclass(frozen=True)
class DecisionState:
    """What the rule says of a program's latest decision here."""

    state: str  # NOT_TUNED, DEFAULT_KEPT, NO_VERIFIED_GAIN, RETIRED, ON_TRIAL, CARRIED or APPLIED
    decision: Decision | None
    verification: Verification | None
    field: FieldStats

    @property
    def candidate(self) -> Decision | None:
        """The decision hlotune.jit trials (or applies, without a trial); None: jax.jit's."""
        return self.decision if self.state in (ON_TRIAL, APPLIED, CARRIED) else None


class Field:
    """Part of TuningDatabase (sql.py), on its connection and scope."""

    _sql: Connection
    _scope: tuple[str, str, str]
    owner: str

    def record_trials(self, trials: list[tuple[str, TrialOutcome]]) -> None:
        """This process's trials so far, by fingerprint (replacing what it wrote before)."""
        with self._sql.writing():
            self._sql.executemany(
                f"INSERT INTO trials VALUES ({', '.join('?' * 14)}) "
                "ON CONFLICT (program, machine, jax, jaxlib, process, config) DO UPDATE SET "
                "pairs = excluded.pairs, wins = excluded.wins, speedup = excluded.speedup, "
                "jit_ns = excluded.jit_ns, tuned_ns = excluded.tuned_ns, verdict = excluded.verdict, "
                "updated = excluded.updated",
                [(fingerprint, *self._scope, self.owner, t.config_key, t.pairs, t.wins, t.speedup,
                  _real(t.jit_ns), _real(t.tuned_ns), t.verdict, t.compile_s, time.time())
                 for fingerprint, t in trials])

    def field(self, fingerprint: str, config_key: str, *, excluding: str = "") -> FieldStats:
        """The config's trials here, but those of the process `excluding` names (its own, while
        its trial runs)."""
        return FieldStats(tuple(self._trials(fingerprint, "AND config = ? AND process != ?", config_key, excluding)))

    def retired(self, fingerprint: str) -> set[str]:
        """The keys of the program's configs that the field retired here: a tune that runs again
        does not keep them."""
        by_config: dict[str, list[TrialOutcome]] = {}
        for trial in self._trials(fingerprint):
            by_config.setdefault(trial.config_key, []).append(trial)
        return {key for key, trials in by_config.items() if FieldStats(tuple(trials)).retired}

    def _trials(self, fingerprint: str, where: str = "", *arguments: str) -> list[TrialOutcome]:
        """The program's trials here, oldest first, those `where` (more SQL) picks."""
        rows = self._sql.execute(
            "SELECT config, pairs, wins, speedup, jit_ns, tuned_ns, verdict, compile_s "
            f"FROM trials WHERE {_KEY} {where} ORDER BY updated", (fingerprint, *self._scope, *arguments)).fetchall()
        return [TrialOutcome(c, p, w, x, _nan(j), _nan(t), *rest) for c, p, w, x, j, t, *rest in rows]

    def state(self, fingerprint: str, *, allow_numerics_change: bool = False) -> DecisionState:
        """The one rule (module docstring) for the program's latest decision here."""
        from hlotune.tuning.storage.fleet_log import VERIFIED_FLOOR

        decision = self.best(fingerprint, allow_numerics_change=allow_numerics_change)
        carried = self.carried(fingerprint) if decision is None else None
        if carried is not None and (allow_numerics_change or not carried.chosen.flags.changes_numerics):
            field = self.field(fingerprint, carried.chosen.key)
            state = RETIRED if field.retired else APPLIED if field.confirmed else CARRIED
            return DecisionState(state, carried, None, field)
        if decision is None or decision.kept_default:
            return DecisionState(NOT_TUNED if decision is None else DEFAULT_KEPT, decision, None, FieldStats(()))
        key = decision.chosen.key
        verification, field = self.verification(fingerprint, key), self.field(fingerprint, key)
        if field.retired:
            state = RETIRED
        elif verification is not None and verification.speedup < VERIFIED_FLOOR:
            state = NO_VERIFIED_GAIN
        else:
            state = APPLIED if field.confirmed else ON_TRIAL
        return DecisionState(state, decision, verification, field)


def _real(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _nan(value: float | None) -> float:
    return math.nan if value is None else value
