"""A cost model that learns the tuned program while the tune runs (Ansor, MetaSchedule, TLP).

A pretrained model has never seen the program; the program's own measurements are the best
evidence there is once a few exist. `ChoiceModel` is a ridge regression of log(cost) on the
choices a config makes (each XLA option value, disabled pass and layout, as in the report's
importance analysis): it refits in microseconds after every batch, so it can follow the search.
`OnlineCostModel` blends its ranking with a prior's (the pretrained GNN), the prior's weight
following how well it ranks what this program's measurements show. (Exploration, so that a
prior wrong about this program cannot keep the search away from what it misjudged, is the
strategy's: Evolutionary's `explore`.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from hlotune.compiler.configs.config import CompileConfig
from hlotune.data.metrics import average_ranks, kendall_tau
from hlotune.tuning.models.base import CostModel
from hlotune.tuning.strategies.base import Trial


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
    """log(cost) as a sum of per-choice effects, fitted on one program's healthy trials.

    Read as Bayesian linear regression (effects a priori normal around 0, `penalty` the ratio
    of the noise's variance to theirs), it also says how unsure it is of a config's cost
    (`spread`): most about choices it never saw measured, least about combinations measured
    often. That is what an optimistic search (LinUCB) needs to try what it knows least."""

    def __init__(self, penalty: float = 1.0) -> None:
        self.penalty = penalty
        self.effects: dict[str, float] = {}
        self._x = np.zeros((0, 0))  # the fitted configs' choices, one row each
        self._columns: dict[str, int] = {}  # choice -> its column of _x
        self._variance = 0.0  # of the fitted log costs: the scale of what is unknown

    def fit(self, configs: Sequence[CompileConfig], costs: Sequence[float]) -> None:
        names = sorted({c for config in configs for c in choices(config)})
        column = {name: j for j, name in enumerate(names)}
        x = np.zeros((len(configs), len(names)))
        for i, config in enumerate(configs):
            x[i, [column[c] for c in choices(config)]] = 1.0
        y = np.log(costs)
        fitted = ridge(x, y, self.penalty) if len(configs) > 1 and names else []
        self.effects = dict(zip(names, map(float, fitted)))
        self._x, self._columns = x, column
        # The costs' own variance, not the residuals': while choices outnumber configs the fit
        # all but interpolates, and residuals near 0 would make the model sure of what it guessed.
        self._variance = float(np.var(y)) if len(configs) else 0.0

    def predict(self, configs: Sequence[CompileConfig]) -> np.ndarray:
        """Predicted log cost relative to the fit's mean; unseen choices count 0."""
        return np.array([sum(self.effects.get(c, 0.0) for c in choices(config)) for config in configs])

    def spread(self, configs: Sequence[CompileConfig]) -> np.ndarray:
        """The posterior standard deviation of each config's predicted log cost, scaled by the
        fitted costs' spread: sqrt(variance x x^T (X^T X + penalty I)^-1 x), through the dual
        form (Woodbury), so a choice never fitted counts with its prior variance."""
        inverse = np.linalg.inv(self._x @ self._x.T + self.penalty * np.eye(len(self._x)))
        spreads = []
        for config in configs:
            mine = choices(config)
            shared = self._x[:, [self._columns[c] for c in mine if c in self._columns]].sum(axis=1)
            quadratic = (len(mine) - shared @ inverse @ shared) / self.penalty
            spreads.append(math.sqrt(self._variance * max(quadratic, 0.0)))
        return np.array(spreads)


class OnlineCostModel(CostModel):
    """The program's own ChoiceModel blended with a `prior`.

    The blend is of ranks (the prior's scores are not in cost units). The prior weighs at most
    `prior_trials / (prior_trials + n)` after n healthy measurements: it leads at the start and
    fades once the program has spoken. From AGREEMENT_TRIALS measurements on, its weight also
    follows the evidence: each model is scored by how well it ranks the measured configs
    (Kendall tau; the own model by leave-one-out, so it is not judged on the costs it was
    fitted to), and the prior gets no more than its agreement's share of the two. A prior wrong
    about this program thus loses its say as soon as the program's measurements show it,
    instead of steering the search away from what it misjudged for `prior_trials` more configs.

    With `optimism` the own model ranks each config by its predicted log cost less `optimism`
    posterior standard deviations (an upper confidence bound, as LinUCB): a choice that no
    measured config made ranks as if it might help, so neither a prior that ranks it away nor
    a model that never saw it keeps it from being tried.
    """

    def __init__(self, prior: CostModel | None = None, *, prior_trials: int = 16, optimism: float = 0.0) -> None:
        self.prior, self.prior_trials, self.optimism = prior, prior_trials, optimism
        self.learned = ChoiceModel()
        self.measured = 0
        self.prior_weight = 1.0

    def predict(self, configs: Sequence[CompileConfig]) -> np.ndarray:
        own = self.learned.predict(configs)
        if self.optimism:
            own = own - self.optimism * self.learned.spread(configs)
        own = average_ranks(own)
        if self.prior is None:
            return own
        return self.prior_weight * average_ranks(self.prior.predict(configs)) + (1 - self.prior_weight) * own

    def update(self, trials: Sequence[Trial], default_ns: float) -> None:
        """Refit on every healthy trial and re-weigh the prior (which is fine-tuned separately,
        if at all)."""
        healthy = [trial for trial in trials if math.isfinite(trial.cost)]
        configs, costs = [t.config for t in healthy], [t.cost for t in healthy]
        self.learned.fit(configs, costs)
        self.measured = len(healthy)
        if self.prior is not None:
            self.prior_weight = self._prior_weight(configs, costs)

    def _prior_weight(self, configs: list[CompileConfig], costs: list[float]) -> float:
        by_count = self.prior_trials / (self.prior_trials + len(configs))
        if len(configs) < AGREEMENT_TRIALS:
            return by_count
        # the prior's ranks: it scores a config it cannot build inf, and the metric takes finite values
        prior = max(kendall_tau(average_ranks(self.prior.predict(configs)), costs), 0.0)
        own = max(kendall_tau(_leave_one_out(configs, costs, self.learned.penalty), costs), 0.0)
        return min(by_count, prior / (prior + own)) if prior + own > 0 else by_count


AGREEMENT_TRIALS = 8  # healthy measurements before the prior is weighed by its agreement


def _leave_one_out(configs: list[CompileConfig], costs: list[float], penalty: float) -> np.ndarray:
    """Each config's log cost as predicted by a ChoiceModel fitted on all the others."""
    predicted = []
    for i in range(len(configs)):
        model = ChoiceModel(penalty)
        model.fit(configs[:i] + configs[i + 1:], costs[:i] + costs[i + 1:])
        predicted.append(model.predict([configs[i]])[0])
    return np.array(predicted)
