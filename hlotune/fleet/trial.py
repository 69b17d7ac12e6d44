"""A decision on trial in one process: its executable against jax.jit's, on the program's own
first calls, until one is shown faster or the trial's bound is spent.

Why in every process: a tuned executable's speed moves from one process to the next (memory
layout, which core, what else runs), so one measurement elsewhere cannot promise the next
process a gain. The trial runs the user's calls, alternating the two executables in pairs
(jax.jit first in even pairs, the decision first in odd ones, so that neither always follows
the other), each call timed from its arguments' readiness to its outputs'. The first pair is
warm-up (jax.jit's first call compiles) and is not counted.

A pair counts only if jax.jit compiled in neither call: its first call compiles, and so may a
later one, when the decision's outputs (committed arrays) come back as its arguments.

The rule is a sequential sign test (storage/field.py has it, as the field pools pairs the same
way): sequential, so a clear answer ends the trial early; a sign test, because single calls on
a shared machine carry outliers several times their length. A pair is a win where jax.jit's
call took more than TIE times the decision's. From MIN_PAIRS pairs on, after each pair, the
decision is KEPT once the wins are more than a fair coin gives with probability ALPHA; from
MIN_REJECT_PAIRS pairs on, it is REJECTED once the pairs that are not wins pass the looser
ALPHA_REJECT (slower, or no gain worth having). At the trial's bound, MAX_PAIRS pairs or
MAX_SLOWER_S seconds run at either executable, it is TIED: the process keeps jax.jit's
executable, unless the field's pairs with its own show the decision faster (jitted.py). The cost,
the calls run at the slower executable, is thus small where the difference is large, and the
difference small where the trial runs long. The speedup a trial reports is the median of its
pairs' ratios.

A decision the field has confirmed (storage/field.py: its pooled pairs shown faster, and
RETIRE_AFTER processes or more kept it) is kept sooner: once its first CONFIRMED_PAIRS pairs
each run faster than the square root of the field's median speedup, halfway to it in log. A
large gain is where a trial costs most (tv3d's 3.8x: each of jax.jit's calls costs 2.8 calls
of the decision), and there a pair beyond half the gain is what noise almost never makes; a
process where the decision loses still shows it in its first pairs, and the usual rule goes
on. A field gain below TIE squared gives no such bar: its trials run the usual rule.

A decision kept by a small margin (a median below RECHECK_BELOW) is tried once more, RECHECK_S
seconds later in the same process (jitted.py): two executables' relative speed drifts within
a process too (5-13% over seconds on these machines, docs/results/tuning.md), enough to turn a
near-tie. The re-trial runs the same rule afresh, and its verdict is the process's last word: a
tie or a loss puts jax.jit's executable back. The field keeps a process's last trial of a
config. A large gain, or one kept at the field's bar, is not tried again.
"""

from __future__ import annotations

import math
import statistics

from hlotune.lazy import renamed_attributes
from hlotune.tuning.final_check import TIE
from hlotune.tuning.storage.field import (ALPHA_REJECT, KEPT, REJECTED, TIED, UNFINISHED, TrialOutcome,
                                          coin_tail, shown_faster)

JIT_ARM, TUNED_ARM = "jit", "tuned"
MIN_PAIRS = 8  # counted pairs before the rule may keep a decision (8 wins of 8: ALPHA)
MIN_REJECT_PAIRS = 5  # counted pairs before it may reject one (5 losses of 5: ALPHA_REJECT)
MAX_PAIRS = 64  # counted pairs at most: undecided by then, the trial is TIED
MAX_SLOWER_S = 2.0  # seconds of counted calls at either executable, at most
CONFIRMED_PAIRS = 3  # pairs after which a decision the field confirmed may be kept
RECHECK_BELOW = 1.15  # a decision kept at a median below this is tried once more, RECHECK_S later
RECHECK_S = 10.0


class ProcessTrial:
    """The trial of one config in this process; `next_arm` says which executable runs the next
    call, `add` takes its time, and `verdict` is KEPT, REJECTED or TIED once decided (None
    before)."""

    def __init__(self, config_key: str, compile_s: float, field_speedup: float | None = None, *,
                 recheck: bool = False) -> None:
        """`field_speedup`: the field's median speedup of a decision it confirmed; None else.
        `recheck`: this is the decision's second trial in the process."""
        self.config_key, self.compile_s, self.recheck = config_key, compile_s, recheck
        self.bar = math.sqrt(field_speedup) if field_speedup is not None and field_speedup > TIE**2 else None
        self.on_field_evidence = False  # kept at the field's bar, not by the sign test
        self.verdict: str | None = None
        self.pairs = self.wins = 0
        self._ratios: list[float] = []  # jax.jit's call over the decision's, per counted pair
        self._times: dict[str, list[float]] = {JIT_ARM: [], TUNED_ARM: []}
        self._pair: dict[str, float] = {}  # the pair under way
        self._started = 0  # pairs begun, the warm-up and dropped ones included

    def next_arm(self) -> str:
        first, second = (JIT_ARM, TUNED_ARM) if self._started % 2 == 0 else (TUNED_ARM, JIT_ARM)
        return second if first in self._pair else first

    def add(self, arm: str, seconds: float, compiled: bool = False) -> None:
        """One call's seconds under `arm` (the one `next_arm` named); `compiled`: jax.jit
        compiled in it, so its pair does not count."""
        self._pair[arm] = -1.0 if compiled else seconds
        if len(self._pair) < 2:
            return
        jit_s, tuned_s = self._pair[JIT_ARM], self._pair[TUNED_ARM]
        self._pair, self._started = {}, self._started + 1
        if self._started == 1 or jit_s < 0 or tuned_s < 0:  # the warm-up pair, or a compile
            return
        self._times[JIT_ARM].append(jit_s)
        self._times[TUNED_ARM].append(tuned_s)
        self._ratios.append(jit_s / tuned_s)
        self.pairs += 1
        self.wins += jit_s > TIE * tuned_s
        self.verdict = self._decide()

    def _decide(self) -> str | None:
        if self.bar is not None and self.pairs == CONFIRMED_PAIRS and min(self._ratios) > self.bar:
            self.on_field_evidence = True
            return KEPT
        if self.pairs >= MIN_PAIRS and shown_faster(self.wins, self.pairs):
            return KEPT
        if self.pairs >= MIN_REJECT_PAIRS and coin_tail(self.pairs - self.wins, self.pairs) < ALPHA_REJECT:
            return REJECTED
        if self.pairs >= MAX_PAIRS or max(sum(t) for t in self._times.values()) >= MAX_SLOWER_S:
            return TIED
        return None

    @property
    def rechecks(self) -> bool:
        """Whether the decision it kept is to be tried once more: kept by a small margin, on
        its own pairs, in its first trial."""
        return (self.verdict == KEPT and not self.recheck and not self.on_field_evidence
                and self.speedup < RECHECK_BELOW)

    @property
    def ratios(self) -> tuple[float, ...]:
        """jax.jit's call over the decision's, per counted pair, in order."""
        return tuple(self._ratios)

    @property
    def speedup(self) -> float:
        """The decision's: the median of the counted pairs' ratios (1 before any)."""
        return statistics.median(self._ratios) if self._ratios else 1.0

    def outcome(self) -> TrialOutcome:
        """What the field keeps of it: UNFINISHED while undecided."""
        return TrialOutcome(self.config_key, self.pairs, self.wins, self.speedup, _median(self._times[JIT_ARM]),
                            _median(self._times[TUNED_ARM]), self.verdict or UNFINISHED, self.compile_s)


def _median(seconds: list[float]) -> float:
    return statistics.median(seconds) * 1e9 if seconds else math.nan


__getattr__ = renamed_attributes(__name__, {"Trial": "ProcessTrial"})  # strategies/base.py's Trial is a measured config
