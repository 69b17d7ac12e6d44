"""The final check: which of the search's finalists a tune keeps, and the speedup it reports,
each from measurements of its own (the winner's curse).

The search's best runtime is the fastest of many noisy measurements, so it flatters the config
that won it; re-measuring finalists and keeping the fastest flatters the survivor again if the
batch that picked it also reports its speedup. Re-measuring costs a batch per round, so it is
spent only where a win is possible and the decision is close (a race, as in F-race):

1. The gate. A finalist (one of the search's FINALISTS fastest configs that beat the default)
   races only if its search batch saw it beat the default beyond that batch's noise floor; when
   none did, nothing is re-measured and the default is kept (0 rounds). The search batch gates
   but never counts: it is the one that picked the finalist.
2. The race. The finalists still racing are measured again beside the default, one batch per
   round (interleaved, fresh executables each). A finalist's estimate is its mean log speedup
   over its rounds. After round r the leader (the highest estimate) is kept when that estimate
   exceeds BAR_PER_FLOOR x F / sqrt(r), F the median of the rounds' noise floors: a one-sided
   bound on the gain, so its interval against the default excludes 1. Why this bound: F is the
   range of the default's three executables' medians, which for log-normal executable luck of
   spread s is about 1.6 s (median); a round's log speedup sets one config executable against
   the default's pooled median, so its spread is about 1.2 s = 0.75 F, and r rounds of fresh
   executables average to 0.75 F / sqrt(r). The 97.5% one-sided quantile would be 1.96 x that,
   about 1.5 F / sqrt(r), if F were exact; it is the range of three values, so one round's F
   can be small by luck, and the race looks up to RACE_ROUNDS times. BAR_PER_FLOOR = 2 keeps a
   finalist no faster than the default in 5% of races under that model (2,000 simulated
   races; tests/test_final_check.py runs 400), where the former rule (the floor itself as the
   bar, up to 3 rounds) kept one in 15% and spent 1.6 rounds to this race's 1.1. A finalist
   drops out when its estimate, held to the last round, would still not clear the bar then:
   its gain is too small to show within the budget (a 1.005x config under a 1.2% floor stops
   after one round), or it is no gain at all. The race ends when the leader is kept, nobody is
   left, RACE_ROUNDS were spent (the default is kept), or, past the tune's deadline, after its
   first round.
3. Reporting. A kept config is measured once more beside the default, in a batch of its own,
   and that batch's speedup is the one reported. It played no part in choosing, so it is as
   likely to come out low as high, and it is reported as measured (below the bar, or below 1,
   when the gain was luck); one that batch does not find at least TIE faster is not kept,
   since a decision goes wherever the program runs and a tie keeps the default. A fresh batch rather than half of the choosing batches' samples:
   each compiled executable carries luck of its own (its memory layout, its place in the
   batch's order), which the default's replicas show as the noise floor; split samples of one
   executable share it, so they would carry the choice's luck into the report. It costs one
   config and the default's replicas.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from hlotune.compiler.configs.config import DEFAULT_CONFIG, CompileConfig
from hlotune.compiler.measurement.measure import BatchResult, Measurement

FINALISTS = 3  # the search's fastest configs that re-measuring chooses from
RACE_ROUNDS = 5  # re-measuring batches at most
BAR_PER_FLOOR = 2.0  # the kept leader's log gain over F / sqrt(rounds) (module docstring)
TIE = 1.01  # speedups below it are ties, and a tie keeps the default (here and in a trial)

Measure = Callable[[Sequence[CompileConfig]], list[BatchResult]]  # one batch (or its parts)


@dataclass(frozen=True)
class Beside:
    """A config's median runtime and its batch's default's, in ns (inf: the config failed)."""

    ns: float
    default_ns: float

    @property
    def cost(self) -> float:
        return self.ns / self.default_ns

    @property
    def speedup(self) -> float:
        return self.default_ns / self.ns


@dataclass(frozen=True)
class Finalist:
    """A config the search found faster than the default, with that batch's noise floor."""

    config: CompileConfig
    found: Beside  # its measurement in the search
    noise_floor: float | None  # of that batch (None: unknown)

    @property
    def gated(self) -> bool:
        """Whether the search saw it beat the default beyond its batch's floor (an unknown
        floor lets it race: the race measures its own)."""
        return self.found.speedup - 1 > (self.noise_floor or 0.0)


@dataclass(frozen=True)
class Standing:
    """A finalist's re-measurements, one per round it took part in."""

    config: CompileConfig
    runs: tuple[Beside, ...] = ()

    @property
    def gain(self) -> float:
        """Mean log speedup over its rounds; -inf once it failed."""
        if not self.runs or not all(math.isfinite(run.ns) for run in self.runs):
            return -math.inf
        return float(np.mean([math.log(run.speedup) for run in self.runs]))


@dataclass(frozen=True)
class Race:
    """The race after some rounds: every gated finalist's runs and every batch's floor."""

    standings: tuple[Standing, ...]  # in the search's order
    floors: tuple[float, ...]  # one per batch (a round's parts have one each)
    rounds: int

    @property
    def noise(self) -> float:
        """The median of the rounds' noise floors (inf: none was finite)."""
        finite = [floor for floor in self.floors if math.isfinite(floor)]
        return float(np.median(finite)) if finite else math.inf

    def halfwidth(self, rounds: int) -> float:
        """How far an estimate over `rounds` rounds must clear a log gain of 0 to exclude it."""
        return BAR_PER_FLOOR * self.noise / math.sqrt(rounds)

    @property
    def racing(self) -> list[Standing]:
        """The finalists measured in every round: none that dropped out."""
        return [standing for standing in self.standings if len(standing.runs) == self.rounds]

    @property
    def leader(self) -> Standing:
        """The highest estimate still racing (on a tie, the search's favourite)."""
        return max(self.racing, key=lambda standing: standing.gain)

    @property
    def kept(self) -> bool:
        """Whether the leader's interval against the default excludes 1."""
        return self.leader.gain > self.halfwidth(self.rounds)

    @property
    def contenders(self) -> list[CompileConfig]:
        """Who runs the next round: nobody once the leader is kept or the rounds are spent;
        else those racing whose estimate, held to the last round, would clear the bar then
        (which also drops those no faster than the default, and those whose interval lies
        wholly below the leader's, as the leader's reaches 0 while it is not kept)."""
        if self.kept or self.rounds >= RACE_ROUNDS:
            return []
        last = self.halfwidth(RACE_ROUNDS)
        return [standing.config for standing in self.racing if standing.gain > last]


@dataclass(frozen=True)
class Verdict:
    """What the final check decided, and the measurement that reports it."""

    candidate: CompileConfig  # the leader (no race: the search's favourite)
    chosen: CompileConfig  # the leader, or the default
    reported: Beside  # chosen: the batch after choosing; else the leader's last run
    confirmed_speedup: float | None  # the leader's estimate over the rounds (None: none or it failed)
    noise: float | None  # the race's noise floor, F (no race: the favourite's search batch's)
    rounds: int


def final_check(measure: Measure, finalists: Sequence[Finalist], deadline: float | None = None) -> Verdict:
    """Choose among `finalists` (at least one, the search's favourite first) by racing those
    the gate lets in, then report the chosen one's speedup from one more batch; `deadline`
    (monotonic) cuts the race after its first round."""
    gated = [finalist.config for finalist in finalists if finalist.gated]
    if not gated:
        favourite = finalists[0]
        return Verdict(favourite.config, DEFAULT_CONFIG, favourite.found, None, favourite.noise_floor, 0)
    state = race(measure, gated, deadline)
    leader = state.leader
    confirmed = math.exp(leader.gain) if math.isfinite(leader.gain) else None
    noise = state.noise if math.isfinite(state.noise) else None
    chosen, reported = DEFAULT_CONFIG, leader.runs[-1]
    if state.kept:
        reported = _beside(measure, [leader.config])[leader.config]
        chosen = leader.config if _faster(reported) else DEFAULT_CONFIG
    return Verdict(leader.config, chosen, reported, confirmed, noise, state.rounds)


def _faster(reported: Beside) -> bool:
    """Whether the report's batch finds the kept config faster than the default beyond a tie:
    a decision goes wherever the program runs, so one that its own fresh batch did not find
    faster is not handed over (the default is, and the result says why)."""
    return math.isfinite(reported.ns) and reported.speedup >= TIE


def race(measure: Measure, finalists: Sequence[CompileConfig], deadline: float | None = None) -> Race:
    """Re-measure the contenders round after round until nobody is left (`Race.contenders`)
    or, after the first round, the `deadline` passed."""
    standings = {config: Standing(config) for config in finalists}
    floors: list[float] = []
    contenders, rounds = list(finalists), 0
    while contenders:
        for config, run in _beside(measure, contenders, floors).items():
            standings[config] = Standing(config, standings[config].runs + (run,))
        rounds += 1
        state = Race(tuple(standings.values()), tuple(floors), rounds)
        contenders = state.contenders
        if deadline is not None and time.monotonic() >= deadline:
            break
    return state


def _beside(measure: Measure, configs: list[CompileConfig], floors: list[float] | None = None) -> dict[CompileConfig, Beside]:
    """`configs` measured in one batch, each beside its part's default; its parts' noise
    floors go to `floors`."""
    runs = {}
    for batch in measure(configs):
        if floors is not None:
            floors.append(batch.noise_floor)
        runs |= {m.config: Beside(_runtime(m), batch.default_ns) for m in batch.measurements}
    return runs


def _runtime(measurement: Measurement) -> float:
    return measurement.median_ns if measurement.ok else math.inf

