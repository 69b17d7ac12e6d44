"""What the scripts in benchmarks/ share: their arguments, result files, tables, figures and
repeated runs, so each script holds only what it measures.

Scripts import it as `harness` (Python puts a script's folder first on sys.path) and hlotune as
the installed package. Results are written atomically (hlotune.atomic): a run stopped while
writing leaves the previous file whole. `RowLog` saves rows as they finish, so a run of hours
that stops resumes with what it finished.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hlotune.atomic import write_atomic

# Arguments several scripts take, spelled and typed alike in every one.
COMMON = {
    "out": dict(type=Path, help="write the results here"),
    "plot": dict(type=Path, help="draw the figure here"),
    "json": dict(action="store_true", help="print the results as JSON last"),
    "seed": dict(type=int, help="seed of every random choice (default: %(default)s)"),
    "programs": dict(nargs="+", help="program specs (default: %(default)s)"),
    "repeats": dict(type=int, help="runs of each measurement, the median shown (default: %(default)s)"),
}


def parser(doc: str, **common: Any) -> argparse.ArgumentParser:
    """The script's parser, described by its docstring's first paragraph, with `common`."""
    made = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    add_common(made, **common)
    return made


def add_common(parser: argparse.ArgumentParser, **common: Any) -> None:
    """The COMMON arguments named as keywords, each keyword's value its default."""
    for name, default in common.items():
        parser.add_argument(f"--{name}", default=default, **COMMON[name])


def text_list(text: str) -> list[str]:
    """A comma-separated argument (`a,b`); empty items dropped, so "" is the empty list."""
    return [item.strip() for item in text.split(",") if item.strip()]


def int_list(text: str) -> list[int]:
    return [int(item) for item in text_list(text)]


# Result files


def write_text(path: Path, text: str) -> None:
    write_atomic(path, lambda stream: stream.write(text.encode()))


def write_json(path: Path, data: Any, end: str = "") -> None:
    write_text(path, json.dumps(data, indent=1) + end)


def write_rows(path: Path, rows: Sequence[dict], lines: bool = False) -> None:
    """`rows` as one JSON list, or with `lines` as JSON lines (a row a line)."""
    write_text(path, "".join(json.dumps(row) + "\n" for row in rows) if lines
               else json.dumps(list(rows), indent=1))


def read_rows(path: Path, lines: bool = False) -> list[dict]:
    """A results file's rows; a missing or corrupt file exits in one line naming it."""
    try:
        text = path.read_text()
        return [json.loads(line) for line in text.splitlines() if line.strip()] if lines else json.loads(text)
    except (OSError, ValueError) as error:
        raise SystemExit(f"{path}: not a readable results file ({type(error).__name__}: {error})") from None


class RowLog:
    """Result rows in a file rewritten after each addition: a run that stops resumes with the
    rows it finished (`done` says which), and the file is never half a row."""

    def __init__(self, path: Path, lines: bool = False) -> None:
        self.path, self.lines = path, lines
        self.rows = read_rows(path, lines) if path.exists() else []

    def add(self, *rows: dict) -> None:
        self.rows += rows
        write_rows(self.path, self.rows, self.lines)

    def replace(self, old: dict, new: dict) -> None:
        """`new` in `old`'s place: a run that grew (a fleet given more programs)."""
        self.rows[self.rows.index(old)] = new
        write_rows(self.path, self.rows, self.lines)

    def done(self, key: str) -> set:
        """The values of `key` over the rows so far: what a resumed run skips."""
        return {row[key] for row in self.rows}

    def todo(self, key: str, values: Iterable) -> list:
        """`values` that no row has as its `key` yet: what a resumed run still measures."""
        done = self.done(key)
        return [value for value in values if value not in done]


# Tables: `align` has a letter a column, "l" or "r"; left throughout where it is None. Markdown
# tables are left unpadded, as docs/ holds them; an empty cell prints as `| |`.


def markdown_row(cells: Iterable[str]) -> str:
    return "|" + "|".join(f" {cell} " if cell else " " for cell in cells) + "|"


def markdown_header(header: Sequence[str], align: str | None = None) -> str:
    """The header row and the separator under it, for a table printed a row at a time."""
    rule = "".join("---:|" if a == "r" else "---|" for a in _aligned(header, align))
    return markdown_row(header) + "\n|" + rule


def markdown(header: Sequence[str], rows: Iterable[Sequence[str]], align: str | None = None) -> str:
    lines = [markdown_header(header, align)]
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"{len(row)} cells under {len(header)} columns: {row}")
        lines.append(markdown_row(row))
    return "\n".join(lines)


def text_table(header: Sequence[str], rows: Iterable[Sequence[str]], align: str | None = None,
               rule: bool = True) -> str:
    """Columns padded to their widest cell, two spaces apart, with a rule under the header
    unless `rule` is False."""
    table, aligned = [list(header), *map(list, rows)], _aligned(header, align)
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = ["  ".join(cell.rjust(width) if a == "r" else cell.ljust(width)
                       for cell, width, a in zip(row, widths, aligned, strict=True)).rstrip()
             for row in table]
    return "\n".join([lines[0], *(["-" * len(lines[0])] if rule else []), *lines[1:]])


def _aligned(header: Sequence[str], align: str | None) -> str:
    if align is not None and len(align) != len(header):
        raise ValueError(f"align {align!r} for {len(header)} columns")
    return align or "l" * len(header)


# Figures


def subplots(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """matplotlib's `subplots`, drawing off-screen (Agg): benchmarks run without a display, and
    matplotlib loads only in a script that draws."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    return pyplot.subplots(*args, **kwargs)


def save_figure(figure: Any, path: Path, dpi: int = 110) -> None:
    """Laid out tight, written atomically (its folder made) in the format `path`'s suffix names,
    then closed: a script drawing several figures keeps none in memory."""
    from matplotlib import pyplot

    figure.tight_layout()
    write_atomic(path, lambda stream: figure.savefig(stream, dpi=dpi, format=path.suffix[1:] or None))
    pyplot.close(figure)


# Repeated runs


@dataclass(frozen=True)
class Spread:
    """Runs of one measurement: a table shows their median (or mean) with their range beside
    it, so one slow or lucky run decides nothing and the reader sees how far runs differ."""

    values: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def mean(self) -> float:
        return sum(self.values) / len(self.values)

    def range(self, spec: str = ".2f") -> str:
        """`lowest-highest`, each formatted with `spec`."""
        return f"{min(self.values):{spec}}-{max(self.values):{spec}}"


def timed(repeats: int, run: Callable[[], Any]) -> tuple[Spread, Any]:
    """The seconds of `repeats` calls of `run` (one at least), and the last call's value."""
    seconds = []
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        value = run()
        seconds.append(time.perf_counter() - start)
    return Spread(tuple(seconds)), value
