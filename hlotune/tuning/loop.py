"""The tuning loop: search, measure in batches, confirm against the default.

As in XTAT and MetaSchedule: a strategy asks for configs; configs the database already holds
for this program, machine and compiler are told from it (so a killed tune resumes without
measuring anything twice); the others are measured together in one `measure` batch, which
runs the default's replicas beside them, and committed. The budget counts evaluated configs,
the default included, whether measured now or found in the database, so re-running a command
finishes its search instead of starting a longer one.

Runtimes from different batches are compared through their batch's default (drift). The
final check (final_check.py) races the search's fastest configs that beat the default beyond
their batch's noise floor, re-measuring them beside the default until the leader's gain is
beyond doubt (otherwise the default is kept and the result says so), and reports its speedup
from one more batch, measured after choosing it: the best of many noisy measurements flatters
the winner, and a number that played no part in choosing does not. The decision is stored, so
a re-run that ends on the same finalists measures nothing.

Against a deadline the search asks only for as many configs as its pace so far says will be
measured before it, and the final check takes its first round (and its report's batch)
whatever time is left.

The loop is a `Tuner` of swappable parts, as in TVM MetaSchedule: the program's config space,
a search strategy (strategies/), an optional cost model that ranks its candidates and learns
from measurements (models/), a runner that measures (runners/: this machine, a Ray cluster, or
a replay of recorded measurements), a database (storage/) and callbacks (callbacks.py:
progress, cost-model updates, yours). It builds none of them: `tune()` (tuner.py) does, from
names, as one TuneOptions says (recipes/).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from hlotune.compiler.configs.config import DEFAULT_CONFIG, CompileConfig
from hlotune.compiler.measurement.measure import BatchResult, MeasureSettings
from hlotune.compiler.spaces.space import SearchSpace
from hlotune.programs import Program
from hlotune.tuning.callbacks import Callback
from hlotune.tuning.final_check import FINALISTS, Beside, Finalist, final_check
from hlotune.tuning.fingerprint import program_fingerprint
from hlotune.tuning.models.base import CostModel
from hlotune.tuning.result import TuneResult
from hlotune.tuning.runners.base import Runner
from hlotune.tuning.storage import CONFIRM_PREFIX, Database, Decision
from hlotune.tuning.strategies.base import Strategy, Trial

KERNEL_PROFILE_RUNS = 10  # profiled calls per config and round, for a search that reads kernel times
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
        """The `finalists` fastest configs of the search that beat the default there, but those
        the field retired (a retired decision's program tuned again keeps another)."""
        retired = self.database.retired(self.fingerprint)
        faster = sorted((t for t in self.trials if t.cost < 1.0 and t.config.key not in retired),
                        key=lambda t: t.cost)
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
