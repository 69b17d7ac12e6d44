"""Help generated from registries: one line per choice, what it is beside its name, so that
`--help` lists every choice the code takes, and only those."""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Mapping


class ChoicesFormatter(argparse.HelpFormatter):
    """argparse's help, except that a help's lines after its first stay lines: each choice on
    its own, wrapped hanging two spaces in."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        first, *choices = text.split("\n")
        return super()._split_lines(first, width) + [
            wrapped for line in choices
            for wrapped in textwrap.wrap(line, width, subsequent_indent="  ", break_on_hyphens=False)]


def choices_help(lead: str, choices: Mapping[str, str], default: str | None = None) -> str:
    """`lead`, then a line per choice (`NAME: what it is`, the default's marked), for a parser
    formatted by ChoicesFormatter."""
    lines = [f"{name}: {what}" + (" (default)" if name == default else "") for name, what in choices.items()]
    return "\n".join([lead, *(line.replace("%", "%%") for line in lines)])
