"""The "all" space's search in stages, as XTAT tunes a program: flags and layouts first, then
the kernels of the winner's compile, then their fusion.

A kernel key names a kernel of one compile (compiler/xla/kernels.py), and flags and layouts change
which kernels XLA makes, so kernels cannot be genes beside the flags: they are tuned after them,
on the module XLA compiles for the best config so far. Each stage is a strategy built when the
stage begins, around that config, and asks until its share of the budget (in configs, or in
seconds when the tune has only a time budget) is spent or it runs dry; what a stage leaves
passes on to the next. The
final check then sees every stage's configs, so a kernel stage that helps nothing keeps the
flags' winner. A resumed tune tells the same costs in the same order, so it reaches the same
stages around the same configs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hlotune.compiler.configs.config import DEFAULT_CONFIG, CompileConfig
from hlotune.errors import HlotuneError
from hlotune.tuning.strategies.base import Strategy, Trial


@dataclass(frozen=True)
class Stage:
    """One stage: what it is called, its share of the budget (configs asked, or seconds), and
    how its strategy is built around the best config so far (None: nothing to tune there)."""

    name: str
    configs: int | None
    seconds: float | None
    build: Callable[[CompileConfig], Strategy | None]


class Staged(Strategy):
    """Each stage's strategy in turn, each built around the best config its predecessors found."""

    def __init__(self, stages: Sequence[Stage], clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        if not stages:
            raise HlotuneError("a staged search needs at least one stage")
        self.stages, self._clock = list(stages), clock
        self.name = "+".join(stage.name for stage in self.stages)
        # stage i asks until the search has asked configs_mark[i] configs or run seconds_mark[i]
        self._configs_mark = _marks(stage.configs for stage in self.stages)
        self._seconds_mark = _marks(stage.seconds for stage in self.stages)
        self._index, self._current, self._count, self._started = -1, None, 0, clock()
        self.bases: list[CompileConfig] = []  # the config each stage was built around
        self._next_stage()

    @property
    def stage(self) -> str | None:
        """The stage asking now; None once every stage is done."""
        return self.stages[self._index].name if self._current is not None else None

    @property
    def profiles(self) -> bool:
        return self._current is not None and self._current.profiles

    def ask(self, n: int) -> list[CompileConfig]:
        while self._current is not None:
            left = min(n, self._left())
            configs = [c for c in self._current.ask(left) if self._fresh(c)] if left > 0 else []
            if configs:
                self._count += len(configs)
                return configs
            self._next_stage()
        return []

    def tell(self, trials: Sequence[Trial]) -> None:
        super().tell(trials)
        if self._current is not None:
            self._current.tell(trials)

    def best(self) -> CompileConfig:
        """The cheapest healthy config told so far (the default before any)."""
        healthy = [(cost, i, config) for i, (config, cost) in enumerate(self.costs.items()) if math.isfinite(cost)]
        return min(healthy, default=(1.0, 0, DEFAULT_CONFIG))[2]

    def _left(self) -> float:
        """Configs the current stage may still ask (inf where its share is in seconds)."""
        seconds = self._seconds_mark[self._index]
        if seconds is not None and self._clock() - self._started >= seconds:
            return 0
        configs = self._configs_mark[self._index]
        return math.inf if configs is None else configs - self._count

    def _next_stage(self) -> None:
        """Build the next stage that has a share left and something to tune, around the best
        config so far. It learns only its own configs: the others lie outside its space."""
        self._current = None
        while self._current is None and self._index + 1 < len(self.stages):
            self._index += 1
            if self._left() <= 0:
                continue
            base = self.best()
            self._current = self.stages[self._index].build(base)
            if self._current is not None:
                self.bases.append(base)


def _marks(shares) -> list[float | None]:
    """Running sums of the stages' shares (None where a stage has no share of that kind)."""
    marks, total = [], 0  # configs stay whole numbers: strategies take them as counts
    for share in shares:
        if share is None:
            marks.append(None)
            continue
        total += share
        marks.append(total)
    return marks
