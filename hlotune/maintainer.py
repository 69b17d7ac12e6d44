"""Commands for hlotune's maintainers, not its users: `hlotune rebuild TOOL` regenerates what
ships built in, and `hlotune bench scale`, moved to benchmarks/scale_bench.py, runs for one
more release unlisted.

Each tool's module parses its own arguments (everything after the tool's name, --help too) and
is imported only when run, so that `hlotune --help` stays fast.
"""

from __future__ import annotations

import argparse
from importlib import import_module

from hlotune.spellings import moved

# name: (what it rebuilds, the module whose main(argv) does it)
TOOLS = {
    "dataset": ("collect the built-in dataset (flags and layout, or --tile), resumable",
                "hlotune.collect.builtin"),
    "kernel-labels": ("profile the built-in programs' configs kernel by kernel, resumable",
                      "hlotune.kernels.label_collection"),
    "kernel-model": ("train the kernel program model (pretrained:kernels) on the kernel labels",
                     "hlotune.kernels.training"),
    "portfolio": ("build the tuning portfolio", "hlotune.tuning.portfolio"),
}


class ToolParser(argparse.ArgumentParser):
    """A tool's subcommand: its arguments pass through unparsed, as `args.argv`."""

    def parse_known_args(self, args=None, namespace=None):
        namespace, _ = super().parse_known_args([], namespace)  # the defaults: run, module
        namespace.argv = list(args)
        return namespace, []


def add_commands(commands) -> None:
    """Register `rebuild` and the unlisted `bench` on the main parser's subparsers."""
    rebuild = commands.add_parser(
        "rebuild", help="regenerate what hlotune ships built in (maintainers)",
        description="Regenerate what hlotune ships: each tool takes its own options "
        "(hlotune rebuild TOOL --help). Run with the machine otherwise quiet.",
    )
    tools = rebuild.add_subparsers(title="tools", required=True, metavar="TOOL",
                                   parser_class=ToolParser)
    for name, (what, module) in TOOLS.items():
        tools.add_parser(name, help=what, add_help=False).set_defaults(run=_rebuild, module=module)
    bench = commands.add_parser("bench")  # no help: unlisted
    benchmarks = bench.add_subparsers(required=True, metavar="BENCH", parser_class=ToolParser)
    benchmarks.add_parser("scale", add_help=False).set_defaults(run=_bench_scale)


def _rebuild(args: argparse.Namespace) -> int:
    return import_module(args.module).main(args.argv)


def _bench_scale(args: argparse.Namespace) -> int:
    """The old spelling of `python benchmarks/scale_bench.py one`: the same run."""
    from hlotune.train import scaling

    moved("bench scale", "python benchmarks/scale_bench.py one")
    return scaling.main(args.argv, prog="hlotune bench scale")
