"""A cost model that learns the tuned program while the tune runs (Ansor, MetaSchedule, TLP).

A pretrained model has never seen the program; the program's own measurements are the best
evidence there is once a few exist. `ChoiceModel` is a ridge regression of log(cost) on the
choices a config makes (each XLA option value, disabled pass and layout, as in the report's
importance analysis): it refits in microseconds after every batch, so it can follow the search.
`OnlineCostModel` blends its ranking with a prior's (the pretrained GNN), the prior's weight
falling as measurements accumulate. (Exploration, so that a prior wrong about this program
cannot keep the search away from what it misjudged, is the strategy's: Evolutionary's
`explore`.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.stats import rankdata

from hlotune.compiler.config import CompileConfig
from hlotune.tuning.cost_model import CostModel
from hlotune.tuning.strategies import Trial


def choices(config: CompileConfig) -> list[str]:
    """What a config changes from XLA's default, one readable item per choice."""
    items = [f"{name}={value}" for name, value in config.flags.options]
    items += [f"disable pass {name}" for name in config.flags.disabled_passes]
    items += [f"layout {site}={dims}" for site, dims in config.layout.layouts]
    items += [f"kernel {key} partitions={list(parts)}" for key, parts in config.kernels.partitions]
    items += [f"kernel {key} fusion={decision}" for key, decision in config.kernels.fusion]
    return items


def ridge(x: np.ndarray, y: np.ndarray, penalty: float) -> np.ndarray:
    """Coefficients of y ~ intercept + x, the intercept unpenalised (centring). With penalty 0,
    the minimum-norm least-squares answer, so choices that always come together share their
    effect. Solved in whichever of the primal (choices x choices) or dual (configs x configs)
    form is smaller: a layout space has hundreds of choices and a tune a few dozen configs."""
    xc, yc = x - x.mean(axis=0), y - y.mean()
    n, p = xc.shape
    if n < p:
        return xc.T @ np.linalg.lstsq(xc @ xc.T + penalty * np.eye(n), yc, rcond=None)[0]
    return np.linalg.lstsq(xc.T @ xc + penalty * np.eye(p), xc.T @ yc, rcond=None)[0]


class ChoiceModel:
    """log(cost) as a sum of per-choice effects, fitted on one program's healthy trials."""

    def __init__(self, penalty: float = 1.0) -> None:
        self.penalty = penalty
        self.effects: dict[str, float] = {}

    def fit(self, configs: Sequence[CompileConfig], costs: Sequence[float]) -> None:
        names = sorted({c for config in configs for c in choices(config)})
        column = {name: j for j, name in enumerate(names)}
        x = np.zeros((len(configs), len(names)))
        for i, config in enumerate(configs):
            x[i, [column[c] for c in choices(config)]] = 1.0
        fitted = ridge(x, np.log(costs), self.penalty) if len(configs) > 1 and names else []
        self.effects = dict(zip(names, map(float, fitted)))

    def predict(self, configs: Sequence[CompileConfig]) -> np.ndarray:
        """Predicted log cost relative to the fit's mean; unseen choices count 0."""
        return np.array([sum(self.effects.get(c, 0.0) for c in choices(config)) for config in configs])


class OnlineCostModel(CostModel):
    """The program's own ChoiceModel blended with a `prior`.

    The blend is of ranks (the prior's scores are not in cost units): the prior weighs
    `prior_trials / (prior_trials + n)` after n healthy measurements, so it leads at the start
    and fades once the program has spoken.
    """

    def __init__(self, prior: CostModel | None = None, *, prior_trials: int = 16) -> None:
        self.prior, self.prior_trials = prior, prior_trials
        self.learned = ChoiceModel()
        self.measured = 0

    def predict(self, configs: Sequence[CompileConfig]) -> np.ndarray:
        own = rankdata(self.learned.predict(configs))
        if self.prior is None:
            return own
        weight = self.prior_trials / (self.prior_trials + self.measured)
        return weight * rankdata(self.prior.predict(configs)) + (1 - weight) * own

    def update(self, trials: Sequence[Trial], default_ns: float) -> None:
        """Refit on every healthy trial (the prior is fine-tuned separately, if at all)."""
        healthy = [trial for trial in trials if math.isfinite(trial.cost)]
        self.learned.fit([t.config for t in healthy], [t.cost for t in healthy])
        self.measured = len(healthy)
