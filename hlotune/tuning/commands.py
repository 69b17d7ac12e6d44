"""`hlotune tune`: autotune a program here (`hlotune db`, which reads the database, is db_commands.py).

Every flag is in docs/cli.md, generated from these parsers; the choices of --space, --strategy,
--model and --runner are the registries' (tuning/recipes/, tuning/strategies/, evaluation/ and
tuning/models/, tuning/runners/), and the defaults TuneOptions'. With --json, stdout is
JSON alone: `tune` prints one object with at least the keys program, default_ms, best_ms,
speedup, noise, measurements, resumed, best_config and strategy (speedup is the kept one,
measured after choosing; found_speedup and confirmed_speedup are the search's and the choosing
rounds', flattered by the choice); a kept config is timed beside jax.jit in this process
(verified_speedup). A program hlotune.jit recorded is named by its recorded name.
The database is $HLOTUNE_DB, or ~/.cache/hlotune/tuning.sqlite, unless --db names one.
Heavy modules (jax) load inside the handlers so that `hlotune --help` stays fast.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import fields

from hlotune.helptext import ChoicesFormatter, choices_help
from hlotune.progress import add_quiet
from hlotune.tuning.db_commands import DB_HELP, add_db_commands
from hlotune.tuning.models.registry import tune_models
from hlotune.tuning.options import TuneOptions
from hlotune.tuning.recipes.registry import SPACES
from hlotune.tuning.runners import registry as runners
from hlotune.tuning.strategies.registry import FIRST_GENERATIONS, STRATEGIES

DEFAULTS = {field.name: field.default for field in fields(TuneOptions)}  # --help says them too


def add_commands(subparsers) -> None:
    """Register `tune` and `db` on the main parser's subparsers."""
    tune = subparsers.add_parser(
        "tune",
        help="autotune a program's XLA flags and layouts on this machine",
        description="Search PROGRAM's XLA configurations (flags, per-tensor layouts, each "
        "kernel's partitions or XLA's fusions; all: flags and layouts, then the kernels of the "
        "best so far, then their fusion), "
        "measuring candidates in batches beside the default, and report the best. A config is "
        "chosen only if, re-measured beside the default, it beats it by more than the noise "
        "floor, and its speedup is measured once more after choosing it. Every measurement "
        "goes to the tuning database: re-running resumes without measuring anything twice.",
        formatter_class=ChoicesFormatter,
    )
    tune.add_argument("program", metavar="PROGRAM", help="zoo:, corpus: or go:NAME[@VARIANT], "
                      "path/to/file.py:FACTORY, export:PATH, or a program hlotune.jit recorded "
                      "(its name or fingerprint prefix, as hlotune fleet status lists them)")
    tune.add_argument("--budget", type=int, default=DEFAULTS["budget"], metavar="N",
                      help="configs to evaluate, the default included (default %(default)s)")
    tune.add_argument("--time", type=float, metavar="T",
                      help="stop searching after T seconds from the start (loading, ranking and "
                      "compiling count), or --budget configs, whichever comes first")
    tune.add_argument("--db", metavar="DB", help=DB_HELP)
    tune.add_argument("--seed", type=int, default=DEFAULTS["seed"])
    tune.add_argument("--runner", default=runners.DEFAULT_RUNNER, metavar="R",
                      help=choices_help("where batches are measured:", runners.described(),
                                        runners.DEFAULT_RUNNER))
    add_search_arguments(tune)
    tune.add_argument("--json", action="store_true", help="print the result as one JSON object")
    add_quiet(tune)
    tune.set_defaults(run=run_tune, tune_recorded=None)

    add_db_commands(subparsers)


def add_search_arguments(parser: argparse.ArgumentParser) -> None:
    """The search's flags, which `hlotune tune` and `hlotune fleet tune` share (search_options)."""
    parser.add_argument("--space", choices=tuple(SPACES), default=DEFAULTS["space"],
                        help="what to search (default %(default)s); all searches flags x layouts, then "
                        "spends an eighth of the budget each on the tile and the fusion space of "
                        "the best config so far (docs/tuning.md)")
    parser.add_argument("--strategy", choices=tuple(STRATEGIES), default=DEFAULTS["strategy"],
                        help="the search (default %(default)s): evolutionary (bred candidates ranked "
                        "by --model, in the flags space from the shipped portfolio), bandit (it, TPE "
                        "and random sharing each batch; needs the optuna extra), random, exhaustive, "
                        "optuna (TPE) or optuna-gp (docs/tuning.md)")
    parser.add_argument("--model", metavar="M", default=DEFAULTS["model"], help=_model_help())
    parser.add_argument("--per-kernel", type=int, default=DEFAULTS["per_kernel"], metavar="K",
                        help="tile space: measure K partitions of each kernel, the model's favourites "
                        "(default %(default)s; 5: every one)")
    parser.add_argument("--no-kernel-stages", dest="kernel_stages", action="store_false",
                        help="all space: search flags x layouts alone, not then the best config's "
                        "kernels and fusions")
    parser.add_argument("--fine-tune-every", type=int, metavar="N",
                        help="fine-tune the model on this program's measurements every N configs")
    parser.add_argument("--batch", type=int, default=DEFAULTS["batch"], metavar="B",
                        help="configs measured together (default %(default)s)")
    parser.add_argument("--no-online", dest="online", action="store_false",
                        help="rank by the prior model alone, without learning this program's "
                        "measurements after every batch")
    parser.add_argument("--optimism", type=float, default=DEFAULTS["optimism"], metavar="B",
                        help="rank the online model's candidates by predicted cost less B posterior "
                        "standard deviations, so choices never measured get tried (LinUCB; default "
                        "%(default)s)")
    parser.add_argument("--first-generation", choices=FIRST_GENERATIONS,
                        help="the search's first configs: its own random draws (default, except the "
                        "evolutionary search in flags, which asks the portfolio), a covering "
                        "design that tries every option value once (evolutionary), or the shipped portfolio "
                        "of configs that won on other programs (evolutionary, optuna)")
    parser.add_argument("--immigrants", type=float, default=DEFAULTS["immigrants"], metavar="S",
                        help="the evolutionary search: draw a share S of each batch after the first "
                        "from the whole space, beside the children of the best (default %(default)s)")
    parser.add_argument("--warm-start", type=int, default=DEFAULTS["warm_start"], metavar="N",
                        help="first try the flags of up to N configs that won on other programs "
                        "here (default %(default)s; 0: none)")
    parser.add_argument("--no-fleet-portfolio", dest="fleet_portfolio", action="store_false",
                        help="warm-start from the newest winners, not in the order that kept most of "
                        "their gain on this database's programs (the fleet portfolio)")
    parser.add_argument("--allow-numerics-change", action="store_true",
                        help="also search options that change results by design (fast math, fast "
                        "min/max); without it only numerics-preserving options are searched")
    parser.add_argument("--noise-target", type=float, metavar="F",
                        help="measure each config until its median is known within F (95%% "
                        "confidence interval, relative), up to 100 rounds a batch")
    parser.add_argument("--rtol", type=float, metavar="R",
                        help="how far float outputs may differ from the default's, relative "
                        "(default: per dtype, docs/compiler.md)")


def _model_help() -> str:
    """--model's help: a line per spelling the registries take (tuning/models/registry.py)."""
    lead = ("the cost model ranking the evolutionary strategy's candidates, so only the most promising "
            "are measured; in the tile space a model named (e.g. pretrained:tile) ranks each kernel's "
            "partitions, which the default and none take in a random order (it keeps more of the time "
            "saved: docs/kernels.md), and in the fusion space any model but none ranks by the module's "
            "roofline:")
    return choices_help(lead, tune_models(), DEFAULTS["model"])


def run_tune(args: argparse.Namespace) -> int:
    from hlotune.programs import is_program_spec
    from hlotune.tuning.final_check import TIE
    from hlotune.tuning.tuner import tune

    options = _tune_options(args)
    if is_program_spec(args.program) or args.tune_recorded is None:
        result = tune(args.program, options=options, db=args.db, runner=args.runner, progress=not args.quiet)
        name = result.program
    else:  # a program hlotune.jit recorded: fleet/commands.py hands this parser its handler
        name, result = args.tune_recorded(args.program, args.db, options, args.runner, not args.quiet)
    if args.json:
        print(json.dumps(result.to_json()))
        return 0
    noise = f"noise floor {result.noise:.1%}"
    if not result.kept_default:
        best = f"{result.best_ms:.4f} ms   {result.speedup:.3f}x faster, measured after choosing it ({noise})"
    elif result.candidate.is_default:
        best = "the default: no candidate was faster"
    elif result.candidate_speedup is None:
        best = "the default: the best candidate failed when measured again"
    elif result.confirm_rounds and result.candidate_speedup < TIE:
        best = (f"the default: the best candidate ran {result.candidate_speedup:.3f}x when measured once "
                f"more after choosing it, a tie or slower (a decision needs {TIE}x there)")
    else:
        measured = result.confirmed_speedup or result.candidate_speedup  # None: decided before rounds
        best = f"the default: the best candidate's {measured:.3f}x, re-measured, is within the {noise}"
    print(f"{name}: {result.space} space, {result.strategy} search, seed {args.seed}")
    print(f"  default       {result.default_ms:.4f} ms")
    print(f"  best          {best}")
    if not result.kept_default and result.confirm_rounds:
        rounds = f"{result.confirm_rounds} round{'s' * (result.confirm_rounds > 1)}"
        print(f"  chosen at     {result.found_speedup:.3f}x in the search, {result.confirmed_speedup:.3f}x "
              f"re-measured over {rounds} (both flattered by the choice)")
    print(f"  evaluated     {result.measurements} measured + {result.resumed} from the database "
          f"({result.failed} failed) in {result.seconds:.1f} s")
    if result.screened:
        print(f"  screened      {result.screened} candidates compiled and scored by their kernels "
              f"({result.screen_s:.1f} s compiling)")
    print(f"  config        {json.dumps(result.best_config.to_dict())} (numerics-{result.numerics})")
    if result.verified_speedup is not None:
        from hlotune.tuning.storage.fleet_log import VERIFIED_FLOOR

        verified = result.verified_speedup
        applies = ("hlotune.jit trials it in each process" if verified >= VERIFIED_FLOOR
                   else f"below {VERIFIED_FLOOR}x: hlotune.jit keeps jax.jit's")
        print(f"  verified      {verified:.3f}x beside jax.jit in this process, interleaved ({applies})")
    if not result.kept_default:
        only_flags = result.best_config.layout.is_default and result.best_config.kernels.is_default
        export = "xla_flags" if only_flags else "json"
        database = f" --db {args.db}" if args.db else ""
        program = result.program if name == result.program else result.fingerprint[:12]
        print(f"  use it        hlotune db export {program} --format {export}{database}"
              "   (Python: hlotune.tune(...).compiled())")
    return 0


def _tune_options(args: argparse.Namespace) -> TuneOptions:
    """The search `hlotune tune`'s flags ask for, as a TuneOptions."""
    return search_options(args, budget=args.budget, time_s=args.time)


def search_options(args: argparse.Namespace, **fields) -> TuneOptions:
    """The TuneOptions add_search_arguments' flags ask for, with `fields` (budget, time_s)."""
    from hlotune.compiler.measurement.measure import MeasureSettings

    return TuneOptions(
        space=args.space, strategy=args.strategy, model=args.model, fine_tune_every=args.fine_tune_every,
        online=args.online, optimism=args.optimism, first_generation=args.first_generation,
        immigrants=args.immigrants, warm_start=args.warm_start, fleet_portfolio=args.fleet_portfolio,
        batch=args.batch, seed=args.seed, per_kernel=args.per_kernel, kernel_stages=args.kernel_stages,
        allow_numerics_change=args.allow_numerics_change,
        settings=MeasureSettings(rtol=args.rtol, noise_target=args.noise_target), **fields)
