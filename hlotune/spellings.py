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


def become(command: list[str], drop: tuple[str, ...] = ()) -> NoReturn:
    """This process becomes `hlotune COMMAND ARGS` (ARGS: this process's, less a first one in
    `drop`), with the command's exit codes and error messages: a stage module may not import
    the CLI."""
    argv = sys.argv[1:]
    if argv[:1] and argv[0] in drop:
        argv = argv[1:]
    os.execv(sys.executable, [sys.executable, "-m", "hlotune.cli", *command, *argv])


def python_m(module: str, command: list[str], drop: tuple[str, ...] = ()) -> NoReturn:
    """`python -m MODULE ARGS`, a tool that is now `hlotune COMMAND ARGS`: the note, then that
    (`drop`: a first ARG of the old spelling that the command no longer takes)."""
    moved(f"python -m {module}", " ".join(["hlotune", *command]))
    become(command, drop)
