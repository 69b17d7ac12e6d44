"""The final check: which of the search's finalists a tune keeps, and the speedup it reports,
each from measurements of its own (the winner's curse).

The search's best runtime is the fastest of many noisy measurements, so it flatters the config
that won it; re-measuring finalists and keeping the fastest flatters the survivor again if the
batch that picked it also reports its speedup. So the check has two stages:

1. Choosing. The finalists (the search's FINALISTS fastest configs that beat the default) are
   measured again beside the default, in up to CONFIRM_ROUNDS batches. A finalist's estimate is
   the geometric mean, over the rounds it took part in, of its runtime over its batch's
   default's. After each round a finalist drops out when it is no faster than the default or
   slower than the leader beyond the noise floor; the rounds stop once the leader stands alone
   and beats the default beyond the noise floor, or no finalist is left. The leader is chosen
   when its estimate beats the default beyond the noise floor: the median of the rounds' floors,
   not shrunk with their count, so more rounds sharpen the estimates but never lower the bar.
   Three rounds at most: a close call then rests on three independent compiles of each
   contender, for at most 3 x FINALISTS re-measured configs (the successive halving this
   replaces re-measured 4 + 2). Past the tune's deadline, only the first round runs.
2. Reporting. A chosen config is measured once more beside the default, in a batch of its own,
   and that batch's speedup is the one reported. It played no part in choosing, so it is as
   likely to come out low as high, and it is reported as measured (below the bar, or below 1,
   when the gain was luck). A fresh batch rather than half of the choosing batches' samples:
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

from hlotune.compiler.config import DEFAULT_CONFIG, CompileConfig
from hlotune.compiler.measure import BatchResult, Measurement

FINALISTS = 3  # the search's fastest configs that re-measuring chooses from
CONFIRM_ROUNDS = 3  # choosing batches at most

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
class Standing:
    """A finalist's re-measurements, one per round it took part in."""

    config: CompileConfig
    runs: tuple[Beside, ...] = ()

    @property
    def cost(self) -> float:
        """Geometric mean of runtime over the batch's default; inf once it failed."""
        costs = [run.cost for run in self.runs]
        if not costs or not all(math.isfinite(cost) for cost in costs):
            return math.inf
        return float(np.exp(np.mean(np.log(costs))))


@dataclass(frozen=True)
class Confirmation:
    """The choosing stage after some rounds."""

    standings: tuple[Standing, ...]  # every finalist, in the search's order
    noise: float  # the bar: median of the rounds' noise floors (inf: none was finite)
    rounds: int

    @property
    def leader(self) -> Standing:
        """The lowest estimate (on a tie, the search's favourite)."""
        return min(self.standings, key=lambda standing: standing.cost)

    @property
    def chosen(self) -> bool:
        """Whether the leader beats the default beyond the noise floor."""
        return 1 / self.leader.cost - 1 > self.noise

    @property
    def contenders(self) -> list[CompileConfig]:
        """Finalists still in the running: faster than the default, and not slower than the
        leader beyond the noise floor."""
        bar = self.leader.cost * (1 + self.noise)
        return [s.config for s in self.standings if s.cost < 1.0 and s.cost <= bar]

    @property
    def settled(self) -> bool:
        contenders = self.contenders
        return not contenders or (len(contenders) == 1 and self.chosen)


@dataclass(frozen=True)
class Verdict:
    """What the final check decided, and the measurement that reports it."""

    candidate: CompileConfig  # the leader
    chosen: CompileConfig  # the leader, or the default
    reported: Beside  # chosen: the batch after choosing; else the leader's last round
    confirmed_speedup: float | None  # the leader's estimate over the rounds (None: it failed)
    noise: float | None  # the bar (None: no round had a finite noise floor)
    rounds: int


def final_check(measure: Measure, finalists: Sequence[CompileConfig], deadline: float | None = None) -> Verdict:
    """Choose among `finalists` (at least one) by re-measuring them, then report the chosen
    one's speedup from one more batch; `deadline` (monotonic) cuts the rounds after the first."""
    confirmation = confirm(measure, finalists, deadline)
    leader = confirmation.leader
    confirmed = 1 / leader.cost if math.isfinite(leader.cost) else None
    noise = confirmation.noise if math.isfinite(confirmation.noise) else None
    chosen, reported = DEFAULT_CONFIG, leader.runs[-1]
    if confirmation.chosen:
        reported = _beside(measure, [leader.config])[leader.config]
        chosen = leader.config if math.isfinite(reported.ns) else DEFAULT_CONFIG
    return Verdict(leader.config, chosen, reported, confirmed, noise, confirmation.rounds)


def confirm(measure: Measure, finalists: Sequence[CompileConfig], deadline: float | None = None,
            rounds: int = CONFIRM_ROUNDS) -> Confirmation:
    """Re-measure the contenders until the leader is settled, `rounds` were taken, or (after
    the first) the `deadline` passed."""
    standings = {config: Standing(config) for config in finalists}
    floors: list[float] = []
    contenders = list(finalists)
    for done in range(1, rounds + 1):
        for config, run in _beside(measure, contenders, floors).items():
            standings[config] = Standing(config, standings[config].runs + (run,))
        confirmation = Confirmation(tuple(standings.values()), _bar(floors), done)
        contenders = confirmation.contenders
        if confirmation.settled or (deadline is not None and time.monotonic() >= deadline):
            break
    return confirmation


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


def _bar(floors: list[float]) -> float:
    finite = [floor for floor in floors if math.isfinite(floor)]
    return float(np.median(finite)) if finite else math.inf
