"""`hlotune report`: a tuning database or an `hlotune eval --json` result as one HTML page.

Without PROGRAM, the tuning report has one section per program measured on this machine and
compiler, each ending with the kernels of XLA's default and of the chosen config, profiled as
the page is written (--no-profile skips that), and, where hlotune.jit recorded programs, the
fleet's savings (`hlotune fleet report` as a page). The page is self-contained (inline SVG, no
script, no external URL): it opens offline and can be attached anywhere. Matplotlib loads
inside the handler so that `hlotune --help` stays fast.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hlotune.errors import HlotuneError
from hlotune.tuning.db_commands import DB_HELP


def add_commands(subparsers) -> None:
    """Register `report` on the main parser's subparsers."""
    report = subparsers.add_parser(
        "report",
        help="a tuning database or an evaluation as one self-contained HTML page",
        description="Write FILE.html: the tuning report of PROGRAM (default: every program "
        "measured on this machine) from the tuning database, or with --eval the evaluation "
        "report of an `hlotune eval --json` output (add --predictions to eval for the "
        "per-config plots). Figures are inline SVG: the page needs no network.",
    )
    report.add_argument("program", nargs="?", metavar="PROGRAM",
                        help="a program spec or a fingerprint prefix (default: every program)")
    source = report.add_mutually_exclusive_group()
    source.add_argument("--db", metavar="DB", help=DB_HELP)
    source.add_argument("--eval", type=Path, metavar="EVAL.json",
                        help="the output of hlotune eval --json [--predictions]")
    report.add_argument("--out", type=Path, required=True, metavar="FILE.html",
                        help="where to write the page")
    report.add_argument("--no-profile", action="store_true",
                        help="leave out \"Where the time goes\": the kernel tables of the default "
                        "and the chosen config, profiled on this machine as the page is written "
                        "(seconds per program)")
    report.set_defaults(run=run_report)


def run_report(args: argparse.Namespace) -> int:
    if args.eval is not None:
        if args.program is not None:
            raise HlotuneError("PROGRAM names a program of a tuning database, not of --eval")
        page, what = _evaluation_page(args.eval), "evaluation report"
    else:
        page, what = _tuning_page(args)
    page.write(args.out)
    print(f"{what} -> {args.out}")
    return 0


def _evaluation_page(path: Path):
    from hlotune.report.evaluation import evaluation_report

    try:
        text = path.read_text()
    except OSError as error:
        raise HlotuneError(f"{path}: cannot read ({error.strerror or error})") from None
    except UnicodeDecodeError:
        raise HlotuneError(f"{path}: not JSON (a binary file)") from None
    return evaluation_report(_last_json(text, path), str(path))


def _last_json(text: str, path: Path) -> object:
    """The file as JSON, else its last line (eval prints its JSON object last)."""
    lines = text.strip().splitlines()
    for candidate in (text, lines[-1] if lines else ""):
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            continue
    raise HlotuneError(f"{path}: not JSON (write it with hlotune eval --json > {path.name})")


def _tuning_page(args: argparse.Namespace):
    from hlotune.fleet.savings import fleet_savings
    from hlotune.report.fleet import fleet_section
    from hlotune.report.profile import PROFILE_RUNS
    from hlotune.report.tuning import tuning_report
    from hlotune.tuning.db_commands import open_database, resolve_fingerprint

    with open_database(args.db) as db:
        if args.program is None:
            fingerprints = [entry.fingerprint for entry in db.programs()]
            if not fingerprints:
                raise HlotuneError(f"{db.location}: nothing measured on this machine yet")
        else:
            fingerprints = [resolve_fingerprint(db, args.program)]
            if not db.records(fingerprints[0]):
                raise HlotuneError(f"{args.program}: nothing measured on this machine in {db.location}")
        page = tuning_report(db, fingerprints, 0 if args.no_profile else PROFILE_RUNS)
        if args.program is None and db.recordings():
            fleet_section(page, fleet_savings(db))
    return page, f"tuning report of {len(fingerprints)} program(s)"
