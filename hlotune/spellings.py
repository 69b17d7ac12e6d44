"""Other spellings of `hlotune` commands: `python -m` entry points that become the command, and
old spellings that still run for one release after a one-line note on stderr."""

from __future__ import annotations

import os
import sys
from typing import NoReturn


def moved(old: str, new: str) -> None:
    """The note an old spelling prints before it runs; stdout stays the command's alone."""
    print(f"hlotune: note: '{old}' is now '{new}'; the old spelling goes in the next release",
          file=sys.stderr, flush=True)


def become(command: list[str]) -> NoReturn:
    """This process becomes `hlotune COMMAND ARGS` (ARGS: this process's), with the command's
    exit codes and error messages: a stage module may not import the CLI."""
    os.execv(sys.executable, [sys.executable, "-m", "hlotune.cli", *command, *sys.argv[1:]])


def python_m(module: str, command: list[str]) -> NoReturn:
    """`python -m MODULE ARGS`, a tool that is now `hlotune COMMAND ARGS`: the note, then that."""
    moved(f"python -m {module}", " ".join(["hlotune", *command]))
    become(command)
