"""TuneOptions: what one tune searches and how, built by keyword and passed whole.

`hlotune.tune(fn, *args, budget=16, ...)` builds one from its keywords, `hlotune tune` from its
flags and `@hlotune.autotune` from its arguments, and each part of the tune reads what it needs
from the one object. The options are what decides the search and so its result: the space, the
stopping rule, the strategy and its model, the batches, the seed, the measurement settings.
What is tuned (the program), where it is measured and stored (runner, database) and who watches
(progress, callbacks) belong to the call, not here: the same options tune any program anywhere,
and the decorator, which tunes on the machine it runs on, takes them without a runner.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING

from hlotune.errors import HlotuneError
from hlotune.evaluation.registry import model_kind
from hlotune.lazy import Imported
from hlotune.tuning.models.registry import DEFAULT_MODEL, PRIORS
from hlotune.tuning.recipes.registry import SPACES
from hlotune.tuning.strategies.parts import StrategyFactory
from hlotune.tuning.strategies.registry import (
    FIRST_GENERATIONS,
    RANDOM,
    RANKED,
    STRATEGIES,
    StrategyKind,
    check_first_generation,
)

if TYPE_CHECKING:  # types only: `hlotune tune --help` reads the defaults without importing numpy
    from optuna.samplers import BaseSampler

    from hlotune.compiler.measurement.measure import MeasureSettings
    from hlotune.evaluation.scorers import Scorer
    from hlotune.tuning.models.base import CostModel
    from hlotune.tuning.strategies.base import Strategy

# The search a tune runs when none is named, chosen by the Tuner v4 benchmark
# (docs/results/tuning.md#tuner-v4): the evolutionary search ranked by the model, whose first
# generation in the flags space is the shipped portfolio. Over three seeds it kept 1.086x TPE's
# speedup at budget 8 [1.031, 1.143]; at 32 TPE kept 1.015x its speedup [0.982, 1.044], inside
# the noise, and TPE from the portfolio (seed 0) kept less than either.
DEFAULT_STRATEGY = "evolutionary"


@dataclass(frozen=True, kw_only=True)
class TuneOptions:
    """A tune's search; an invalid value is an HlotuneError naming its field."""

    space: str = "flags"  # flags, layout, tile, fusion or all
    budget: int | None = 32  # evaluated configs, the default included; None: time_s alone
    time_s: float | None = None  # seconds of search; whichever of the two ends first
    # A name, a factory of a Strategy from the tune's StrategyParts (built as a name's is:
    # docs/extending.md), a Strategy given whole (e.g. Exhaustive([...]) to measure chosen
    # configs: used as it is) or an Optuna sampler.
    strategy: str | StrategyFactory | Strategy | BaseSampler = DEFAULT_STRATEGY
    # Ranks a ranked strategy's candidates (the tile space: each kernel's candidates, a model
    # named only: recipes/tile.py): a name `--model` takes (models/registry.py: "pretrained",
    # the shipped models; "transfer[@DIR]", flags only; "none" is None), a scorer, a CostModel
    # of yours (closed by you), or None.
    # The fusion space ranks by the module roofline (models/roofline.py) unless given a
    # CostModel or None.
    model: str | Scorer | CostModel | None = DEFAULT_MODEL
    fine_tune_every: int | None = None  # fine-tune the model every N evaluated configs
    online: bool = True  # the model also learns this program's measurements after every batch
    # the online model ranks by predicted log cost less `optimism` posterior standard
    # deviations (LinUCB), so choices never measured are tried despite a prior that ranks them away
    optimism: float = 0.0
    # the search's first configs: its own "random" draws, "covering" (every choice once: the
    # evolutionary search) or "portfolio" (configs that won elsewhere: evolutionary and optuna);
    # None: the space's recipe says ("portfolio" for the evolutionary search in flags, else "random")
    first_generation: str | None = None
    # the evolutionary search: the share of each batch after the first drawn at random from the
    # whole space, beside the children of the best (strategies.Evolutionary)
    immigrants: float = 0.0
    warm_start: int = 4  # first try the flags of up to N configs that won on other programs
    # those winners in the order that kept most of their gain on their programs (the fleet's
    # portfolio: fleet_portfolio.py); False: the newest first
    fleet_portfolio: bool = True
    batch: int = 8  # configs measured together
    # tile, ranked: candidates measured per kernel, the model's favourites (5: all)
    per_kernel: int = 2
    # all: after flags x layouts, the tile and fusion searches on the best config's kernels
    # (strategies/staged.py); False: flags x layouts alone
    kernel_stages: bool = True
    seed: int = 0
    allow_numerics_change: bool = False  # also search options that change results by design
    settings: MeasureSettings = field(default_factory=Imported("hlotune.compiler.measurement.measure", "MeasureSettings"))

    def __post_init__(self) -> None:
        kind = model_kind(PRIORS, self.model) if isinstance(self.model, str) else None
        if kind is not None and kind.load is None:  # `none`: no model, as `--model none` says
            object.__setattr__(self, "model", None)
        if self.space not in SPACES:
            raise HlotuneError(f"space must be one of {', '.join(SPACES)}, got {self.space!r}")
        if self.budget is None and self.time_s is None:
            raise HlotuneError("budget or time_s must be given: configs to evaluate or seconds")
        for name in ("budget", "batch", "fine_tune_every", "per_kernel"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise HlotuneError(f"{name} must be at least 1, got {value}")
        if self.time_s is not None and not self.time_s > 0:
            raise HlotuneError(f"time_s must be positive, got {self.time_s}")
        if self.optimism < 0:
            raise HlotuneError(f"optimism must not be negative, got {self.optimism}")
        if not 0 <= self.immigrants <= 1:
            raise HlotuneError(f"immigrants must be a share from 0 to 1, got {self.immigrants}")
        if self.warm_start < 0:
            raise HlotuneError(f"warm_start must not be negative, got {self.warm_start}")
        if isinstance(self.strategy, str) and self.strategy not in STRATEGIES:
            raise HlotuneError(
                f"strategy must be one of {', '.join(STRATEGIES)}, got {self.strategy!r}"
            )
        # an Optuna sampler's are the optuna strategy's, a factory takes every one, and a
        # Strategy given whole makes its own first configs
        check_first_generation(self.first_generation or RANDOM, self.kind,
                               self.strategy if isinstance(self.strategy, str)
                               else "a Strategy given whole" if self.kind is None else "optuna")
        if self.immigrants and not self.ranked:
            raise HlotuneError(f"immigrants are drawn by the {' and '.join(RANKED)} strategies only, "
                               f"not by {self.strategy!r}")
        if self.ranking_model is not None and not self.ranked:
            if self.kind is None:
                raise HlotuneError("model ranks for the strategies built here, not one given whole: "
                                   "give its factory instead (docs/extending.md)")
            other = repr(self.strategy) if isinstance(self.strategy, str) else "an Optuna sampler"
            raise HlotuneError(f"model ranks candidates of the {' and '.join(RANKED)} strategies "
                               f"only, not of {other}")

    @property
    def ranking_model(self) -> str | Scorer | CostModel | None:
        """`model`, but the default serves only the strategy that ranks: with another, none."""
        if self.model == DEFAULT_MODEL and not self.ranked:
            return None
        return self.model

    @property
    def ranked(self) -> bool:
        """Whether the strategy is one whose candidates a cost model ranks."""
        return self.kind is not None and self.kind.ranked

    @property
    def kind(self) -> StrategyKind | None:
        """How the strategy is built: a name's (strategies/registry.py), an Optuna sampler's (the
        optuna strategy's), or a factory's, which is handed all a ranked strategy is; None for
        a Strategy given whole."""
        from hlotune.tuning.strategies.base import Strategy

        if isinstance(self.strategy, str):
            return STRATEGIES[self.strategy]
        if isinstance(self.strategy, Strategy):
            return None
        if callable(self.strategy):
            return StrategyKind(self.strategy, ranked=True, first_generations=FIRST_GENERATIONS)
        optuna = STRATEGIES["optuna"]
        return replace(optuna, factory=partial(optuna.factory, sampler=self.strategy))
