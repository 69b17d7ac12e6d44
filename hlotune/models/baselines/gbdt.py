"""The GBDT baseline: gradient-boosted trees on graph summaries and configs, as in TenSet.

Each row is one config of one graph (`features.py`); its target is the config's log runtime
minus the median log runtime of its graph (tile: of the runtime normalised by the default
tile), so graphs of any size share one scale and the trees learn how a config moves runtime,
which is all a ranking needs. `objective="lambdarank"` (`baseline:gbdt-rank`) learns the order
within each graph directly instead (LambdaRank over per-graph groups, as the 11th-place Kaggle
"Fast or Slow" solution did): the strong baseline a learned cost model must beat.

A model is trained when first asked for and kept in the user's cache,
`~/.cache/hlotune/gbdt/<collection>-<key>/`, keyed by the training files (paths, sizes and
modification times: hashing the contents of a 30 GB split would cost more than loading the
model saves) and by what else decides the model (feature version, parameters). A model folder
holds `model.txt`, LightGBM's text format, and `features.json`, the feature names: no pickle.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

from hlotune.data.dataset import Dataset
from hlotune.data.collections import LEARNED
from hlotune.data.sample import GraphSample
from hlotune.errors import HlotuneError
from hlotune.extras import require
from hlotune.data.metrics import target_runtimes
from hlotune.models.baselines.features import feature_matrix, feature_names, flag_names_of
from hlotune.atomic import write_bytes_atomic
from hlotune.models.files import read_json

MODEL_FILE, FEATURES_FILE = "model.txt", "features.json"
FORMAT, VERSION = "hlotune-gbdt", 1
ROUNDS = 300
OBJECTIVES = ("regression", "lambdarank")
RELEVANCE_LEVELS = 31  # LightGBM's default label_gain covers grades 0..30
# One thread makes training deterministic; the built-in splits are a few thousand rows.
PARAMS = {
    "objective": "regression",
    "learning_rate": 0.05,
    "num_leaves": 31,
    "min_data_in_leaf": 20,
    "feature_fraction": 0.8,
    "num_threads": 1,
    "deterministic": True,
    "seed": 0,
    "verbosity": -1,
}


class GbdtBaseline:
    """A LightGBM booster and the feature layout it was trained on."""

    def __init__(self, booster, collection: str, flag_names: tuple[str, ...] = (),
                 objective: str = "regression") -> None:
        self.booster = booster
        self.collection = collection
        self.flag_names = flag_names
        self.objective = objective

    @classmethod
    def fit(cls, train: Dataset, *, rounds: int = ROUNDS, objective: str = "regression") -> GbdtBaseline:
        """Train on the labelled graphs of `train`, which must all be of one collection."""
        if objective not in OBJECTIVES:
            raise HlotuneError(f"unknown GBDT objective {objective!r}: use {' or '.join(OBJECTIVES)}")
        lightgbm = load_lightgbm()
        collection = _collection(train)
        flag_names = flag_names_of(train[0])  # the first file's; the others are read by name
        rows, targets = [], []
        for sample in train:
            if not sample.labelled:
                continue
            if sample.collection != collection:
                raise HlotuneError(
                    f"{sample.source}: a {sample.collection} graph among {collection} graphs"
                )
            runtimes = target_runtimes(sample)
            measured = runtimes > 0
            log_runtimes = np.log(runtimes[measured])
            rows.append(feature_matrix(sample, flag_names)[measured])
            targets.append(log_runtimes - np.median(log_runtimes))
        if not rows:
            raise HlotuneError(f"{train.root}: no labelled graphs to train on")
        ranking = objective == "lambdarank"
        data = lightgbm.Dataset(
            np.concatenate(rows),
            np.concatenate([relevance_grades(t) for t in targets] if ranking else targets),
            group=[len(t) for t in targets] if ranking else None,
            feature_name=_lightgbm_names(feature_names(collection, flag_names)),
            params={"verbosity": -1},
        )
        booster = lightgbm.train(PARAMS | {"objective": objective}, data, num_boost_round=rounds)
        return cls(booster, collection, flag_names, objective)

    @classmethod
    def cached(cls, train: Dataset, objective: str = "regression") -> GbdtBaseline:
        """The model of `train` from the cache, trained and stored there first if need be."""
        folder = cache_folder(train, objective)
        if (folder / MODEL_FILE).is_file():
            try:
                return cls.load(folder)
            except HlotuneError:  # damaged: train again below
                pass
        model = cls.fit(train, objective=objective)
        model.save(folder)
        return model

    def scores(self, sample: GraphSample) -> np.ndarray:
        """Per config, lower = faster: the predicted log runtime relative to the graph's
        median, or minus the predicted relevance (lambdarank)."""
        if sample.collection != self.collection:
            raise HlotuneError(
                f"{sample.name or 'graph'}: a {sample.collection} graph, but the GBDT model "
                f"scores {self.collection} configs"
            )
        predicted = self.booster.predict(feature_matrix(sample, self.flag_names), num_threads=1)
        return -predicted if self.objective == "lambdarank" else predicted

    def save(self, folder: str | os.PathLike[str]) -> None:
        folder = Path(folder)
        document = {
            "format": FORMAT,
            "version": VERSION,
            "collection": self.collection,
            "objective": self.objective,
            "flag_names": list(self.flag_names),
            "feature_names": feature_names(self.collection, self.flag_names),
        }
        write_bytes_atomic(folder / MODEL_FILE, self.booster.model_to_string().encode())
        write_bytes_atomic(folder / FEATURES_FILE, (json.dumps(document, indent=2) + "\n").encode())

    @classmethod
    def load(cls, folder: str | os.PathLike[str]) -> GbdtBaseline:
        """HlotuneError for a missing or damaged folder, or one of another feature version."""
        folder = Path(folder)
        document = read_json(folder / FEATURES_FILE)
        if not isinstance(document, dict) or document.get("format") != FORMAT:
            raise HlotuneError(f"{folder / FEATURES_FILE}: not an hlotune GBDT model")
        collection, flag_names = document.get("collection"), tuple(document.get("flag_names", ()))
        if (
            document.get("version") != VERSION
            or collection not in LEARNED
            or document.get("feature_names") != feature_names(collection, flag_names)
        ):
            raise HlotuneError(f"{folder}: a GBDT model of another hlotune version; train it again")
        try:
            booster = load_lightgbm().Booster(model_str=(folder / MODEL_FILE).read_text())
        except (OSError, UnicodeDecodeError, load_lightgbm().basic.LightGBMError):
            raise HlotuneError(f"{folder / MODEL_FILE}: missing or not a LightGBM model") from None
        return cls(booster, collection, flag_names, document.get("objective", "regression"))


def cache_folder(train: Dataset, objective: str = "regression") -> Path:
    """Where the model of `train` is cached: `$XDG_CACHE_HOME` or `~/.cache`, then hlotune/gbdt."""
    key = hashlib.sha256(json.dumps([VERSION, ROUNDS, PARAMS, objective]).encode())
    for path in train.paths:
        stat = path.stat()
        key.update(f"{path.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "hlotune" / "gbdt" / f"{_collection(train)}-{key.hexdigest()[:16]}"


def relevance_grades(log_runtimes: np.ndarray) -> np.ndarray:
    """Integer grades for LambdaRank from one graph's runtimes: the fastest config gets the
    top grade, the slowest 0, evenly by rank in between."""
    ranks = np.argsort(np.argsort(log_runtimes, kind="stable"), kind="stable")
    top = RELEVANCE_LEVELS - 1
    return np.rint(top * (1 - ranks / max(len(ranks) - 1, 1))).astype(np.int64)


def _collection(train: Dataset) -> str:
    if train.collection is None:
        raise HlotuneError(f"{train.root}: graphs without configs, nothing to train on")
    return train.collection


def _lightgbm_names(names: list[str]) -> list[str]:
    """LightGBM rejects JSON's special characters in names; features.json keeps the real ones."""
    return [name.translate(str.maketrans('",:[]{}', "_______")) for name in names]


def load_lightgbm():
    return require("lightgbm", "gbdt", "the GBDT baseline")
