"""Progress, one rule for every command: bars go to stderr and only when it is a terminal (never
into CI logs, files or pipes), progress messages go to stderr too, and `--quiet` silences both,
so that stdout holds results alone (JSON alone with --json)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable

from tqdm import tqdm


def progress_bar(iterable: Iterable | None = None, *, show: bool = True, **options) -> tqdm:
    """A tqdm bar; its disable=None is tqdm's own test for a terminal on stderr."""
    return tqdm(iterable, disable=None if show else True, **options)


def note(message: str, *, show: bool = True) -> None:
    """A progress message on stderr, for long runs that report more than a bar can."""
    if show:
        print(message, file=sys.stderr, flush=True)


def add_quiet(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress bars or progress messages (stderr)")
