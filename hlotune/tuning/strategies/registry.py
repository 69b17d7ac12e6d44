"""The strategies `hlotune tune --strategy` names, each built by its factory from what the tune
hands it (parts.py), and the first generations a search may start from.

Names and traits live here, each strategy in its own module, imported when one is built: the
command line lists its choices without importing any strategy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hlotune.errors import HlotuneError
from hlotune.lazy import Imported
from hlotune.tuning.strategies.parts import StrategyFactory, StrategyParts

if TYPE_CHECKING:
    from hlotune.compiler.spaces.space import SearchSpace
    from hlotune.tuning.models.base import CostModel
    from hlotune.tuning.strategies.base import Strategy
    from hlotune.tuning.strategies.optuna_search import OptunaStudy

RANDOM, COVERING, PORTFOLIO = "random", "covering", "portfolio"
# A search's first configs: its own draws; a covering design (SearchSpace.covering), the
# evolutionary search's (the bandit's evolutionary arm's); or the shipped portfolio of configs
# that won on other programs (portfolio.py), which the evolutionary search asks first and the
# optuna strategies enqueue.
FIRST_GENERATIONS = (RANDOM, COVERING, PORTFOLIO)


@dataclass(frozen=True)
class StrategyKind:
    """How a strategy is built: its factory, whether a cost model ranks its candidates (it is
    handed the tune's model and immigrants), and the first generations it takes."""

    factory: StrategyFactory
    ranked: bool = False
    first_generations: tuple[str, ...] = (RANDOM,)


def _built_in(module: str, factory: str, **traits) -> StrategyKind:
    return StrategyKind(Imported(f"hlotune.tuning.strategies.{module}", factory), **traits)


STRATEGIES: dict[str, StrategyKind] = {
    "evolutionary": _built_in("evolutionary", "Evolutionary.from_parts", ranked=True,
                              first_generations=FIRST_GENERATIONS),
    "bandit": _built_in("bandit", "Bandit.from_parts", ranked=True, first_generations=FIRST_GENERATIONS),
    "random": _built_in("random_search", "RandomSearch.from_parts"),
    "exhaustive": _built_in("exhaustive", "Exhaustive.from_parts"),
    "optuna": _built_in("optuna_search", "OptunaTPE.from_parts", first_generations=(RANDOM, PORTFOLIO)),
    "optuna-gp": _built_in("optuna_search", "OptunaGP.from_parts", first_generations=(RANDOM, PORTFOLIO)),
}
RANKED = tuple(name for name, kind in STRATEGIES.items() if kind.ranked)


def strategy_kind(name: str) -> StrategyKind:
    if name not in STRATEGIES:
        raise HlotuneError(f"unknown strategy {name!r}: use {', '.join(STRATEGIES)}")
    return STRATEGIES[name]


def make_strategy(
    name: str, space: SearchSpace, seed: int = 0, cost_model: CostModel | None = None, *,
    study: OptunaStudy | None = None, first_generation: str = RANDOM, immigrants: float = 0.0,
) -> Strategy:
    """The strategy called `name`; only the ranked ones (the evolutionary search, alone or as
    the bandit's arm) use a cost model, only the optuna strategies a stored `study`, and a
    `first_generation` only the strategies that take it."""
    kind = strategy_kind(name)
    if cost_model is not None and not kind.ranked:
        raise HlotuneError(f"a cost model ranks candidates of the {' and '.join(RANKED)} strategies only, not {name}")
    check_first_generation(first_generation, kind, name)
    return kind.factory(StrategyParts(space, seed, cost_model, first_generation, immigrants, study))


def check_first_generation(first_generation: str, kind: StrategyKind | None, strategy: str) -> None:
    """HlotuneError unless `first_generation` is one that `kind` (named `strategy`) takes; None
    is a Strategy given whole, which makes its own first configs."""
    if first_generation not in FIRST_GENERATIONS:
        raise HlotuneError(f"first_generation must be one of {', '.join(FIRST_GENERATIONS)}, got {first_generation!r}")
    if first_generation not in (kind.first_generations if kind is not None else (RANDOM,)):
        takers = [name for name, other in STRATEGIES.items() if first_generation in other.first_generations]
        raise HlotuneError(f"first_generation {first_generation!r} is for the {', '.join(takers)} strategies, "
                           f"not {strategy}")
