"""`hlotune db`: list, show, export and import what the tuning database holds for this machine.

With --json, stdout is JSON alone: `db list` one object per program; `db show` one object with
every record. PROGRAM is a program spec (its fingerprint is computed) or a fingerprint prefix.
The database is $HLOTUNE_DB, or ~/.cache/hlotune/tuning.sqlite, unless --db names one; the
other commands that read a database open it here (`open_database`).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from hlotune.errors import HlotuneError

if TYPE_CHECKING:
    from hlotune.tuning.storage import TuningDatabase

FORMATS = ("json", "compiler_options", "xla_flags")
DB_HELP = ("tuning database: a file or a postgresql:// URL (default: $HLOTUNE_DB or "
           "~/.cache/hlotune/tuning.sqlite)")


def add_db_commands(subparsers) -> None:
    """Register `db` on the main parser's subparsers."""
    db = subparsers.add_parser("db", help="list, show and export tuning results")
    commands = db.add_subparsers(title="db commands", required=True, metavar="COMMAND")
    listing = commands.add_parser("list", help="programs tuned on this machine")
    show = commands.add_parser("show", help="every measurement of a program, fastest first")
    export = commands.add_parser(
        "export", help="the tuned config as JSON, a compiler_options dict or an XLA_FLAGS string",
        description="Print the config the latest tune of PROGRAM chose on this machine. "
        "compiler_options is JSON for jax's `.compile(compiler_options=...)`; xla_flags is "
        "for the XLA_FLAGS environment variable. Layouts cannot be XLA options: those two "
        "formats leave them out and say so on stderr.",
    )
    importing = commands.add_parser(
        "import", help="store a decision made elsewhere, for a recorded or measured program",
        description="Store the decision FILE holds: what `db export --format json` printed, or "
        'at least {"program": NAME_OR_FINGERPRINT, "config": {...}} written by hand (flags found by '
        "hand, or tuned on a staging machine of the same kind). hlotune.jit trials it in every "
        "process like any other decision; a file exported on another kind of machine is refused.")
    importing.add_argument("file", metavar="FILE", help="the decision, as JSON")
    for command in (show, export):
        command.add_argument("program", metavar="PROGRAM", help="a program spec or a fingerprint prefix")
    export.add_argument("--format", choices=FORMATS, required=True)
    for command, run in ((listing, run_list), (show, run_show), (export, run_export), (importing, run_import)):
        command.add_argument("--db", metavar="DB", help=DB_HELP)
        command.set_defaults(run=run)
    listing.add_argument("--json", action="store_true", help="print one JSON object per program")
    show.add_argument("--json", action="store_true", help="print the records as one JSON object")


def run_list(args: argparse.Namespace) -> int:
    with open_database(args.db) as db:
        entries = db.programs()
        if args.json:
            for entry in entries:
                print(json.dumps({"fingerprint": entry.fingerprint, "program": entry.name,
                                  "records": entry.records, "failed": entry.failed,
                                  "tuned": _decision_json(entry.best)}))
            return 0
        if not entries:
            print(f"{db.location}: nothing measured on this machine yet")
            return 0
        print(f"{'FINGERPRINT':<13} {'PROGRAM':<32} {'RECORDS':>7} {'FAILED':>6}  TUNED")
        for entry in entries:
            tuned = _decision_text(entry.best) if entry.best is not None else "-"
            print(f"{entry.fingerprint[:12]:<13} {entry.name:<32} {entry.records:>7} "
                  f"{entry.failed:>6}  {tuned}")
    return 0


def run_show(args: argparse.Namespace) -> int:
    with open_database(args.db) as db:
        fingerprint = resolve_fingerprint(db, args.program)
        records = sorted(db.records(fingerprint), key=lambda r: r.cost)
        if not records:
            raise HlotuneError(f"{args.program}: nothing measured on this machine in {db.location}")
        if args.json:
            print(json.dumps({"fingerprint": fingerprint, "program": db.name_of(fingerprint),
                              "records": [_record_json(record) for record in records],
                              "tuned": _decision_json(db.decision(fingerprint))}))
            return 0
        print(f"{db.name_of(fingerprint)} ({fingerprint[:12]}): {len(records)} configs measured here")
        print(f"  {'SPEEDUP':>7}  {'STATUS':<12} {'MAX ERROR':>9}  {'NUMERICS':<10} CONFIG")
        for record in records:
            speedup = f"{1 / record.cost:.3f}x" if record.ok else "-"
            error = "-" if record.max_rel_error is None else f"{record.max_rel_error:.2g}"
            reason = f"  ({record.reason})" if record.reason else ""
            print(f"  {speedup:>7}  {record.status:<12} {error:>9}  {record.config.numerics:<10} "
                  f"{record.config_key}{reason}")
        best = db.decision(fingerprint)
        if best is not None:
            print(f"  tuned: {_decision_text(best)} -> {best.chosen.key} (numerics-{best.chosen.numerics})")
    return 0


def run_export(args: argparse.Namespace) -> int:
    with open_database(args.db) as db:
        exported = db.export(resolve_fingerprint(db, args.program), args.format)
    print(exported.text)
    if exported.note:
        print(f"hlotune: note: {exported.note}", file=sys.stderr)
    return 0


def run_import(args: argparse.Namespace) -> int:
    with open_database(args.db) as db:
        decision = db.import_decision(args.file)
        name = db.name_of(decision.fingerprint)
    print(f"{name} ({decision.fingerprint[:12]}): imported {decision.chosen.key}; hlotune.jit trials it "
          "in each process before keeping it")
    return 0


def open_database(location: str | Path | None) -> TuningDatabase:
    """The tuning database at `location`, a file or a URL (default: $HLOTUNE_DB or
    ~/.cache/hlotune/tuning.sqlite), for the commands that read one: a missing file is an
    error, not a new empty database."""
    from hlotune.tuning.storage import TuningDatabase, default_db_location, exists

    location = location or default_db_location()
    if not exists(location):
        raise HlotuneError(f"{location}: no tuning database (run hlotune tune first)")
    return TuningDatabase(location)


def resolve_fingerprint(db: TuningDatabase, program: str) -> str:
    """The fingerprint a command's PROGRAM names: a program spec's (computed from the program)
    or the one in `db` that a fingerprint prefix picks."""
    from hlotune.programs import is_program_spec, load_program
    from hlotune.tuning.fingerprint import program_fingerprint

    if is_program_spec(program):
        return program_fingerprint(load_program(program, abstract=True))
    return db.resolve(program)


def _record_json(record) -> dict:
    """A record as `db show --json` prints it: the config as a dict, no infinite speedups."""
    fields = asdict(record)
    del fields["fingerprint"], fields["config_key"]
    return {"config": record.config.to_dict(), "speedup": 1 / record.cost if record.ok else None,
            "numerics": record.config.numerics, **fields}


def _decision_json(decision) -> dict | None:
    if decision is None:
        return None
    fields = asdict(decision)
    del fields["fingerprint"]
    return fields | {"candidate": decision.candidate.to_dict(), "chosen": decision.chosen.to_dict(),
                     "kept_default": decision.kept_default, "speedup": decision.speedup,
                     "numerics": decision.chosen.numerics}


def _decision_text(decision) -> str:
    noise = "" if decision.noise_floor is None else f" (noise {decision.noise_floor:.1%})"
    if decision.kept_default:
        return f"default kept{noise}"
    found = "" if decision.found_speedup is None else f", found {decision.found_speedup:.3f}x"
    return f"{decision.speedup:.3f}x kept{found}{noise}"
