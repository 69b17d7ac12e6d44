"""Optuna's samplers as strategies: TPE (`--strategy optuna`) and the Gaussian process
(`--strategy optuna-gp`), through Optuna's ask/tell API, each study stored beside the database."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.spaces.space import SearchSpace
from hlotune.errors import HlotuneError
from hlotune.extras import require
from hlotune.tuning.strategies.base import Strategy, Trial
from hlotune.tuning.strategies.parts import StrategyParts


@dataclass(frozen=True)
class OptunaStudy:
    """Where the optuna strategy stores its study: an Optuna RDB storage URL and a study name."""

    storage: str  # an SQLAlchemy URL, e.g. sqlite:////home/me/.cache/hlotune/tuning.optuna.sqlite
    name: str

    @classmethod
    def beside(cls, db_path: str | Path, fingerprint: str) -> OptunaStudy:
        """The study of a program tuned into `db_path`: <db stem>.optuna.sqlite in the same
        folder, named by the program's fingerprint."""
        return cls(f"sqlite:///{Path(db_path).resolve().with_suffix('.optuna.sqlite')}", fingerprint)


class OptunaTPE(Strategy):
    """An Optuna sampler (TPE by default) through its ask/tell API, every gene a categorical
    parameter (layout sites too, one categorical of all permutations per site). The TPE is
    multivariate: XLA's options interact (fast math's sub-options, a library fusion and the
    passes that feed it), which independent per-parameter densities cannot see. `first`
    configs (a portfolio, portfolio.py) are enqueued, so the sampler suggests them first.

    Optuna may suggest a config it suggested before; that trial is told the known cost at
    once (or when the first one's cost arrives) and another is asked, so every config returned
    is new and none is measured twice.

    The search runs on an in-memory study, so a resumed tune asks what the killed one asked
    (base.py). With `study`, every config told is also written to that stored
    study as one finished trial (failed when its cost is inf, its config key in the trial's
    user attribute "config"), unless the study already holds the config: a re-run, a resumed
    run or another seed adds only what is new. The stored study is thus the union of every
    optuna tune of the program here, for optuna-dashboard and optuna.visualization; it never
    feeds the search, and holds no trial left running by a killed tune.
    """

    name = "optuna"

    def __init__(self, space: SearchSpace, seed: int = 0, *, sampler=None,
                 study: OptunaStudy | None = None, first: Sequence[CompileConfig] = ()) -> None:
        super().__init__()
        optuna = require("optuna", "optuna", "--strategy optuna")
        optuna.logging.set_verbosity(optuna.logging.WARNING)  # no line per trial
        self._optuna = optuna
        self._space = space
        # Optuna's choices must be scalars: a layout permutation becomes its text.
        self._values = {gene.name: {_label(v): v for v in gene.values} for gene in space.genes}
        self._distributions = {
            name: optuna.distributions.CategoricalDistribution(tuple(values))
            for name, values in self._values.items()
        }
        if sampler is None:
            # The constant liar counts trials awaiting their costs as bad, so that one batch of
            # asks spreads out instead of suggesting the same region n times.
            sampler = optuna.samplers.TPESampler(seed=seed, constant_liar=True, multivariate=True)
        elif not isinstance(sampler, optuna.samplers.BaseSampler):
            raise HlotuneError(f"not an Optuna sampler: {type(sampler).__name__}")
        self._study = optuna.create_study(direction="minimize", sampler=sampler)
        self._stored = None if study is None else _StoredStudy(optuna, study)
        self._waiting: dict[CompileConfig, list[int]] = {}  # config -> trials awaiting its cost
        for config in first:
            self._study.enqueue_trial(self._params(config))

    @classmethod
    def from_parts(cls, parts: StrategyParts, sampler=None) -> OptunaTPE:
        """`--strategy optuna`, or `sampler` (an Optuna sampler given as TuneOptions.strategy)."""
        return cls(parts.space, parts.seed, sampler=sampler, study=parts.study, first=parts.first)

    def ask(self, n: int) -> list[CompileConfig]:
        configs: list[CompileConfig] = []
        for _ in range(20 * n):
            if len(configs) == n:
                break
            trial = self._study.ask(self._distributions)
            config = self._space.config(
                {name: self._values[name][label] for name, label in trial.params.items()}
            )
            if config in self.costs:
                self._finish(trial.number, self.costs[config])
                continue
            self._waiting.setdefault(config, []).append(trial.number)
            if self._fresh(config):
                configs.append(config)
        return configs

    def tell(self, trials: Sequence[Trial]) -> None:
        super().tell(trials)
        for trial in trials:
            if self._stored is not None:
                self._stored.add(self._finished_trial(trial))
            waiting = self._waiting.pop(trial.config, None)
            if waiting is not None:
                for number in waiting:
                    self._finish(number, trial.cost)
            elif math.isfinite(trial.cost):  # not Optuna's own suggestion: the default
                self._study.add_trial(self._finished_trial(trial))

    def _finish(self, number: int, cost: float) -> None:
        if math.isfinite(cost):
            self._study.tell(number, cost)
        else:  # TPE learns from completed trials only
            self._study.tell(number, state=self._optuna.trial.TrialState.FAIL)

    def _finished_trial(self, trial: Trial):
        """An Optuna trial of an evaluated config (failed when its cost is inf)."""
        ok = math.isfinite(trial.cost)
        return self._optuna.trial.create_trial(
            params=self._params(trial.config),
            distributions=self._distributions,
            value=trial.cost if ok else None,
            state=self._optuna.trial.TrialState.COMPLETE if ok else self._optuna.trial.TrialState.FAIL,
            user_attrs={"config": trial.config.key},
        )

    def _params(self, config: CompileConfig) -> dict:
        """Optuna's parameters of a config: every gene's choice."""
        genome = self._space.genome(config)
        return {gene.name: _label(genome.get(gene.name, gene.values[0])) for gene in self._space.genes}


class _StoredStudy:
    """The study in an RDB storage: each evaluated config once, as a finished trial."""

    def __init__(self, optuna, where: OptunaStudy) -> None:
        self._where = where
        try:
            self._study = optuna.create_study(storage=where.storage, study_name=where.name,
                                              direction="minimize", load_if_exists=True)
        except Exception as error:  # SQLAlchemy's errors: a file that is not an Optuna storage
            raise HlotuneError(f"{where.storage}: cannot open the Optuna study ({error})") from None
        trials = self._study.get_trials(deepcopy=False)
        self._known = {trial.user_attrs.get("config") for trial in trials}

    def add(self, trial) -> None:
        key = trial.user_attrs["config"]
        if key in self._known:
            return
        try:
            self._study.add_trial(trial)
        except ValueError as error:  # a study of that name with other parameters
            raise HlotuneError(f"{self._where.storage}: study {self._where.name}: {error}") from None
        self._known.add(key)


def _label(value):
    """An Optuna categorical choice for a gene value."""
    return value if value is None or isinstance(value, (bool, int, float, str)) else str(value)


class OptunaGP(OptunaTPE):
    """Optuna's Gaussian-process sampler (Bayesian optimisation with a kernel over categorical
    parameters): the other model-free peer a user would try."""

    name = "optuna-gp"

    def __init__(self, space: SearchSpace, seed: int = 0, *, study: OptunaStudy | None = None,
                 first: Sequence[CompileConfig] = ()) -> None:
        optuna = require("optuna", "optuna", "--strategy optuna-gp")
        super().__init__(space, seed, sampler=optuna.samplers.GPSampler(seed=seed), study=study, first=first)

    @classmethod
    def from_parts(cls, parts: StrategyParts) -> OptunaGP:
        return cls(parts.space, parts.seed, study=parts.study, first=parts.first)
