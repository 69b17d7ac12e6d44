"""`hlotune profile`: where a program's time goes, kernel by kernel."""

from __future__ import annotations

import argparse
import json


def add_commands(commands) -> None:
    profile = commands.add_parser(
        "profile",
        help="time a program kernel by kernel",
        description="Measure PROGRAM (timed rounds beside nothing else), then run it under the "
        "profiler apart from those rounds, and print each kernel's time per run (its own: "
        "kernels nested in a loop are not counted twice), share of the kernels' sum, events per "
        "run, kind, fused ops and source lines. A kernel's KEY (--json) names it in a config's "
        "\"kernels\" part. PROGRAM: zoo:NAME[@VARIANT], corpus:, go:, export:PATH or "
        "file.py:FACTORY.",
    )
    profile.add_argument("program", metavar="PROGRAM")
    profile.add_argument("--config", metavar="JSON",
                         help="profile under this config: a JSON file or text, e.g. what "
                         "`hlotune db export PROGRAM --format json` prints (default: XLA's)")
    profile.add_argument("--runs", type=int, default=10, help="profiled runs (default 10)")
    profile.add_argument("--top", type=int, default=20, help="kernels listed (default 20; --json lists all)")
    profile.add_argument("--json", action="store_true",
                         help="one object: wall_ms, kernels_ms, span_ms and kernels (name, key, ms, share, ...)")
    profile.set_defaults(run=run_profile)


def run_profile(args: argparse.Namespace) -> int:
    from hlotune.compiler.configs.config import DEFAULT_CONFIG, load_config
    from hlotune.compiler.profiles.program_profile import format_profile, profile_program

    config = DEFAULT_CONFIG if args.config is None else load_config(args.config)
    profile = profile_program(args.program, config, runs=args.runs)
    print(json.dumps(profile.to_json()) if args.json else format_profile(profile, args.top))
    return 0
