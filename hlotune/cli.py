"""The `hlotune` command: one entry point, one subcommand per stage of the pipeline."""

from __future__ import annotations

import argparse
import os
import sys

import hlotune.maintainer as maintainer  # this spelling: tests/test_imports.py sees the import
from hlotune import __version__
from hlotune.collect import commands as collect
from hlotune.compiler.profiles import commands as compiler
from hlotune.data import commands as data
from hlotune.errors import HlotuneError
from hlotune.evaluation import commands as evaluation
from hlotune.fleet import commands as fleet
from hlotune.hlo import commands as hlo
from hlotune.opt import commands as opt
from hlotune.programs import commands as programs
from hlotune.report import commands as report
from hlotune.train import commands as train
from hlotune.tuning import commands as tuning

# Each stage registers its own commands; this order is `hlotune --help`'s.
STAGES = (hlo, data, collect, train, evaluation, programs, opt, compiler, tuning, fleet, report,
          maintainer)

EPILOG = """\
conventions:
  --json      stdout holds JSON and nothing else: one object per line where a command
              reports several items (files, modules, programs), else one object
  --quiet     no progress bars or progress messages on stderr (bars are drawn only
              on a terminal: never into logs or pipes)

exit codes:
  0    success
  1    bad input: a missing or invalid file, option value or name, a missing extra
  2    usage: unknown command or option (argparse)
  3    internal error (set HLOTUNE_DEBUG=1 for the traceback)
  130  interrupted (Ctrl-C)
"""


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except HlotuneError as error:
        print(f"hlotune: error: {error}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `hlotune inspect ... | head`: the reader left, nothing to report
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("hlotune: interrupted", file=sys.stderr)
        return 130
    except Exception as error:  # a bug, not bad input: still one line unless debugging
        if os.environ.get("HLOTUNE_DEBUG"):
            raise
        print(
            f"hlotune: internal error: {type(error).__name__}: {error} "
            "(set HLOTUNE_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return 3


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hlotune",
        description="ML for ML compilers: TpuGraphs-compatible graphs of XLA programs,\n"
        "learned cost models and autotuning.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"hlotune {__version__}")
    commands = parser.add_subparsers(title="commands", required=True, metavar="COMMAND")
    for stage in STAGES:
        stage.add_commands(commands)
    return parser


if __name__ == "__main__":
    sys.exit(main())
