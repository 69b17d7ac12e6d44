"""`hlotune fleet`: the programs `hlotune.jit` recorded, as one fleet (docs/fleet.md).

    hlotune fleet status [--db DB] [--json]
    hlotune fleet tune [--budget N] [--hours H] [--allocation A] [--runner R] [--seed S] [--db DB]
                       [hlotune tune's search flags: --space, --strategy, --model, ...] [--json] [--quiet]
    hlotune fleet report [--db DB] [--json]

`status` prints one line per recorded program (with --json, one object per line): its name as
the user's code called it, calls, recorded time and share, and whether a decision applies.
`tune` spends one budget across the recorded programs (fleet/tune.py, allocation.py), `report`
what the decisions save a day, verified beside jax.jit, against the tuning time (savings.py;
`hlotune report` draws it as a page).
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from hlotune.fleet.allocation import ALLOCATIONS, DEFAULT_ALLOCATION
from hlotune.helptext import ChoicesFormatter, choices_help
from hlotune.progress import add_quiet
from hlotune.tuning.commands import add_search_arguments, search_options
from hlotune.tuning.db_commands import DB_HELP, open_database
from hlotune.tuning.runners import registry as runners

if TYPE_CHECKING:
    from hlotune.tuning.options import TuneOptions


def add_commands(subparsers) -> None:
    """Register `fleet` on the main parser's subparsers."""
    fleet = subparsers.add_parser(
        "fleet", help="the programs hlotune.jit recorded: what runs, and what is tuned",
        description="The programs that hlotune.jit (or jax.jit after hlotune.install()) recorded "
        "in the tuning database, from every process and machine sharing it.")
    commands = fleet.add_subparsers(dest="fleet_command", metavar="COMMAND", required=True)
    status = commands.add_parser(
        "status", help="one line per recorded program: calls, recorded time, share, decision",
        description="Each recorded program on this machine and compiler, most recorded time "
        "first: calls over every process, recorded time (calls x the mean sampled call), its "
        "share of the fleet's, and the decision's standing (not tuned, default kept, no verified "
        "gain, on trial, applied, retired, carried over: docs/fleet.md) with the field's trials: "
        "how many processes ran it, how many kept it, and its speedup there.")
    status.add_argument("--json", action="store_true", help="print one JSON object per program")
    status.set_defaults(run=run_status)
    tune = commands.add_parser(
        "tune", help="spend one tuning budget across the recorded programs, where it saves most",
        description="Tune the recorded programs within one budget: configs measured over all of "
        "them (--budget) and/or hours (--hours), divided as --allocation says, each tuned as "
        "hlotune tune's search flags say (the flags space and the default engine unless told). "
        "Re-running resumes. Each kept decision is then timed beside jax.jit here, and trialled "
        "in each process that runs its program under hlotune.jit.",
        formatter_class=ChoicesFormatter)
    tune.add_argument("--budget", type=int, metavar="N", help="configs to measure over the fleet")
    tune.add_argument("--hours", type=float, metavar="H", help="hours to spend")
    allocations = {name: kind.description for name, kind in ALLOCATIONS.items()}
    tune.add_argument("--allocation", choices=tuple(ALLOCATIONS), default=DEFAULT_ALLOCATION,
                      help=choices_help("how the budget is divided:", allocations, DEFAULT_ALLOCATION))
    tune.add_argument("--runner", default=runners.DEFAULT_RUNNER, metavar="RUNNER",
                      help=choices_help("where to measure:", runners.described(), runners.DEFAULT_RUNNER))
    tune.add_argument("--seed", type=int, default=0, help="seed of every search (default 0)")
    add_search_arguments(tune)  # each program's tune, as `hlotune tune` takes it
    tune.add_argument("--json", action="store_true", help="print the result as one JSON object")
    add_quiet(tune)
    tune.set_defaults(run=run_tune)
    report = commands.add_parser(
        "report", help="what the fleet's decisions saved over the recorded window, against tuning time",
        description="Per recorded program and in total, over the window the counts span: recorded "
        "time, the decision's speedup as tuned and as verified beside jax.jit, the time it saved "
        "and whether that share comes from the field's trials or the verification, the tuning "
        "time spent, and the saving over it; a rate a day where the counts span an hour or more, "
        "never beyond what the recorded hosts could run. hlotune report --out FILE.html draws it "
        "as a page.")
    report.add_argument("--json", action="store_true", help="print the report as one JSON object")
    report.set_defaults(run=run_report)
    for command in (status, tune, report):
        command.add_argument("--db", metavar="DB", help=DB_HELP)
    subparsers.choices["tune"].set_defaults(tune_recorded=tune_recorded_program)


def tune_recorded_program(name: str, db: str | None, options: TuneOptions, runner: str, progress: bool):
    """`hlotune tune NAME` on a program hlotune.jit recorded: its recorded name and the tune's
    result (fleet/recorded.py)."""
    from hlotune.fleet.recorded import find_recording, tune_recorded
    from hlotune.tuning.storage import default_db_location

    location = db or default_db_location()
    with open_database(location) as opened:
        recording = find_recording(opened, name)
    return recording.name, tune_recorded(location, recording, options, runner=runner, progress=progress)


def run_status(args: argparse.Namespace) -> int:
    from hlotune.fleet.status import fleet_status

    with open_database(args.db) as db:
        rows = fleet_status(db)
        location = db.location
    if args.json:
        for row in rows:
            print(json.dumps(row.to_json()))
        return 0
    if not rows:
        print(f"{location}: no program recorded on this machine yet (run it under hlotune.jit)")
        return 0
    print(f"{'PROGRAM':<40} {'FINGERPRINT':<13} {'CALLS':>9} {'TIME':>10} {'SHARE':>6}  DECISION")
    for row in rows:
        decision = row.decision if row.speedup is None else f"{row.decision} ({row.speedup:.3f}x when tuned)"
        if row.processes:
            field = f"{row.field_speedup:.3f}x, {row.field_spread[0]:.3f}-{row.field_spread[1]:.3f}x" \
                if row.field_speedup is not None else "none finished"
            decision += f"; field: kept in {row.kept} of {row.processes} processes ({field})"
        if row.reason:
            decision += f": {row.reason}"
        print(f"{row.name[:40]:<40} {row.fingerprint[:12]:<13} {row.calls:>9} {row.seconds:>9.3f}s "
              f"{row.share:>6.1%}  {decision}")
    return 0


def run_tune(args: argparse.Namespace) -> int:
    from hlotune.fleet.tune import fleet_tune
    from hlotune.tuning.storage import default_db_location

    location = args.db or default_db_location()
    open_database(location).close()  # a missing or bad database: one line before any work
    result = fleet_tune(location, allocate=ALLOCATIONS[args.allocation].allocate, budget=args.budget,
                        hours=args.hours, runner=args.runner, seed=args.seed, show=not args.quiet,
                        options=search_options(args))
    if args.json:
        print(json.dumps({"measured": result.measured, "seconds": result.seconds,
                          "tunes": [{"program": o.recording.name, "fingerprint": o.recording.fingerprint,
                                     "budget": o.budget, "measured": o.measured, "seconds": o.seconds,
                                     "found": o.found, "speedup": o.speedup} for o in result.outcomes],
                          "verified": result.verified}))
        return 0
    print(f"fleet tune: {len(result.outcomes)} tunes, {result.measured} configs measured in {result.seconds:.0f} s")
    names = {}
    for o in result.outcomes:
        names[o.recording.fingerprint] = o.recording.name
        print(f"  {o.recording.name[:40]:<40} budget {o.budget:>3}  measured {o.measured:>3}  found {o.found:.3f}x  "
              f"kept {o.speedup:.3f}x")
    for fingerprint, verified in result.verified.items():
        print(f"  {names[fingerprint][:40]:<40} verified {verified:.3f}x beside jax.jit")
    return 0


def run_report(args: argparse.Namespace) -> int:
    from hlotune.fleet.savings import MIN_DAY_WINDOW_S, fleet_savings

    with open_database(args.db) as db:
        savings = fleet_savings(db)
    if args.json:
        print(json.dumps(savings.to_json()))
        return 0
    print(f"{'PROGRAM':<40} {'RECORDED S':>11} {'REPORTED':>9} {'VERIFIED':>9} {'SAVED S':>9} {'FROM':>8} "
          f"{'TUNING S':>9}")
    for p in savings.programs:
        print(f"{p.name[:40]:<40} {p.recorded_s:>11.2f} {_x(p.reported):>9} {_x(p.verified):>9} "
              f"{p.saved_s:>9.2f} {p.source:>8} {p.tuning_s:>9.0f}")
    print(f"{'total':<40} {savings.recorded_s:>11.2f} {'':>9} {'':>9} {savings.saved_s:>9.2f} {'':>8} "
          f"{savings.tuning_s:>9.0f}")
    print(f"recorded over {savings.window_s / 3600:.2f} h"
          + (f": {savings.seconds_per_day:,.0f} s a day, {savings.saved_per_day:,.1f} s a day saved"
             if savings.saved_per_day is not None else
             f" (a rate a day needs {MIN_DAY_WINDOW_S / 3600:.0f} h or more of counts)"))
    if savings.saving_over_cost is not None:
        print(f"the window's saving is {savings.saving_over_cost:.3f}x the tuning time")
    return 0


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}x"
