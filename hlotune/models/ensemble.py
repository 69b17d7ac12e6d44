"""A seed ensemble: several trained models of one collection that score together.

Models trained alike from other seeds err in different places, so their average ranks better
than any one (the Kaggle winners averaged 5-20 per collection). An ensemble folder holds its
members' model folders and `ensemble.json` naming them; it is used wherever a model folder is
(`hlotune eval --model DIR`, `pretrained:*`, tuning). Members' scores are in units of their own
(a ranking loss fixes no scale), so each is standardised per graph before they are averaged.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hlotune.atomic import write_bytes_atomic
from hlotune.errors import HlotuneError
from hlotune.models import files
from hlotune.models.files import CONFIG_FILE, model_folder, read_document

ENSEMBLE_FILE = "ensemble.json"
FORMAT = "hlotune-ensemble"
VERSION = 1


def is_ensemble(folder: Path) -> bool:
    return (folder / ENSEMBLE_FILE).is_file()


def write_ensemble(out: str | os.PathLike[str], members: Sequence[str | os.PathLike[str]]) -> Path:
    """Copy the model folders `members` into `out/member-I` and name them in `ensemble.json`."""
    out = Path(out)
    if len(members) < 2:
        raise HlotuneError("an ensemble needs at least two models")
    collections = {_collection(Path(member)) for member in members}
    if len(collections) > 1:
        raise HlotuneError(f"ensemble members rank other collections: {', '.join(sorted(collections))}")
    names = [f"member-{index}" for index in range(len(members))]
    for name, member in zip(names, members):
        shutil.copytree(member, out / name, dirs_exist_ok=True)
    document = {"format": FORMAT, "version": VERSION, "members": names}
    write_bytes_atomic(out / ENSEMBLE_FILE, (json.dumps(document, indent=2) + "\n").encode())
    return out


def _collection(member: Path) -> str:
    if not (member / CONFIG_FILE).is_file():
        raise HlotuneError(f"{member}: not a model folder (no {CONFIG_FILE})")
    model = read_document(member / CONFIG_FILE, files.FORMAT, files.VERSION, "model config").get("model")
    if not isinstance(model, dict):
        raise HlotuneError(f"{member / CONFIG_FILE}: no model config in it")
    return str(model.get("collection"))


def member_folders(path: str | os.PathLike[str]) -> list[Path]:
    """The model folders a path names: a model folder, `hlotune train`'s output folder, or an
    ensemble's members."""
    folder = model_folder(path)
    return ensemble_members(folder) if is_ensemble(folder) else [folder]


def ensemble_members(folder: Path) -> list[Path]:
    """The member folders an ensemble folder names, each checked to exist."""
    members = read_document(folder / ENSEMBLE_FILE, FORMAT, VERSION, "ensemble").get("members")
    if not isinstance(members, list) or not members or not all(isinstance(m, str) for m in members):
        raise HlotuneError(f"{folder / ENSEMBLE_FILE}: 'members' must be a list of folder names")
    paths = [folder / member for member in members]
    missing = [str(p) for p in paths if not p.is_dir()]
    if missing:
        raise HlotuneError(f"{folder / ENSEMBLE_FILE}: member folder missing: {missing[0]}")
    return paths


def average_standardised(scores: Sequence[np.ndarray]) -> np.ndarray:
    """The mean of each member's scores standardised over the graph's configs."""
    stacked = np.asarray(scores, dtype=np.float64)
    spread = stacked.std(axis=1, keepdims=True)
    standardised = (stacked - stacked.mean(axis=1, keepdims=True)) / np.where(spread > 0, spread, 1.0)
    return standardised.mean(axis=0).astype(np.float32)
