"""Strategies in turn: the next asks once the one before runs dry."""

from __future__ import annotations

from collections.abc import Sequence

from hlotune.compiler.configs.config import CompileConfig
from hlotune.tuning.strategies.base import Strategy, Trial


class Chain(Strategy):
    """Each strategy in turn, the next once the one before runs dry: e.g. every single change
    of the default first, then random combinations (how `hlotune collect` draws flags), or a
    warm start's configs before the search."""

    def __init__(self, *strategies: Strategy, name: str | None = None) -> None:
        super().__init__()
        self._strategies = strategies
        self.name = name or "+".join(strategy.name for strategy in strategies)

    def ask(self, n: int) -> list[CompileConfig]:
        configs: list[CompileConfig] = []
        for strategy in self._strategies:
            while len(configs) < n:
                fresh = [c for c in strategy.ask(n - len(configs)) if self._fresh(c)]
                if not fresh:
                    break
                configs += fresh
        return configs

    def tell(self, trials: Sequence[Trial]) -> None:
        super().tell(trials)
        for strategy in self._strategies:
            strategy.tell(trials)
