"""`hlotune collect`: measure programs under many compiler configs into a TpuGraphs dataset.

With --json, stdout holds one CollectResult object per program. Heavy modules (jax) load inside
the handler so that `hlotune --help` stays fast.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hlotune.progress import add_quiet


def add_commands(commands) -> None:
    """Register `collect` on the main parser's subparsers."""
    collect = commands.add_parser(
        "collect",
        help="measure programs under many compiler configs into a dataset",
        description="Compile and measure each PROGRAM under --configs configurations of one "
        "space (flags: XLA options; layout: per-tensor layouts; fusion: per-kernel splits and "
        "merges of XLA's fusion) on this machine, and write "
        "OUT/NAME.npz (TpuGraphs format, with every sample) and OUT/NAME.json (noise floor, "
        "failures, machine). Re-running the same command resumes where it stopped.",
    )
    collect.add_argument("--space", choices=("flags", "layout", "fusion"), required=True,
                         help="fusion collects the opt fuse policy's dataset: the decisions "
                         "tune --space fusion searches, measured. The tile collection (kernels) "
                         "is built by hlotune rebuild dataset --tile")
    collect.add_argument("--program", nargs="+", required=True, metavar="SPEC",
                         help="zoo:NAME[@VARIANT] or path/to/file.py:FACTORY")
    collect.add_argument("--configs", type=int, default=64, help="configs per program (default 64)")
    collect.add_argument("--samples", type=int, default=30, help="samples per config (default 30)")
    collect.add_argument("--seed", type=int, default=0)
    collect.add_argument("--search", choices=("random", "default"), default="random",
                         help="layout and fusion sampler: uniform (random) or around the default (default)")
    collect.add_argument("--batch", type=int, default=8, help="configs measured together")
    collect.add_argument("--noise-target", type=float, metavar="F",
                         help="take more rounds until each config's median is known within F "
                         "(95%% confidence interval, relative), up to 100 rounds or 10 minutes a "
                         "batch; the summary says which configs reached it")
    collect.add_argument("--out", type=Path, required=True, metavar="DIR")
    collect.add_argument("--json", action="store_true", help="print one JSON object per program")
    add_quiet(collect)
    collect.set_defaults(run=_collect)


def _collect(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from hlotune.collect.collector import CollectSettings, collect

    settings = CollectSettings(
        space=args.space, configs=args.configs, samples=args.samples, seed=args.seed,
        search=args.search, batch=args.batch, noise_target=args.noise_target,
    )
    for spec in args.program:
        result = collect(spec, settings, args.out, progress=not args.quiet)
        if args.json:
            print(json.dumps(asdict(result)), flush=True)
        else:
            print(
                f"{result.program}: {result.configs} configs ({result.failed} failed) in "
                f"{result.seconds:.1f} s, noise floor {result.noise_floor:.1%}, "
                f"spread {result.spread:.2f}x -> {result.path}"
                + (" (resumed)" if result.resumed else ""),
                flush=True,
            )
    return 0
