"""Autotuning one program: search, measure in batches, confirm against the default.

The loop, as in XTAT and MetaSchedule: a strategy asks for configs; configs the database
already holds for this program, machine and compiler are told from it (so a killed tune
resumes without measuring anything twice); the others are measured together in one `measure`
batch, which runs the default's replicas beside them, and committed. The budget counts
evaluated configs, the default included, whether measured now or found in the database, so
re-running a command finishes its search instead of starting a longer one.

Runtimes from different batches are compared through their batch's default (drift). The
final check (final_check.py) races the search's fastest configs that beat the default beyond
their batch's noise floor, re-measuring them beside the default until the leader's gain is
beyond doubt (otherwise the default is kept and the result says so), and reports its speedup
from one more batch, measured after choosing it: the best of many noisy measurements flatters
the winner, and a number that played no part in choosing does not. The decision is stored, so
a re-run that ends on the same finalists measures nothing.

A `time_s` budget counts from the call, so loading the program and the models, ranking, asking
and compiling all spend it; the search asks only for as many configs as its pace so far says
will be measured before the deadline, and the final check takes its first round (and its
report's batch) whatever time is left.

The loop is a `Tuner` of swappable parts, as in TVM MetaSchedule: the program's config space,
a search strategy (strategies.py), an optional cost model that ranks its candidates and learns
from measurements (cost_model.py), a runner that measures (runners.py: this machine, a Ray
cluster, or a replay of recorded measurements), a database (database.py) and callbacks
(callbacks.py: progress, cost-model updates, yours). `tune()` builds the usual parts from
names, as one TuneOptions (options.py) says. The evolutionary strategy's candidates are ranked by the shipped pretrained cost models
unless told otherwise; with `fine_tune_every` the models are fine-tuned on the program's own
measurements each time that many more configs have been evaluated. Fine-tuning sees the same
costs at the same points on a resumed run, so the search stays deterministic.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from hlotune.compiler.config import DEFAULT_CONFIG, CompileConfig
from hlotune.compiler.fusion_space import fusion_choices
from hlotune.compiler.kernel_space import program_module
from hlotune.compiler.kernels import kernels_of
from hlotune.compiler.layouts import LayoutSpace
from hlotune.compiler.measure import BatchResult, MeasureSettings
from hlotune.compiler.space import KERNEL_SPACES, SearchSpace
from hlotune.errors import HlotuneError
from hlotune.evaluation.scorers import Scorer
from hlotune.kernels.program_model import load_kernel_program_model
from hlotune.programs import Program, load_program
from hlotune.programs.calls import BoundCall, jit_function
from hlotune.progress import note
from hlotune.tuning.callbacks import Callback, ProgressBar, UpdateCostModel
from hlotune.tuning.cost_model import CostModel, ModuleRoofline, ScorerCostModel, load_scorers
from hlotune.tuning.storage import CONFIRM_PREFIX, Database, Decision, TuningDatabase, default_db_location, local_folder
from hlotune.tuning.final_check import FINALISTS, Beside, Finalist, final_check
from hlotune.tuning.fingerprint import program_fingerprint
from hlotune.tuning.kernel_screen import KernelScreen
from hlotune.tuning.kernelwise import Kernelwise, rank_candidates
from hlotune.tuning.keywords import OPTION_NAMES, split_keywords
from hlotune.tuning.online import OnlineCostModel
from hlotune.tuning.options import TuneOptions
from hlotune.tuning.runners import Runner, open_runner
from hlotune.tuning.staged import Stage, Staged
from hlotune.tuning.strategies import (
    Chain,
    Exhaustive,
    OptunaStudy,
    OptunaTPE,
    Strategy,
    Trial,
    first_configs,
    make_strategy,
)
from hlotune.tuning.transfer import TRANSFER, load_transfer


@dataclass
class TuneResult:
    """What a tune kept. `speedup` is measured after the choice (final_check.py); the search's
    and the choosing rounds' speedups, flattered by the choice, are `found_speedup` and
    `confirmed_speedup`."""

    program: str
    default_ms: float  # the default's median in the batch that reports the speedup
    best_ms: float  # the chosen config's (the default's when kept)
    speedup: float  # kept: default_ms / best_ms (1 when the default was kept)
    noise: float  # noise floor the gain had to exceed
    measurements: int  # configs measured by this run, the default included
    resumed: int  # configs found in the database instead
    best_config: CompileConfig
    strategy: str
    kept_default: bool
    history: list[float]  # best speedup found so far, after each evaluated config
    space: str = "flags"
    fingerprint: str = ""
    failed: int = 0  # evaluated configs that failed or gave wrong outputs
    candidate: CompileConfig = DEFAULT_CONFIG  # the final check's leader, chosen or not
    # its speedup in the batch that reports it: `speedup` when chosen, else its last
    # choosing round's (None if it failed then)
    candidate_speedup: float | None = None
    numerics: str = "preserving"  # the chosen config's kind: "changing" only when allowed
    seconds: float = 0.0
    found_speedup: float | None = None  # the candidate's speedup in the search
    confirmed_speedup: float | None = None  # its estimate over the rounds that chose it
    confirm_rounds: int = 0  # re-measuring rounds of the final check
    screened: int = 0  # candidates a kernel screen compiled (kernel_screen.py), none run
    screen_s: float = 0.0  # the seconds it spent compiling them
    _program: Program | None = field(default=None, repr=False, compare=False)
    # a tuned function's: its executable as a callable of the user's call (static values, keys)
    _caller: Callable[[Callable], Callable] | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        values = {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}
        values["best_config"] = self.best_config.to_dict()
        values["candidate"] = self.candidate.to_dict()
        return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in values.items()}

    def compiled(self) -> Callable:
        """The program compiled here with the best config, callable like the original function."""
        from hlotune.tuning.compiled import compile_config

        executable = compile_config(self._program or load_program(self.program), self.best_config)
        return executable if self._caller is None else self._caller(executable)


def tune(
    program: str | Callable,
    *args,
    options: TuneOptions | None = None,
    db_path: str | Path | None = None,
    runner: str | Runner = "local",
    callbacks: Sequence[Callback] = (),
    progress: bool = True,
    static_argnums: int | Sequence[int] | None = None,
    static_argnames: str | Sequence[str] | None = None,
    **keywords: Any,
) -> TuneResult:
    """Tune the program spec `program` (zoo:NAME[@VARIANT], file.py:FACTORY, export:PATH), or
    the JAX function `program` for the example call `program(*args, **keywords)`, which it
    takes as jax.jit does: pytrees of arrays (typed PRNG keys too), and static values where
    `static_argnums` and `static_argnames` say, baked into the program (each its own tune).

    The search is `options` with the keywords that name its fields in their place (the others
    go to the function, keywords.py): `tune(fn, *args, budget=16)` is
    `tune(fn, *args, options=TuneOptions(budget=16))`. Those fields (options.py) are `space`,
    `budget` evaluated configs (the default included) and/or `time_s` seconds, whichever ends
    first (a batch in flight finishes), `strategy` (a name, a Strategy instance, e.g.
    `Exhaustive([...])` to measure chosen configs, or an Optuna sampler, whose study is stored
    beside the database, docs/tuning.md), `model` (ranks the evolutionary strategy's candidates),
    `fine_tune_every`, `online`, `optimism`, `first_generation`, `warm_start`, `batch`, `seed`,
    `allow_numerics_change` and the measurement `settings`.

    A function is exported with jax.export into `programs/` beside the database (so the worker
    can load it, see hlotune.programs.exported); on it the layout space holds only the arguments'
    layouts. `result.compiled()` takes and returns what the function does, for the same static
    values. `runner` ("local", "ray", "ray:ADDRESS" or a Runner) measures; the database is read
    and written under its machine's hardware fingerprint (runners.py). `callbacks` see every
    batch.
    """
    started = time.monotonic()
    function = None if isinstance(program, str) else program
    chosen, arguments = split_keywords(keywords, tune, OPTION_NAMES, function)
    options = replace(options or TuneOptions(), **chosen)
    db_path = db_path or default_db_location()
    folder = local_folder(db_path)  # exported programs and Optuna studies
    folder.mkdir(parents=True, exist_ok=True)
    caller = None
    if function is not None:
        call = jit_function(function, static_argnums, static_argnames).bind(args, arguments)
        program, caller = _export(call, folder / "programs")
    elif args or static_argnums is not None or static_argnames is not None:
        raise HlotuneError("example arguments and static ones go with a function, not with a program spec")
    with open_runner(runner) as measurer:  # first: a runner that cannot start fails before any work
        loaded = load_program(program)
        fingerprint = program_fingerprint(loaded)
        model = options.ranking_model
        scored = model is not None and not _is_transfer(model)  # scorers read the program's graph
        layouts = LayoutSpace(loaded) if options.space != "flags" or scored else None
        module = program_module(layouts) if options.space in KERNEL_SPACES else None
        search_space = SearchSpace(options.space, layouts, allow_numerics_change=options.allow_numerics_change,
                                   kernels=None if module is None else kernels_of(module),
                                   fusion=fusion_choices(module) if options.space == "fusion" else None)
        if options.kernelwise:
            prior = cost_model = None
            search = _kernelwise(options, search_space, module)
        else:
            prior = _prior(options, layouts, module, Screening(program, db_path, fingerprint, options.settings))
            cost_model = OnlineCostModel(prior, optimism=options.optimism) if options.learns_online else prior
            search = _strategy(options, search_space, cost_model, OptunaStudy.beside(folder / "tuning.sqlite", fingerprint))
        extra = [UpdateCostModel(1)] if options.learns_online else []
        if prior is not None and options.fine_tune_every:
            extra.append(UpdateCostModel(options.fine_tune_every, prior))
        extra += [ProgressBar(options.budget)] if progress else []
        with TuningDatabase(db_path, machine=measurer.machine) as db:
            if options.warm_start and not isinstance(options.strategy, Strategy):
                search = _warm_started(search, search_space, db.winners(fingerprint)[:options.warm_start])
            if options.space == "all" and options.kernel_stages and not isinstance(options.strategy, Strategy):
                search = kernel_stages(search, options, layouts, started, show=progress)
            tuner = Tuner(loaded, search_space, search, measurer, db, cost_model=cost_model,
                          callbacks=[*extra, *callbacks], settings=options.settings,
                          fingerprint=fingerprint)
            deadline = None if options.time_s is None else started + options.time_s
            try:
                decision = tuner.run(options.budget, deadline, options.batch)
            finally:
                if isinstance(prior, KernelScreen):
                    prior.close()
    screened = (prior.compiled, prior.compile_s) if isinstance(prior, KernelScreen) else (0, 0.0)
    return replace(tuner.result(decision, seconds=time.monotonic() - started), screened=screened[0],
                   screen_s=screened[1], _caller=caller)


def _export(call: BoundCall, folder: Path) -> tuple[str, Callable[[Callable], Callable]]:
    """The spec of `call`'s program (exported.py), and what makes a compile of it a callable of
    the user's call."""
    from hlotune.programs.exported import export_function

    keyed = call.keyed()
    spec = export_function(keyed, call.data).save(folder)
    return spec, lambda executable: call.caller(keyed.caller(executable))


@dataclass(frozen=True)
class Screening:
    """What a compile-and-predict screen needs of the tune: the program, where compiles are
    cached, the program's fingerprint there, and how to compile."""

    program: str
    db_path: str | Path  # the database: a file or a URL
    fingerprint: str
    settings: MeasureSettings


KERNEL_PROFILE_RUNS = 10  # profiled calls per config and round, for a search that reads kernel times


def _prior(options: TuneOptions, layouts: LayoutSpace | None, module: str | None,
           screening: Screening) -> CostModel | None:
    """The model `options` rank with: scorers (pretrained, a folder, a baseline), the transfer
    model, a kernel program model screening compiled candidates, or in the fusion space the
    module roofline."""
    model = options.ranking_model
    if model is None:
        return None
    if options.space == "fusion":
        return ModuleRoofline(module)
    if _is_transfer(model):
        return load_transfer(model, options.space)
    if isinstance(model, str) and (kernel_model := load_kernel_program_model(model)) is not None:
        return KernelScreen(screening.program, kernel_model, screening.db_path, screening.fingerprint,
                            screening.settings)
    return ScorerCostModel(load_scorers(model, options.space), layouts, options.seed)


def _kernelwise(options: TuneOptions, space: SearchSpace, module: str) -> Kernelwise:
    """XTAT's search: `per_kernel` candidates of each kernel, ranked by the tile model named,
    else in a random order (kernelwise.py)."""
    model = options.tile_model
    scorer = None if model is None else load_scorers(model, "tile")["tile"]
    return Kernelwise(space, rank_candidates(module, kernels_of(module), scorer, options.seed), options.per_kernel)


def kernel_stages(search: Strategy, options: TuneOptions, layouts: LayoutSpace, started: float,
                  show: bool = False) -> Staged:
    """The "all" space's search (staged.py): `search` over flags and layouts, then the tile
    space's and the fusion space's searches on the kernels of the best config so far, an eighth
    of the budget each (what the tile search, `per_kernel` rounds and their combination, leaves
    goes to fusion). With only a time budget, the shares are of the seconds left. `show` notes
    each kernel stage as it begins."""
    if options.budget is not None:
        kernels = options.budget // 8
        shares = [(options.budget - 2 * kernels, None), (kernels, None), (kernels, None)]
    else:
        left = options.time_s - (time.monotonic() - started)
        shares = [(None, 0.75 * left), (None, 0.125 * left), (None, 0.125 * left)]
    modules: dict[tuple, str] = {}  # both kernel stages stand on the same flags and layouts

    def module(base: CompileConfig) -> str:
        key = (base.flags, base.layout)
        if key not in modules:
            modules[key] = program_module(layouts, base)
        return modules[key]

    builders = (lambda base: search, lambda base: _tile_stage(options, layouts, base, module(base), show),
                lambda base: _fusion_stage(options, layouts, base, module(base), show))
    return Staged([Stage(name, configs, seconds, build)
                   for name, (configs, seconds), build in zip((search.name, "tile", "fusion"), shares, builders)])


def _tile_stage(options: TuneOptions, layouts: LayoutSpace, base: CompileConfig, module: str,
                show: bool) -> Strategy | None:
    """XTAT's kernel-by-kernel search on the kernels XLA makes under `base` (`module`); None if
    none is tunable."""
    try:
        space = SearchSpace("tile", layouts, kernels=kernels_of(module), base=base)
    except HlotuneError:  # no kernel whose partitions XLA lets us choose
        return None
    note(f"{layouts.program.name}: tile stage, the partitions of {len(space.genes)} kernels of the best "
         "config so far", show=show)
    return _kernelwise(options, space, module)


def _fusion_stage(options: TuneOptions, layouts: LayoutSpace, base: CompileConfig, module: str,
                  show: bool) -> Strategy | None:
    """Every single fusion decision on `base`'s `module`, the module roofline's favourites
    first; None if XLA made no fusion to split or merge."""
    choices = fusion_choices(module)
    if not choices:
        return None
    note(f"{layouts.program.name}: fusion stage, {len(choices)} kernels of the best config so far to "
         "split or merge", show=show)
    space = SearchSpace("fusion", layouts, fusion=choices, base=base)
    return Exhaustive(space.levels(1)[0], None if options.ranking_model is None else ModuleRoofline(module))


def _is_transfer(model: str | Scorer) -> bool:
    return isinstance(model, str) and model.partition("@")[0] == TRANSFER


def _strategy(
    options: TuneOptions, space: SearchSpace, cost_model: CostModel | None, study: OptunaStudy,
) -> Strategy:
    """The strategy named, given, or built around an Optuna sampler (TuneOptions has checked
    that only the evolutionary strategy gets a cost model)."""
    strategy = options.strategy
    if isinstance(strategy, Strategy):
        return strategy
    if isinstance(strategy, str):
        return make_strategy(strategy, space, options.seed, cost_model, study=study,
                             first_generation=options.first, immigrants=options.immigrants)
    return OptunaTPE(space, options.seed, sampler=strategy, study=study,
                     first=first_configs(space, options.first))


def _warm_started(search: Strategy, space: SearchSpace, winners: list[CompileConfig]) -> Strategy:
    """`search`, after the flags of configs that won elsewhere (layouts name another program's
    tensors) that this space can express."""
    if space.kind == "layout":
        return search
    firsts = []
    for winner in winners:
        try:
            firsts.append(space.config(space.genome(CompileConfig(flags=winner.flags))))
        except HlotuneError:  # an option outside this space (numerics-changing, not allowed)
            continue
    return Chain(Exhaustive(firsts), search, name=search.name) if firsts else search


_CLAIM_POLL_S = 0.5  # how often a tuner looks for records another tuner is measuring


class Tuner:
    """One program's tune on one machine: what it evaluated, measured and found in the database.

    The strategy asks, the database answers what it already holds, the runner measures the rest
    in one batch beside the default, the database stores it, and the strategy and the callbacks
    are told. `cost_model` is the one the strategy ranks with, kept here for the callbacks that
    teach it.
    """

    def __init__(
        self, program: Program, space: SearchSpace, strategy: Strategy, runner: Runner,
        database: Database, *, cost_model: CostModel | None = None,
        callbacks: Sequence[Callback] = (), settings: MeasureSettings = MeasureSettings(),
        fingerprint: str | None = None, finalists: int = FINALISTS,
    ) -> None:
        self.program, self.space, self.strategy, self.runner = program, space, strategy, runner
        self.database, self.cost_model, self.callbacks = database, cost_model, list(callbacks)
        self.settings, self.finalists = settings, finalists
        self.fingerprint = fingerprint or program_fingerprint(program)
        default = database.lookup(self.fingerprint, DEFAULT_CONFIG.key)
        self.default_ns: float | None = None if default is None else default.median_ns
        self.measured = 0
        self.resumed = int(default is not None)
        self.trials = [Trial(DEFAULT_CONFIG, 1.0)]  # costs are relative to the default

    def run(self, budget: int | None, deadline: float | None = None, batch: int = 8) -> Decision:
        """Search until `budget` configs were evaluated or the `deadline` (monotonic) passed,
        then decide (final_check.py): a finalist that beats the default beyond the noise, or
        the default."""
        self.database.register(self.fingerprint, self.program.name)
        self.strategy.tell(self.trials)
        for callback in self.callbacks:
            callback.on_start(self)
        searching, evaluated = time.monotonic(), len(self.trials)
        while wanted := self._wanted(budget, deadline, batch, searching, evaluated):
            configs = self.strategy.ask(wanted)
            if not configs:
                break
            trials = self._evaluate(configs)
            self.strategy.tell(trials)
            self.trials += trials
            for callback in self.callbacks:
                callback.after_batch(self, trials)
        if self.default_ns is None:  # nothing needed measuring: measure the default alone
            self._measure([])
        decision = self._decide(deadline)
        for callback in self.callbacks:
            callback.on_end(self)
        return decision

    def _wanted(self, budget: int | None, deadline: float | None, batch: int, since: float, before: int) -> int:
        """Configs to ask for next: a batch, at most what the budget leaves and, against a
        deadline, at most what the search's pace since `since` (seconds per config evaluated
        beyond the first `before`: asking, ranking, compiling, measuring) fits before it."""
        wanted = batch if budget is None else min(batch, budget - len(self.trials))
        if deadline is None or wanted <= 0:
            return max(wanted, 0)
        now, done = time.monotonic(), len(self.trials) - before
        if now >= deadline:
            return 0
        if done and now > since:
            wanted = min(wanted, int((deadline - now) * done / (now - since)))
        return wanted

    def _evaluate(self, configs: list[CompileConfig]) -> list[Trial]:
        """Costs of `configs`: from the database, or measured in one batch and stored. Configs
        another tuner of the same database is measuring are waited for, not measured again."""
        records = {config: self.database.lookup(self.fingerprint, config.key) for config in configs}
        missing = [config for config, record in records.items() if record is None]
        measured_here = 0
        while missing:
            held = set(self.database.claim(self.fingerprint, [config.key for config in missing]))
            mine = [config for config in missing if config.key in held]
            if mine:
                self._measure(mine)
                measured_here += len(mine)
            else:
                time.sleep(_CLAIM_POLL_S)
            records |= {config: self.database.lookup(self.fingerprint, config.key) for config in missing}
            missing = [config for config in missing if records[config] is None]
        self.resumed += len(configs) - measured_here
        return [Trial(config, records[config].cost, records[config].kernel_costs) for config in configs]

    def _measure(self, configs: list[CompileConfig]) -> list[BatchResult]:
        settings = self.settings
        if self.strategy.profiles and not settings.profile_runs:  # it reads each kernel's time
            settings = replace(settings, profile_runs=KERNEL_PROFILE_RUNS)
        results = self.runner.measure(self.program.name, configs, settings)
        for result in results:
            first = self.default_ns is None
            self.database.record_batch(self.fingerprint, result, with_default=first)
            self.measured += len(result.measurements) + first
            if first:
                self.default_ns = self.database.lookup(self.fingerprint, DEFAULT_CONFIG.key).median_ns
        return results

    def _decide(self, deadline: float | None) -> Decision:
        """The final check on the search's fastest configs (final_check.py); a previous run's
        decision on the same finalists stands."""
        finalists = self._finalists()
        decided = self._decided(finalists)
        if decided is not None:
            return decided
        if not finalists:
            return self._keep_default()
        claim = CONFIRM_PREFIX + finalists[0].key
        while not self.database.claim(self.fingerprint, [claim]):  # another tuner confirms them
            time.sleep(_CLAIM_POLL_S)
            decided = self._decided(finalists)
            if decided is not None:
                return decided
        verdict = final_check(lambda configs: self.runner.measure(self.program.name, configs, self.settings),
                              [self._finalist(config) for config in finalists], deadline)
        found = {trial.config: 1 / trial.cost for trial in self.trials}
        reported = verdict.reported
        decision = Decision(self.fingerprint, verdict.candidate, verdict.chosen, reported.default_ns,
                            reported.ns if math.isfinite(reported.ns) else None, verdict.noise,
                            self.strategy.name, self.space.kind, time.time(),
                            found_speedup=found[verdict.candidate],
                            confirmed_speedup=verdict.confirmed_speedup, rounds=verdict.rounds)
        self.database.decide(decision)
        self.database.release(self.fingerprint, [claim])
        return decision

    def _finalists(self) -> list[CompileConfig]:
        """The `finalists` fastest configs of the search that beat the default there."""
        faster = sorted((t for t in self.trials if t.cost < 1.0), key=lambda t: t.cost)
        return [trial.config for trial in faster[: self.finalists]]

    def _finalist(self, config: CompileConfig) -> Finalist:
        """A finalist with its search measurement and that batch's noise floor (the gate)."""
        record = self.database.lookup(self.fingerprint, config.key)
        return Finalist(config, Beside(record.median_ns, record.default_ns), record.noise_floor)

    def _decided(self, finalists: list[CompileConfig]) -> Decision | None:
        for config in finalists or [DEFAULT_CONFIG]:
            decision = self.database.decision(self.fingerprint, config.key)
            if decision is not None:
                return decision
        return None

    def _keep_default(self) -> Decision:
        """No config beat the default in the search: keep it, with the batches' noise floor."""
        evaluated = {t.config.key for t in self.trials}
        noise = [r.noise_floor for r in self.database.records(self.fingerprint)
                 if r.config_key in evaluated and r.noise_floor is not None]
        decision = Decision(self.fingerprint, DEFAULT_CONFIG, DEFAULT_CONFIG, self.default_ns,
                            self.default_ns, float(np.median(noise)) if noise else None,
                            self.strategy.name, self.space.kind, time.time(), found_speedup=1.0)
        self.database.decide(decision)
        return decision

    def result(self, decision: Decision, seconds: float = 0.0) -> TuneResult:
        best_costs = np.minimum.accumulate([t.cost for t in self.trials])
        candidate_ns = decision.candidate_ns
        return TuneResult(
            program=self.program.name,
            default_ms=decision.default_ns / 1e6,
            best_ms=(decision.default_ns if decision.kept_default else candidate_ns) / 1e6,
            speedup=decision.speedup,
            noise=math.nan if decision.noise_floor is None else decision.noise_floor,
            measurements=self.measured,
            resumed=self.resumed,
            best_config=decision.chosen,
            strategy=self.strategy.name,
            kept_default=decision.kept_default,
            history=[float(1 / cost) for cost in best_costs],
            space=self.space.kind,
            fingerprint=self.fingerprint,
            failed=sum(not math.isfinite(t.cost) for t in self.trials),
            candidate=decision.candidate,
            candidate_speedup=decision.default_ns / candidate_ns if candidate_ns else None,
            seconds=seconds,
            numerics=decision.chosen.numerics,
            found_speedup=decision.found_speedup,
            confirmed_speedup=decision.confirmed_speedup,
            confirm_rounds=decision.rounds,
            _program=self.program,
        )
