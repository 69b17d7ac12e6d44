"""`hlotune featurize` and `hlotune inspect`: a program or HLO file as TpuGraphs arrays, and
what TpuGraphs files hold.

Both print inspection.py's summary of each module or file. Heavy modules (jax) load inside the
handlers so that `hlotune --help` stays fast.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hlotune.errors import HlotuneError
from hlotune.progress import add_quiet

DEFAULT_PROGRAM = "zoo:transformer@tiny-train"


def add_commands(commands) -> None:
    """Register `featurize` and `inspect` on the main parser's subparsers."""
    _add_featurize(commands)
    _add_inspect(commands)


def _add_featurize(commands) -> None:
    featurize = commands.add_parser(
        "featurize",
        help="turn a program, HLO text or .pb into TpuGraphs arrays",
        description="Featurize SRC into TpuGraphs arrays (node_feat 140, node_opcode, "
        "edge_index, node_splits; plus the configs of a raw TpuGraphs record) and print a "
        "summary. SRC: zoo:NAME[@VARIANT], path/to/file.py:FACTORY, an HLO text file, or a .pb "
        "(HloModuleProto or raw TpuGraphs record).",
    )
    featurize.add_argument("source", nargs="?", default=DEFAULT_PROGRAM, metavar="SRC",
                           help=f"what to featurize (default: {DEFAULT_PROGRAM})")
    featurize.add_argument("-o", "--output", type=Path,
                           help="write OUT.npz (a folder when SRC holds several modules)")
    featurize.add_argument("--optimized", action="store_true",
                           help="featurize the module after XLA:CPU's optimisation passes")
    featurize.add_argument("--extended", action="store_true",
                           help="append the extended features (docs/features.md)")
    featurize.add_argument("--json", action="store_true", help="print one JSON object per module")
    add_quiet(featurize)
    featurize.set_defaults(run=_featurize)


def _add_inspect(commands) -> None:
    inspect = commands.add_parser(
        "inspect",
        help="describe and validate TpuGraphs files",
        description="Describe every TpuGraphs file at PATH (a file or a dataset folder): nodes, "
        "edges, configs, configurable nodes, opcode histogram, runtime statistics and the "
        "validation result. Exit code 0 only if every file is valid.",
    )
    inspect.add_argument("path", metavar="PATH", help="a file, a folder or builtin:flags|layout[/SPLIT]")
    inspect.add_argument("--json", action="store_true", help="print one JSON object per file")
    inspect.set_defaults(run=_inspect)


def _featurize(args: argparse.Namespace) -> int:
    from hlotune.data.npz import write_sample
    from hlotune.hlo.inspection import describe, format_inspection
    from hlotune.hlo.sources import featurize_source

    samples = featurize_source(args.source, optimized=args.optimized, extended=args.extended,
                               progress=not args.quiet)
    targets = _output_paths(args.output, samples)
    for sample, target in zip(samples, targets):
        if target is not None:
            write_sample(target, sample)
        info = describe(sample, str(target or sample.name), [])
        print(json.dumps(info.to_json()) if args.json else format_inspection(info))
    return 0


def _output_paths(output: Path | None, samples) -> list[Path | None]:
    if output is None:
        return [None] * len(samples)
    if len(samples) == 1:
        return [output if output.suffix == ".npz" else output / f"{samples[0].name}.npz"]
    if output.suffix == ".npz":
        raise HlotuneError(
            f"SRC holds {len(samples)} modules: give -o a folder, not the file {output}"
        )
    return [output / f"{sample.name}.npz" for sample in samples]


def _inspect(args: argparse.Namespace) -> int:
    from hlotune.hlo.inspection import format_inspection, inspect

    all_valid = True
    for info in inspect(args.path):
        all_valid &= info.valid
        print(json.dumps(info.to_json()) if args.json else format_inspection(info), flush=True)
    return 0 if all_valid else 1
