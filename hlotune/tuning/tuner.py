"""Autotuning one program: search, measure in batches, confirm against the default.

The loop, as in XTAT and MetaSchedule: a strategy asks for configs; configs the database
already holds for this program, machine and compiler are told from it (so a killed tune
resumes without measuring anything twice); the others are measured together in one `measure`
batch, which runs the default's replicas beside them, and committed. The budget counts
evaluated configs, the default included, whether measured now or found in the database, so
re-running a command finishes its search instead of starting a longer one.

Runtimes from different batches are compared through their batch's default (drift), and the
best candidate is re-measured in one last batch beside the default: it is chosen only when its
gain exceeds that batch's noise floor, otherwise the default is kept and the result says so.
The decision is stored, so a re-run that ends on the same candidate measures nothing.

The evolutionary strategy's candidates are ranked by the shipped pretrained cost models unless
told otherwise (ranking.py); with `fine_tune_every` the models are fine-tuned on the program's
own measurements each time that many more configs have been evaluated. Fine-tuning sees the
same costs at the same points on a resumed run, so the search stays deterministic.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm import tqdm

from hlotune.compiler.config import DEFAULT_CONFIG, CompileConfig
from hlotune.compiler.layouts import LayoutSpace
from hlotune.compiler.measure import MeasureSettings
from hlotune.errors import HlotuneError
from hlotune.evaluate import Scorer
from hlotune.program import Program, load_program
from hlotune.tuning.database import Decision, Record, TuningDatabase, default_db_path
from hlotune.tuning.fingerprint import program_fingerprint
from hlotune.tuning.ranking import DEFAULT_MODEL, ModelRanker, load_scorers
from hlotune.tuning.runners import Runner, open_runner
from hlotune.tuning.space import SPACES, SearchSpace
from hlotune.tuning.strategies import Evaluation, OptunaStudy, OptunaTPE, Strategy, make_strategy

if TYPE_CHECKING:
    from optuna.samplers import BaseSampler


@dataclass
class TuneResult:
    program: str
    default_ms: float  # the default's median in the confirming batch
    best_ms: float  # the chosen config's (the default's when kept)
    speedup: float  # default_ms / best_ms (1 when the default was kept)
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
    candidate: CompileConfig = DEFAULT_CONFIG  # the search's best, chosen or not
    candidate_speedup: float | None = None  # its re-measured speedup (None if it failed then)
    seconds: float = 0.0
    _program: Program | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        values = {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}
        values["best_config"] = self.best_config.to_dict()
        values["candidate"] = self.candidate.to_dict()
        return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in values.items()}

    def compiled(self) -> Callable:
        """The program compiled here with the best config, callable like the original function."""
        from hlotune.tuning.compiled import compile_config

        return compile_config(self._program or load_program(self.program), self.best_config)


def tune(
    program: str | Callable,
    *args,
    space: str = "flags",
    budget: int | None = 32,
    time_s: float | None = None,
    strategy: str | Strategy | BaseSampler = "evolutionary",
    model: str | Scorer | None = DEFAULT_MODEL,
    fine_tune_every: int | None = None,
    db_path: str | Path | None = None,
    settings: MeasureSettings = MeasureSettings(),
    batch: int = 8,
    seed: int = 0,
    progress: bool = True,
    runner: str | Runner = "local",
) -> TuneResult:
    """Tune the program spec `program` (zoo:NAME[@VARIANT], file.py:FACTORY, export:PATH), or
    the JAX function `program` for the example arguments `args` (pytrees of arrays).

    A function is exported with jax.export into `programs/` beside the database (so the worker
    can load it, see hlotune.exported); on it the layout space holds only the arguments'
    layouts. `result.compiled()` takes and returns what the function does.

    `budget` evaluated configs (the default included) and/or `time_s` seconds, whichever ends
    first (a batch in flight finishes). `strategy` is a name or a Strategy instance (e.g.
    `Exhaustive([...])` to measure chosen configs). `model` ranks the evolutionary strategy's
    candidates: "pretrained" (the shipped models, the default), a scorer, a name for
    `hlotune.scorers.load_scorer`, or None for none; other strategies use no model.
    `fine_tune_every` N fine-tunes the model on the measurements every N evaluated configs.
    `runner` ("local", "ray", "ray:ADDRESS" or a Runner) measures; the database is read and
    written under its machine's hardware fingerprint (runners.py).
    """
    started = time.monotonic()
    if space not in SPACES:
        raise HlotuneError(f"unknown space {space!r}: use {', '.join(SPACES)}")
    if budget is None and time_s is None:
        raise HlotuneError("give a budget (measurements) or a time limit")
    if (budget is not None and budget < 1) or batch < 1 or (time_s is not None and time_s <= 0):
        raise HlotuneError("the budget, the batch size and the time limit must be positive")
    if fine_tune_every is not None and fine_tune_every < 1:
        raise HlotuneError(f"fine_tune_every must be at least 1, got {fine_tune_every}")
    if strategy != "evolutionary" and model == DEFAULT_MODEL:
        model = None  # the default model serves the one strategy that ranks
    if isinstance(strategy, Strategy) and model is not None:
        raise HlotuneError("a model ranks for a strategy named here; give your Strategy its ranker instead")
    db_path = Path(db_path or default_db_path())
    db_path.parent.mkdir(parents=True, exist_ok=True)  # the Optuna study's folder too
    if not isinstance(program, str):
        from hlotune.exported import export_function

        program = export_function(program, args).save(db_path.parent / "programs")
    elif args:
        raise HlotuneError("example arguments go with a function, not with a program spec")
    loaded = load_program(program)
    fingerprint = program_fingerprint(loaded)
    search, ranker = (strategy, None) if isinstance(strategy, Strategy) else _make(
        strategy, loaded, space, seed, model, OptunaStudy.beside(db_path, fingerprint))
    fine_tuning = None if ranker is None or fine_tune_every is None else _FineTuning(
        ranker, fine_tune_every, seed)
    with open_runner(runner) as measurer, TuningDatabase(db_path, machine=measurer.machine) as db:
        db.register(fingerprint, loaded.name)
        run = _Run(loaded.name, fingerprint, db, settings, measurer)
        deadline = None if time_s is None else started + time_s
        run.search(search, budget, deadline, batch, progress, fine_tuning)
        decision = run.decide(search.name, space)
    best_costs = np.minimum.accumulate([e.cost for e in run.evaluations])
    candidate_ns = decision.candidate_ns
    return TuneResult(
        program=loaded.name,
        default_ms=decision.default_ns / 1e6,
        best_ms=(decision.default_ns if decision.kept_default else candidate_ns) / 1e6,
        speedup=decision.speedup,
        noise=math.nan if decision.noise_floor is None else decision.noise_floor,
        measurements=run.measured,
        resumed=run.resumed,
        best_config=decision.chosen,
        strategy=search.name,
        kept_default=decision.kept_default,
        history=[float(1 / cost) for cost in best_costs],
        space=space,
        fingerprint=fingerprint,
        failed=sum(not math.isfinite(e.cost) for e in run.evaluations),
        candidate=decision.candidate,
        candidate_speedup=decision.default_ns / candidate_ns if candidate_ns else None,
        seconds=time.monotonic() - started,
        _program=loaded,
    )


def _make(
    name: str | BaseSampler, program: Program, space: str, seed: int,
    model: str | Scorer | None, study: OptunaStudy,
) -> tuple[Strategy, ModelRanker | None]:
    """The strategy called `name`, or the optuna strategy with `name` as its sampler."""
    layouts = LayoutSpace(program) if space != "flags" or model is not None else None
    genes = SearchSpace(space, layouts)
    if not isinstance(name, str):
        if model is not None:
            raise HlotuneError("a cost model ranks candidates of the evolutionary strategy only, not optuna")
        return OptunaTPE(genes, seed, sampler=name, study=study), None
    ranker = None if model is None else ModelRanker(load_scorers(model, space), layouts)
    return make_strategy(name, genes, seed, ranker, study=study), ranker


class _FineTuning:
    """Fine-tunes a ranker's models each time `every` more configs have been evaluated."""

    def __init__(self, ranker: ModelRanker, every: int, seed: int) -> None:
        self.ranker, self.every, self.seed = ranker, every, seed
        self.done_at = 1  # the default alone teaches nothing

    def __call__(self, run: _Run) -> None:
        if len(run.evaluations) - self.done_at >= self.every:
            self.done_at = len(run.evaluations)
            costs = {e.config: e.cost for e in run.evaluations}
            self.ranker.fine_tune(costs, run.default.median_ns, self.seed + self.done_at)


class _Run:
    """One tune's bookkeeping: what it evaluated, measured and found in the database."""

    def __init__(self, program: str, fingerprint: str, db: TuningDatabase, settings: MeasureSettings,
                 runner: Runner) -> None:
        self.program, self.fingerprint, self.db, self.settings = program, fingerprint, db, settings
        self.runner = runner
        self.default: Record | None = db.lookup(fingerprint, DEFAULT_CONFIG.key)
        self.measured = 0
        self.resumed = int(self.default is not None)
        self.evaluations = [Evaluation(DEFAULT_CONFIG, 1.0)]  # costs are relative to the default

    def search(self, strategy: Strategy, budget: int | None, deadline: float | None, batch: int,
               progress: bool, after_batch: Callable[[_Run], None] | None = None) -> None:
        strategy.tell(self.evaluations)
        bar = tqdm(total=budget, desc=self.program, unit="config", leave=False,
                   disable=None if progress else True, initial=1)
        while (budget is None or len(self.evaluations) < budget) and (
            deadline is None or time.monotonic() < deadline
        ):
            wanted = batch if budget is None else min(batch, budget - len(self.evaluations))
            configs = strategy.ask(wanted)
            if not configs:
                break
            evaluated = self._evaluate(configs)
            strategy.tell(evaluated)
            self.evaluations += evaluated
            if after_batch is not None and self.default is not None:
                after_batch(self)
            bar.update(len(evaluated))
            bar.set_postfix(best=f"{max(1 / e.cost for e in self.evaluations):.3f}x")
        bar.close()
        if self.default is None:  # nothing needed measuring: measure the default alone
            self._measure([])

    def _evaluate(self, configs: list[CompileConfig]) -> list[Evaluation]:
        """Costs of `configs`: from the database, or measured in one batch and stored."""
        records = {config: self.db.lookup(self.fingerprint, config.key) for config in configs}
        new = [config for config, record in records.items() if record is None]
        self.resumed += len(configs) - len(new)
        if new:
            self._measure(new)
            records |= {config: self.db.lookup(self.fingerprint, config.key) for config in new}
        return [Evaluation(config, records[config].cost) for config in configs]

    def _measure(self, configs: list[CompileConfig]) -> None:
        for result in self.runner.measure(self.program, configs, self.settings):
            self.db.record_batch(self.fingerprint, result, with_default=self.default is None)
            self.measured += len(result.measurements) + (self.default is None)
            self.default = self.db.lookup(self.fingerprint, DEFAULT_CONFIG.key)

    def decide(self, strategy: str, space: str) -> Decision:
        """Re-measure the best candidate beside the default (unless a previous run did) and
        keep it only if its gain exceeds the batch's noise floor."""
        best = min(self.evaluations, key=lambda e: e.cost)
        candidate = best.config if math.isfinite(best.cost) else DEFAULT_CONFIG
        decision = self.db.decision(self.fingerprint, candidate.key)
        if decision is not None:
            return decision
        if candidate.is_default:
            noise = [r.noise_floor for r in self._records() if r.noise_floor is not None]
            default_ns = self.default.median_ns
            decision = Decision(self.fingerprint, candidate, candidate, default_ns, default_ns,
                                float(np.median(noise)) if noise else None, strategy, space, time.time())
        else:
            (result,) = self.runner.measure(self.program, [candidate], self.settings)
            confirmed = result.measurements[0]
            candidate_ns = confirmed.median_ns if confirmed.ok else None
            better = candidate_ns is not None and result.default_ns / candidate_ns - 1 > result.noise_floor
            decision = Decision(self.fingerprint, candidate, candidate if better else DEFAULT_CONFIG,
                                result.default_ns, candidate_ns, result.noise_floor, strategy, space,
                                time.time())
        self.db.decide(decision)
        return decision

    def _records(self) -> list[Record]:
        evaluated = {e.config.key for e in self.evaluations}
        return [r for r in self.db.records(self.fingerprint) if r.config_key in evaluated]
