"""What the gain model learns from: one row per program, its cheap look (program_features.py) and
what tuning its flags gained, log(default runtime / best runtime) over the configs measured.

Two sources, one meaning:

- the shipped flags collection: 151 programs of 43 families, about 48 configs each beside the
  default (row 0 of each file, as the collector writes it);
- a tuning database's own tuned programs, recorded by `hlotune.jit`: the best config a tune
  measured, relative to its batch's default (`Record.cost`), so that a fleet learns from what it
  has tuned; once the field has trialled the decision in enough processes, the field's median
  speedup (tuning/storage/field.py) in its place.

Only configs that keep the program's results count (no fast math): those are what a fleet tune
searches and keeps. The collection's rows are cached in ~/.cache/hlotune/gain_model/, keyed by
its edition (the datasets manifest's hash) and the feature names: reading and featurizing its 151
graphs takes seconds, fitting the model on them a tenth of one.
"""

from __future__ import annotations

import hashlib
import io
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hlotune.atomic import write_atomic
from hlotune.data.builtin import resolve
from hlotune.data.dataset import Dataset
from hlotune.data.sample import FlagConfigArrays
from hlotune.data.store import Store
from hlotune.fleet import program_features as program_features_module
from hlotune.fleet.program_features import FEATURE_NAMES, program_features, program_graph
from hlotune.hlo import flops
from hlotune.tuning.storage import Record, Recording, TuningDatabase
from hlotune.tuning.storage.field import RETIRE_AFTER

COLLECTION = "builtin:flags"
# A fleet program's row needs a tune past the probe: the best of a few configs understates what
# tuning gains, and the collection's labels are the best of about 48.
MIN_CONFIGS = 16


@dataclass(frozen=True)
class GainRows:
    """Programs as features (n, len(FEATURE_NAMES)) and log gains (n,), with their names and
    families (what leave-family-out holds out together)."""

    features: np.ndarray
    gains: np.ndarray
    names: tuple[str, ...]
    families: tuple[str, ...]

    def __add__(self, other: GainRows) -> GainRows:
        return GainRows(np.concatenate((self.features, other.features)), np.concatenate((self.gains, other.gains)),
                        self.names + other.names, self.families + other.families)

    def where(self, keep: np.ndarray) -> GainRows:
        """The rows where `keep` (booleans, one per row) holds."""
        picked = np.flatnonzero(keep)
        return GainRows(self.features[picked], self.gains[picked], tuple(self.names[i] for i in picked),
                        tuple(self.families[i] for i in picked))


def collection_rows() -> GainRows:
    """The shipped flags collection's programs, from the cache where it holds them."""
    path = _cache_path()
    if path.is_file():
        with np.load(path, allow_pickle=False) as cached:
            return GainRows(cached["features"], cached["gains"], tuple(map(str, cached["names"])),
                            tuple(map(str, cached["families"])))
    rows = read_collection(COLLECTION)
    arrays = {"features": rows.features, "gains": rows.gains, "names": np.array(rows.names),
              "families": np.array(rows.families)}
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    write_atomic(path, lambda out: out.write(buffer.getvalue()))
    return rows


def read_collection(data: str) -> GainRows:
    """A flags collection's programs (`builtin:flags` or a folder of its npz files); a program's
    family is its file name before '@'."""
    dataset = Dataset(resolve(data))
    features, gains, names = [], [], []
    for path, sample in zip(dataset.paths, dataset):
        features.append(program_features(sample.graph))
        gains.append(best_gain(sample.configs))
        names.append(path.stem)
    return GainRows(np.array(features), np.array(gains), tuple(names), tuple(n.partition("@")[0] for n in names))


def best_gain(configs: FlagConfigArrays) -> float:
    """log(default / fastest) over the configs that keep results; the default is row 0."""
    numerics = configs.config_feat_numerics.astype(bool)
    feat = configs.config_feat
    safe = ~np.any(feat[:, numerics] != feat[0, numerics], axis=1)
    runtimes = configs.config_runtime[safe]
    return math.log(runtimes[0] / runtimes.min())


def fleet_rows(location: str) -> GainRows:
    """The database's tuned recorded programs, each its own family."""
    features, gains, names = [], [], []
    with TuningDatabase(location) as db:
        for recording in db.recordings():
            gain = _tuned_gain(db, recording)
            if gain is not None:
                features.append(recorded_features(db, recording))
                gains.append(gain)
                names.append(recording.name)
    return GainRows(np.array(features).reshape(-1, len(FEATURE_NAMES)), np.array(gains), tuple(names),
                    tuple(f"fleet:{name}" for name in names))


_FEATURES: dict[str, np.ndarray] = {}  # by fingerprint: a lowering each, once a process


def recorded_features(db: TuningDatabase, recording: Recording) -> np.ndarray:
    """The recorded program's cheap look (program_features.py), lowered once in a process: a
    fleet tune's allocation refits the gain model after each full tune."""
    from hlotune.fleet.recorded import recorded_spec
    from hlotune.programs import load_program

    if recording.fingerprint not in _FEATURES:
        program = load_program(recorded_spec(db, recording), abstract=True)
        _FEATURES[recording.fingerprint] = program_features(program_graph(program))
    return _FEATURES[recording.fingerprint]


def _tuned_gain(db: TuningDatabase, recording: Recording) -> float | None:
    """log(1 / the best cost) of a recorded program tuned past MIN_CONFIGS (None: not yet); where
    the field has trialled its decision in RETIRE_AFTER processes or more, log of the field's
    median speedup: what the decision delivered where it ran, not the search's best reading."""
    decision = db.decision(recording.fingerprint) if recording.tunable else None
    if decision is None:
        return None
    costs = [r.cost for r in db.records(recording.fingerprint) if _keeps_results(r)]
    if len(costs) < MIN_CONFIGS:
        return None
    field = db.field(recording.fingerprint, decision.chosen.key)
    if len(field.finished) >= RETIRE_AFTER:
        return max(0.0, math.log(field.median))
    return max(0.0, -math.log(min(costs)))


def _keeps_results(record: Record) -> bool:
    return record.ok and not record.config.flags.changes_numerics


def _cache_path() -> Path:
    # The features' code is in the key: a change to how they are counted reads the collection again.
    code = b"".join(Path(module.__file__).read_bytes() for module in (program_features_module, flops))
    key = hashlib.sha256(f"{Store.find().edition} {' '.join(FEATURE_NAMES)}".encode() + code).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "hlotune" / "gain_model" / f"flags-{key}.npz"
