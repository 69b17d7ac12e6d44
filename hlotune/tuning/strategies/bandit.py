"""A multi-armed bandit over search strategies, as OpenTuner's AUC bandit meta-technique.

No one search wins on every program: on the held-out programs of docs/tuning.md the model-ranked
evolutionary search led on most, but on one seed of jaxmd-lj it never found the XNNPACK fusion
that random search and TPE found (1.07x against 1.45-1.60x), because the prior ranked it away.
`Bandit` splits each batch between its arms by how often each has recently found a new best
config, with a bonus for arms tried less (the upper confidence bound), so a search that is
wrong about this program loses its slots to one that is not. Every arm is told every trial:
the evolutionary arm breeds from TPE's finds, and TPE models the evolutionary arm's.

It is `--strategy bandit`, not the default: on 12 held-out programs x 3 seeds at 32 configs
it kept 0.963x the default's speedup (docs/tuning.md), the arms splitting a budget too small
for any of them.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence

from hlotune.compiler.configs.config import CompileConfig
from hlotune.tuning.strategies.base import Strategy, Trial
from hlotune.tuning.strategies.evolutionary import Evolutionary
from hlotune.tuning.strategies.optuna_search import OptunaTPE
from hlotune.tuning.strategies.parts import StrategyParts
from hlotune.tuning.strategies.random_search import RandomSearch


class Bandit(Strategy):
    """Each slot of a batch goes to the arm of the highest score: the area under its curve of
    recent new bests (the last `window` configs it asked, later ones weighing more) plus
    `exploration` x sqrt(2 ln(all uses) / its uses). An arm never used scores infinity, so the
    first batch tries each. A config is a new best when its cost is `margin` below the best told
    before its batch."""

    name = "bandit"

    def __init__(self, *arms: Strategy, window: int = 16, exploration: float = 0.25,
                 margin: float = 0.01) -> None:
        super().__init__()
        if len(arms) < 2:
            raise ValueError("a bandit needs at least two arms")
        self.arms = arms
        self._window, self._exploration, self._margin = window, exploration, margin
        self._outcomes = [deque(maxlen=window) for _ in arms]  # 1: a new best, 0: not
        self._uses = [0] * len(arms)
        self._owner: dict[CompileConfig, int] = {}  # config asked -> the arm that asked it

    @classmethod
    def from_parts(cls, parts: StrategyParts) -> Bandit:
        """`--strategy bandit`: the ranked evolutionary search, TPE and random search, whose arm
        draws other configs than the evolutionary arm's random first generation."""
        return cls(Evolutionary.from_parts(parts), OptunaTPE(parts.space, parts.seed, study=parts.study),
                   RandomSearch(parts.space, parts.seed + 1))

    def ask(self, n: int) -> list[CompileConfig]:
        slots = self._slots(n)
        order = sorted(range(len(self.arms)), key=lambda arm: -slots[arm])
        configs: list[CompileConfig] = []
        for arm in order:
            configs += self._ask_arm(arm, slots[arm])
        for arm in order:  # an arm that ran dry, or repeated another's config, leaves its slots
            configs += self._ask_arm(arm, n - len(configs))
        return configs

    def tell(self, trials: Sequence[Trial]) -> None:
        # A batch's configs compete with what was told before it, not with each other.
        best = min(self.costs.values(), default=math.inf)
        super().tell(trials)
        for trial in trials:
            arm = self._owner.pop(trial.config, None)
            if arm is not None:
                self._outcomes[arm].append(int(trial.cost < best * (1 - self._margin)))
        for arm in self.arms:
            arm.tell(trials)

    def shares(self) -> dict[str, int]:
        """How many configs each arm has asked for so far, by arm name."""
        return {arm.name: uses for arm, uses in zip(self.arms, self._uses)}

    def _slots(self, n: int) -> list[int]:
        """How many of `n` configs each arm asks for: one slot at a time to the best score, a
        slot given counting as a use (so a batch spreads as the confidence bonus shrinks)."""
        uses, slots = list(self._uses), [0] * len(self.arms)
        for _ in range(n):
            arm = max(range(len(self.arms)), key=lambda a: self._score(a, uses))
            uses[arm] += 1
            slots[arm] += 1
        return slots

    def _score(self, arm: int, uses: list[int]) -> float:
        if uses[arm] == 0:
            return math.inf
        bonus = self._exploration * math.sqrt(2 * math.log(sum(uses)) / uses[arm])
        return _area_under_curve(self._outcomes[arm]) + bonus

    def _ask_arm(self, arm: int, n: int) -> list[CompileConfig]:
        fresh = [config for config in self.arms[arm].ask(n) if self._fresh(config)] if n > 0 else []
        for config in fresh:
            self._owner[config] = arm
        self._uses[arm] += len(fresh)
        return fresh


def _area_under_curve(outcomes: deque[int]) -> float:
    """OpenTuner's credit: each new best weighted by how recent it is, 1 for all new bests."""
    n = len(outcomes)
    if n == 0:
        return 0.0
    return sum((i + 1) * outcome for i, outcome in enumerate(outcomes)) / (n * (n + 1) / 2)
