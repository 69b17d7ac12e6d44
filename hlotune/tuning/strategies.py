"""Search strategies behind one ask/tell interface (the shape of Optuna's ask-and-tell API).

The tuner asks for configs, measures them (or finds them in the database) and tells their
costs back; a strategy never measures anything itself. That split keeps strategies
deterministic for a seed: a resumed run tells the same costs in the same order (read from the
database instead of measured), so it asks the same configs and repeats no measurement.

A cost is a config's runtime relative to the default measured in the same batch (lower is
better; inf for a config that failed or gave wrong outputs), so costs from batches minutes
apart compare despite drift. The default's cost is 1 and is told before the first ask.
"""

from __future__ import annotations

import math
import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from hlotune.compiler.config import DEFAULT_CONFIG, CompileConfig
from hlotune.errors import HlotuneError
from hlotune.compiler.space import SearchSpace
from hlotune.extras import require

if TYPE_CHECKING:
    from hlotune.tuning.cost_model import CostModel

STRATEGIES = ("evolutionary", "bandit", "random", "exhaustive", "optuna", "optuna-gp")
RANKED = ("evolutionary", "bandit")  # the strategies whose candidates a cost model ranks
# A search's first configs, and the strategies that take each: its own draws; a covering design
# (SearchSpace.covering), the evolutionary search's (the bandit's evolutionary arm's); or the
# shipped portfolio of configs that won on other programs (portfolio.py), which the evolutionary
# search asks first and the optuna strategies enqueue.
FIRST_GENERATION_STRATEGIES: dict[str, tuple[str, ...]] = {
    "random": STRATEGIES, "covering": RANKED, "portfolio": (*RANKED, "optuna", "optuna-gp"),
}
FIRST_GENERATIONS = tuple(FIRST_GENERATION_STRATEGIES)


@dataclass(frozen=True)
class Trial:
    """A config and its cost, told back to the strategy that asked for it."""

    config: CompileConfig
    cost: float  # runtime / the same batch's default runtime; inf: failed or wrong output
    # profiled kernels' times / their times under the batch's default, by kernel name
    kernel_costs: Mapping[str, float] | None = None


class Strategy(ABC):
    """Asks for configs it has not asked before and learns from the costs told back."""

    name: str
    profiles = False  # whether its configs must be measured with each kernel's time (Trial.kernel_costs)

    def __init__(self) -> None:
        self.costs: dict[CompileConfig, float] = {}  # told, in order
        self._asked: dict[CompileConfig, None] = {DEFAULT_CONFIG: None}

    @abstractmethod
    def ask(self, n: int) -> list[CompileConfig]:
        """Up to `n` configs never asked before; fewer (or none) when the space runs dry."""

    def tell(self, trials: Sequence[Trial]) -> None:
        for trial in trials:
            self.costs[trial.config] = trial.cost

    def _fresh(self, config: CompileConfig) -> bool:
        """Whether `config` is new, marking it asked if so."""
        if config in self._asked:
            return False
        self._asked[config] = None
        return True


class RandomSearch(Strategy):
    """Independent random configs: the baseline every other strategy must beat. Each gene moves
    with probability `rate`, or, with `near_default`, one to that many genes move."""

    name = "random"

    def __init__(
        self, space: SearchSpace, seed: int = 0, *, rate: float = 0.25, near_default: int | None = None
    ) -> None:
        super().__init__()
        self._space, self._rng = space, random.Random(seed)
        self._rate, self._near_default = rate, near_default

    def ask(self, n: int) -> list[CompileConfig]:
        configs: list[CompileConfig] = []
        for _ in range(100 * n):
            if len(configs) == n:
                break
            if self._near_default is None:
                config = self._space.random_config(self._rng, self._rate)
            else:
                config = self._space.near_default(self._rng, self._near_default)
            if self._fresh(config):
                configs.append(config)
        return configs


class Exhaustive(Strategy):
    """Every config of a fixed list: in order, or, with a `cost_model`, the model's favourites
    first, ranked again at every ask (so a model that learns reorders what is left: a pool of
    candidates screened by a model, and strategies compared offline on recorded configs)."""

    name = "exhaustive"

    def __init__(self, configs: Sequence[CompileConfig], cost_model: CostModel | None = None) -> None:
        super().__init__()
        self._pending = list(dict.fromkeys(configs))
        self._cost_model = cost_model

    @classmethod
    def around_default(
        cls, space: SearchSpace, *, depth: int = 1, limit: int = 4096, seed: int = 0
    ) -> Exhaustive:
        """Every config within `depth` changes of the default, nearest first (shuffled by the
        seed within a distance, so a budget that ends early samples each distance fairly)."""
        count = space.count_within(depth)
        if count > limit:
            raise HlotuneError(
                f"the {space.kind} space has {count} configs within {depth} change(s) of the "
                f"default, more than {limit} to enumerate: use the evolutionary, random or optuna strategy"
            )
        rng = random.Random(seed)
        configs = []
        for level in space.levels(depth):
            rng.shuffle(level)
            configs += level
        return cls(configs)

    def ask(self, n: int) -> list[CompileConfig]:
        if self._cost_model is not None and self._pending:
            scores = np.asarray(self._cost_model.predict(self._pending), dtype=np.float64)
            self._pending = [self._pending[i] for i in np.argsort(scores, kind="stable")]
        configs = []
        while self._pending and len(configs) < n:
            config = self._pending.pop(0)
            if self._fresh(config):
                configs.append(config)
        return configs


class Chain(Strategy):
    """Each strategy in turn, the next once the one before runs dry: e.g. every single change
    of the default first, then random combinations (how `hlotune collect` draws flags)."""

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


class Evolutionary(Strategy):
    """Mutation and crossover of the best configs so far, optionally ranked by a cost model.

    Until `population` configs are known it draws configs at random. With a `cost_model`, each
    ask generates `pool` times more candidates than it returns and keeps those the model ranks
    fastest, as Ansor and MetaSchedule do: the model is cheap, measurements are not. A share
    `explore` of each batch is drawn from the other candidates at random (epsilon-greedy), so a
    model that is wrong about this program cannot keep the search from what it misjudges. In
    the first generation that share is `explore_first`, by default all of it, so the model is
    not asked there (a batch drawn wholly at random is `n` random configs): a prior can be
    wrong about the one option a program needs (XNNPACK's library fusions,
    `xla_cpu_experimental_ynn_fusion_type`, slowed edition 2's training programs by 3-20% on
    the median and sped several held-out ones up 1.2-1.4x), and a first generation ranked by
    it held no config with that option, so neither the online model nor evolution could learn
    it: random search beat the guided one live (docs/tuning.md). With `cover_first` the first
    generation is a covering design instead (SearchSpace.covering): every value of every gene in
    at least one config, where random draws leave a rare one (DOT, one config in 12) out of 8
    configs half the time. It did not keep more than random draws (docs/tuning.md). `first`
    configs (a portfolio, portfolio.py) are asked before any other, in order; the first
    generation's other configs are drawn as above. A share `immigrants` of each later batch is
    drawn at random from the whole space (a genetic algorithm's random immigrants), where the
    explored share above is still children of the best: a search whose first generation missed
    a program's move can still meet it.
    """

    name = "evolutionary"

    def __init__(
        self, space: SearchSpace, seed: int = 0, *, population: int = 8,
        cost_model: CostModel | None = None, pool: int = 8, explore: float = 0.1,
        explore_first: float = 1.0, cover_first: bool = False, first: Sequence[CompileConfig] = (),
        immigrants: float = 0.0,
    ) -> None:
        super().__init__()
        self._space, self._rng = space, random.Random(seed)
        self._population, self._cost_model, self._pool = population, cost_model, pool
        self._explore, self._explore_first, self._immigrants = explore, explore_first, immigrants
        self._cover_first, self._first = cover_first, list(first)

    def ask(self, n: int) -> list[CompileConfig]:
        firsts = []
        while self._first and len(firsts) < n:
            config = self._first.pop(0)
            if self._fresh(config):
                firsts.append(config)
        return firsts + self._generated(n - len(firsts))

    def _generated(self, n: int) -> list[CompileConfig]:
        """Up to `n` new configs: the first generation's, or children of the best so far."""
        parents = self._parents()
        evolve = len(parents) >= self._population
        if self._cover_first and len(self._asked) == 1:  # only the default: the first generation
            covering = self._space.covering(self._rng, n)
            if covering is not None:
                return [config for config in covering if self._fresh(config)]
        immigrants = round(n * self._immigrants) if evolve else 0
        share = self._explore if evolve else self._explore_first
        ranks = self._cost_model is not None and share < 1.0  # random() < 1.0: all explored
        bred = n - immigrants
        wanted = bred * self._pool if ranks else bred
        chosen = self._drawn(wanted, lambda: self._child(parents) if evolve else self._space.random_config(self._rng))
        if ranks and len(chosen) > bred:
            scores = np.asarray(self._cost_model.predict(chosen), dtype=np.float64)
            ranked = [chosen[i] for i in np.argsort(scores, kind="stable")]
            explored = sum(self._rng.random() < share for _ in range(bred))
            chosen = ranked[: bred - explored] + self._rng.sample(ranked[bred - explored:], explored)
        chosen += self._drawn(immigrants, lambda: self._space.random_config(self._rng), taken=chosen)
        return [config for config in chosen if self._fresh(config)]

    def _drawn(self, wanted: int, draw: Callable[[], CompileConfig],
               taken: Sequence[CompileConfig] = ()) -> list[CompileConfig]:
        """Up to `wanted` distinct configs from `draw`, none asked before or in `taken`."""
        candidates: dict[CompileConfig, None] = {}
        for _ in range(50 * wanted):
            if len(candidates) == wanted:
                break
            config = draw()
            if config not in self._asked and config not in taken:
                candidates[config] = None
        return list(candidates)

    def _parents(self) -> list[tuple[CompileConfig, float]]:
        """The `population` cheapest healthy configs told so far."""
        healthy = [(config, cost) for config, cost in self.costs.items() if math.isfinite(cost)]
        return sorted(healthy, key=lambda pair: pair[1])[: self._population]

    def _child(self, parents: list[tuple[CompileConfig, float]]) -> CompileConfig:
        first = self._tournament(parents)
        if self._rng.random() < 0.5:
            first = self._space.crossover(first, self._tournament(parents), self._rng)
        return self._space.mutate(first, self._rng)

    def _tournament(self, parents: list[tuple[CompileConfig, float]]) -> CompileConfig:
        """The better of two random parents: selection pressure without losing diversity."""
        a, b = self._rng.sample(parents, 2)
        return a[0] if a[1] <= b[1] else b[0]


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
    (the module docstring). With `study`, every config told is also written to that stored
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


def make_strategy(
    name: str, space: SearchSpace, seed: int = 0, cost_model: CostModel | None = None, *,
    study: OptunaStudy | None = None, first_generation: str = "random", immigrants: float = 0.0,
) -> Strategy:
    """The strategy called `name`; only the evolutionary search (alone or as the bandit's arm)
    uses a cost model, only the optuna strategies a stored `study`, and a `first_generation`
    only the strategies FIRST_GENERATION_STRATEGIES lists for it."""
    if name not in STRATEGIES:
        raise HlotuneError(f"unknown strategy {name!r}: use {', '.join(STRATEGIES)}")
    if cost_model is not None and name not in RANKED:
        raise HlotuneError(f"a cost model ranks candidates of the {' and '.join(RANKED)} strategies only, not {name}")
    check_first_generation(first_generation, name)
    first = first_configs(space, first_generation)
    if name in RANKED:
        evolutionary = Evolutionary(space, seed, cost_model=cost_model, cover_first=first_generation == "covering",
                                    first=first, immigrants=immigrants)
        if name == "evolutionary":
            return evolutionary
        from hlotune.tuning.bandit import Bandit  # a strategy of strategies: it imports this module

        # The random arm draws other configs than the evolutionary arm's random first generation.
        return Bandit(evolutionary, OptunaTPE(space, seed, study=study), RandomSearch(space, seed + 1))
    if name == "random":
        return RandomSearch(space, seed)
    if name == "exhaustive":
        return Exhaustive.around_default(space, seed=seed)
    if name == "optuna-gp":
        return OptunaGP(space, seed, study=study, first=first)
    return OptunaTPE(space, seed, study=study, first=first)


def check_first_generation(first_generation: str, strategy: str | None) -> None:
    """HlotuneError unless `first_generation` is one that the strategy named takes (None: a
    Strategy given whole, which makes its own first configs)."""
    takers = FIRST_GENERATION_STRATEGIES.get(first_generation)
    if takers is None:
        raise HlotuneError(f"first_generation must be one of {', '.join(FIRST_GENERATIONS)}, got {first_generation!r}")
    if first_generation != "random" and strategy not in takers:
        raise HlotuneError(f"first_generation {first_generation!r} is for the {', '.join(takers)} strategies, "
                           f"not {strategy or 'a Strategy given whole'}")


def first_configs(space: SearchSpace, first_generation: str) -> list[CompileConfig]:
    """The configs a search asks before its own: the shipped portfolio's that `space` can
    express (portfolio.py) for "portfolio", none for a generation the strategy draws itself."""
    if first_generation != "portfolio":
        return []
    from hlotune.tuning.portfolio import load_portfolio  # its builder's imports import this module

    return load_portfolio().within(space)
