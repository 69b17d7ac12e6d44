"""hlotune's collections as the public TpuGraphs files: the official arrays only, in the
official folder layout, for tools written against the published dataset."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hlotune.atomic import write_atomic
from hlotune.data.dataset import Dataset
from hlotune.data.npz import peek
from hlotune.data.schema import TPUGRAPHS_FEATURES, TPUGRAPHS_FOLDERS, TPUGRAPHS_KEYS
from hlotune.errors import HlotuneError


def export_tpugraphs(dataset: Dataset, out: Path, split: str) -> list[Path]:
    """Write each graph of `dataset` (a tile or layout collection) as
    `out/npz/{tile/xla|layout/xla/random}/SPLIT/NAME.npz`; hlotune's own arrays (every runtime
    sample, rooflines) and extended node features stay behind. Returns the files written."""
    collection = dataset.collection
    if collection not in TPUGRAPHS_KEYS:
        raise HlotuneError(f"{dataset.root}: {collection} graphs have no TpuGraphs counterpart "
                           f"(the public collections are {' and '.join(TPUGRAPHS_KEYS)})")
    folder = out / TPUGRAPHS_FOLDERS[collection] / split
    folder.mkdir(parents=True, exist_ok=True)
    keys = TPUGRAPHS_KEYS[collection]
    written = []
    for path in dataset.paths:
        present = peek(path)
        missing = [key for key in keys if key not in present]
        if missing:
            raise HlotuneError(f"{path}: no {', '.join(missing)}, which the TpuGraphs files hold")
        with np.load(path, allow_pickle=False) as arrays:
            official = {key: arrays[key] for key in keys}
        official["node_feat"] = official["node_feat"][:, :TPUGRAPHS_FEATURES]
        target = folder / path.name
        write_atomic(target, lambda stream, arrays=official: np.savez_compressed(stream, **arrays))
        written.append(target)
    return written
