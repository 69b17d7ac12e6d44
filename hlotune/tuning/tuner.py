"""`hlotune.tune`: one program's tune, built from names as one TuneOptions says and run.

The parts come from registries: the space's recipe (recipes/) builds its SearchSpace, the model
that ranks candidates (models/), and the strategy (strategies/); the runner is made by name
(runners/). The evolutionary strategy's candidates are ranked by the shipped pretrained cost
models unless told otherwise, blended with an online model of the program's own measurements;
with `fine_tune_every` the models are fine-tuned on those measurements each time that many more
configs have been evaluated. Fine-tuning sees the same costs at the same points on a resumed
run, so the search stays deterministic. The loop that runs the parts is the Tuner (loop.py).

A `time_s` budget counts from the call, so loading the program and the models, ranking, asking
and compiling all spend it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from hlotune.compiler.measurement.argument_files import offer
from hlotune.compiler.measurement.machine import Machine
from hlotune.deprecation import renamed_keyword
from hlotune.errors import HlotuneError
from hlotune.programs import Program, load_program
from hlotune.programs.calls import BoundCall, jit_function
from hlotune.programs.function_program import FunctionProgram, function_program
from hlotune.programs.keys import KeyedFunction
from hlotune.tuning.callbacks import Callback, ProgressBar, UpdateCostModel
from hlotune.tuning.fingerprint import program_fingerprint
from hlotune.tuning.keywords import OPTION_NAMES, split_keywords
from hlotune.tuning.loop import Tuner
from hlotune.tuning.models.base import CostModel
from hlotune.tuning.models.online import OnlineCostModel
from hlotune.tuning.options import TuneOptions
from hlotune.tuning.recipes.build import Build
from hlotune.tuning.recipes.registry import SPACES
from hlotune.tuning.result import TuneResult
from hlotune.tuning.runners.base import Runner
from hlotune.tuning.runners.in_process import runner_for
from hlotune.tuning.runners.registry import DEFAULT_RUNNER
from hlotune.tuning.storage import TuningDatabase, default_db_location, local_folder


def tune(
    program: str | Callable | FunctionProgram,
    *args,
    options: TuneOptions | None = None,
    db: str | Path | None = None,
    runner: str | Runner = DEFAULT_RUNNER,
    callbacks: Sequence[Callback] = (),
    progress: bool = True,
    static_argnums: int | Sequence[int] | None = None,
    static_argnames: str | Sequence[str] | None = None,
    db_path: str | Path | None = None,
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
    first (a batch in flight finishes), `strategy` (a name, a factory built as a name is, from
    the tune's StrategyParts, docs/extending.md, a Strategy instance used as it is, e.g.
    `Exhaustive([...])` to measure chosen configs, or an Optuna sampler, whose study is stored
    beside the database, docs/tuning.md), `model` (ranks the evolutionary strategy's candidates),
    `fine_tune_every`, `online`, `optimism`, `first_generation`, `warm_start`, `batch`, `seed`,
    `allow_numerics_change` and the measurement `settings`.

    A function is exported with jax.export into `programs/` beside the database (so the worker
    can load it, see hlotune.programs.exported); on it the layout space holds only the arguments'
    layouts. One jax.export cannot serialize (host callbacks) is measured in this process,
    with a warning (runners/in_process.py); @autotune passes its FunctionProgram as `program`.
    `result.compiled()` takes and returns what the function does, for the same static
    values. `db` is the tuning database (a file or a postgresql:// URL; default $HLOTUNE_DB or
    ~/.cache/hlotune/tuning.sqlite; `db_path`, its old name, for one release). `runner`
    ("local", "ray", "ray:ADDRESS" or a Runner) measures; the database is read and written
    under its machine's hardware fingerprint (runners/). `callbacks` see every batch.
    """
    started = time.monotonic()
    function = None if isinstance(program, (str, FunctionProgram)) else program
    chosen, arguments = split_keywords(keywords, tune, OPTION_NAMES, function)
    options = replace(options or TuneOptions(), **chosen)
    location = renamed_keyword(db, db_path, call="hlotune.tune", old="db_path", new="db") or default_db_location()
    folder = local_folder(location)  # exported programs
    folder.mkdir(parents=True, exist_ok=True)
    caller, target = None, program if isinstance(program, FunctionProgram) else None
    if function is not None:
        call = jit_function(function, static_argnums, static_argnames).bind(args, arguments)
        keyed = call.keyed()
        target = function_program(keyed, call.data, folder / "programs")
        caller = _user_caller(call, keyed)
    elif args or static_argnums is not None or static_argnames is not None:
        raise HlotuneError("example arguments and static ones go with a function, not with a program spec")
    if target is not None:
        program = target.spec()
    with runner_for(target, runner) as measurer:  # first: a runner that cannot start fails before any work
        loaded = load_program(program) if target is None else target.measured
        offer(loaded)  # its workers need not run its init again
        build = Build(options, loaded, program, program_fingerprint(loaded), location, started, progress)
        recipe = SPACES[options.space](build)
        space, prior = recipe.space(), recipe.prior()
        learns = recipe.learns_online()
        cost_model = OnlineCostModel(prior, optimism=options.optimism) if learns else prior
        search = recipe.search(space, cost_model)
        with TuningDatabase(location, machine=measurer.machine) as database:
            tuner = Tuner(loaded, space, recipe.wrapped(search, space, database), measurer, database,
                          cost_model=cost_model,
                          callbacks=[*_callbacks(options, prior, learns, progress), *callbacks],
                          settings=options.settings, fingerprint=build.fingerprint)
            try:
                decision = tuner.run(options.budget, build.deadline, options.batch)
            finally:
                if prior is not None and prior is not options.model:  # a model given is the caller's
                    prior.close()
    result = tuner.result(decision, seconds=time.monotonic() - started)
    statistics = prior.statistics() if prior is not None else {}
    verified = _conclude(location, options, result, loaded if target is None else target.user, measurer.machine)
    return replace(result, **statistics, verified_speedup=verified, _caller=caller,
                   _program=result._program if target is None else target.user)


def _conclude(location: str | Path, options: TuneOptions, result: TuneResult, program: Program,
              machine: Machine) -> float | None:
    """Every tune ends the same way: its tuning time logged, and a kept config timed beside
    jax.jit in this process (verification.py) where it was measured on this kind of machine;
    the kept config's speedup there (None: nothing kept, or measured elsewhere)."""
    from hlotune.compiler.measurement.machine import this_machine
    from hlotune.tuning.verification import time_config

    verification = None
    if not result.kept_default and machine == this_machine():
        verification = time_config(program, result.best_config)
    with TuningDatabase(location, machine=machine) as db:
        db.record_tune(result.fingerprint, options.budget or 0, result.measurements, result.seconds)
        if verification is not None:
            db.record_verification(result.fingerprint, verification)
    return None if verification is None else verification.speedup


def _user_caller(call: BoundCall, keyed: KeyedFunction) -> Callable[[Callable], Callable]:
    """What makes a compile of the function's user program a callable of the user's call."""
    return lambda executable: call.caller(keyed.caller(executable))


def _callbacks(options: TuneOptions, prior: CostModel | None, learns: bool, progress: bool) -> list[Callback]:
    """The tune's own callbacks: the online model taught after every batch, the prior
    fine-tuned every `fine_tune_every` configs, and the progress bar."""
    callbacks: list[Callback] = [UpdateCostModel(1)] if learns else []
    if prior is not None and options.fine_tune_every:
        callbacks.append(UpdateCostModel(options.fine_tune_every, prior))
    return callbacks + ([ProgressBar(options.budget)] if progress else [])
