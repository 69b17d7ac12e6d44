"""Kaggle "Google - Fast or Slow? Predict AI Model Runtime" submission files.

A submission is a CSV with header `ID,TopConfigs`, one row per test graph. ID names the graph:
`tile:xla:<graph>` or `layout:<source>:<search>:<graph>` (e.g. `layout:nlp:default:<graph>`).
TopConfigs lists config indices separated by `;`, predicted fastest first: the top 5 for tile,
the full ranking for layout.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import TextIO

import numpy as np

from hlotune.errors import HlotuneError

HEADER = ("ID", "TopConfigs")

# Kaggle scores tile graphs on the best of the 5 configs submitted first.
TILE_TOP = 5


def submission_id(collection: str, source: str, search: str | None, graph_name: str) -> str:
    """The row ID of a graph; search ("default"/"random") is for layout only, None for tile."""
    if collection == "tile" and search is None:
        return f"tile:{source}:{graph_name}"
    if collection == "layout" and search is not None:
        return f"layout:{source}:{search}:{graph_name}"
    raise ValueError(
        f"no Kaggle ID for collection {collection!r} with search {search!r}: "
        "tile takes no search, layout needs one"
    )


def top_configs(scores: np.ndarray, collection: str) -> list[int]:
    """Config indices by ascending score (predicted fastest first); tile keeps the first 5.

    Among equal scores the lower index comes first, so a submission is reproducible.
    """
    if collection not in ("tile", "layout"):
        raise ValueError(f"Kaggle has no collection {collection!r}, only tile and layout")
    order = np.argsort(np.asarray(scores), kind="stable")
    if collection == "tile":
        order = order[:TILE_TOP]
    return order.tolist()


def write_submission(path: str | Path, rows: dict[str, list[int]]) -> None:
    """Writes rows (ID -> config indices, best first) in the given order."""
    empty = [row_id for row_id, configs in rows.items() if not configs]
    if empty:
        raise ValueError(f"rows without configs: {empty[:3]}")
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(HEADER)
        for row_id, configs in rows.items():
            writer.writerow((row_id, ";".join(str(int(c)) for c in configs)))


def read_submission(path: str | Path) -> dict[str, list[int]]:
    """Reads a submission back (ID -> config indices, best first), checking its format.

    Raises HlotuneError naming the file and line for a missing file, a missing header, a row
    without exactly two fields, a repeated ID, or configs that are not distinct integers >= 0.
    Blank lines are skipped.
    """
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:  # -sig: tolerate a BOM
            return _parse(path, f)
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise HlotuneError(f"{path}: cannot read submission: {err}") from None


def _parse(path: str | Path, f: TextIO) -> dict[str, list[int]]:
    """The rows of an open submission (see read_submission)."""
    reader = csv.reader(f)
    header = next(reader, None)
    if header is None or tuple(header) != HEADER:
        raise HlotuneError(f"{path}:1: expected the header {','.join(HEADER)}, got {header}")
    rows: dict[str, list[int]] = {}
    for fields in reader:
        where = f"{path}:{reader.line_num}"
        if not fields:
            continue
        if len(fields) != 2:
            raise HlotuneError(f"{where}: expected 2 fields (ID,TopConfigs), got {len(fields)}")
        row_id, text = fields
        if row_id in rows:
            raise HlotuneError(f"{where}: duplicate ID {row_id!r}")
        configs = []
        for item in text.split(";"):
            try:
                configs.append(int(item))
            except ValueError:
                raise HlotuneError(f"{where}: config index {item!r} is not an integer") from None
        if min(configs) < 0 or len(set(configs)) != len(configs):
            raise HlotuneError(f"{where}: TopConfigs of {row_id!r} must be distinct indices >= 0")
        rows[row_id] = configs
    return rows
