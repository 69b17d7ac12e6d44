"""A prediction of what tuning a program's flags gains, from a cheap look at it (issue 49).

A fleet's programs differ far more in what tuning can save than a program's configs differ in
runtime, and most gain nothing, so a tuner serving many programs wants to know where the gain is
before it measures. This model predicts a program's log gain (best over default, in the flags
space) from program_features.py's roofline of its unoptimised graph: a lowering, no compile and
no run. It is LightGBM trees on the shipped flags collection (gain_rows.py), plus, for a fleet,
the database's own tuned programs. Small trees and a Huber loss: 151 programs, and one family
(an 8x gain) would otherwise pull every split its way. Fitting takes a tenth of a second.
benchmarks/gain_model_bench.py judges it with each family held out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from hlotune.extras import require
from hlotune.fleet.gain_rows import GainRows, collection_rows, fleet_rows, recorded_features
from hlotune.fleet.program_features import program_features, program_graph
from hlotune.programs.program import Program
from hlotune.tuning.storage import Recording

ROUNDS = 200
PARAMS = {
    "objective": "huber",
    "alpha": 0.1,  # log gain: errors past 10% count linearly
    "learning_rate": 0.05,
    "num_leaves": 7,
    "min_data_in_leaf": 8,
    "feature_fraction": 0.8,
    "bagging_fraction": 0.8,
    "bagging_freq": 1,
    "lambda_l2": 1.0,
    "num_threads": 1,  # deterministic, and 151 rows need no more
    "deterministic": True,
    "seed": 0,
    "verbosity": -1,
}


@dataclass(frozen=True)
class GainModel:
    """A LightGBM booster over program_features.FEATURE_NAMES, predicting log gain."""

    booster: Any

    @classmethod
    def train(cls, rows: GainRows | None = None, *, seed: int = 0) -> GainModel:
        """Fit on `rows` (default: the shipped flags collection)."""
        lightgbm = require("lightgbm", "gbdt", "the gain model")
        rows = collection_rows() if rows is None else rows
        data = lightgbm.Dataset(rows.features, rows.gains, params={"verbosity": -1})
        return cls(lightgbm.train(PARAMS | {"seed": seed}, data, num_boost_round=ROUNDS))

    @classmethod
    def for_fleet(cls, location: str) -> GainModel:
        """Fit on the collection and the database's own tuned programs."""
        return cls.train(collection_rows() + fleet_rows(location))

    def predict_features(self, features: np.ndarray) -> np.ndarray:
        """Log gains of programs given as feature rows (n, len(FEATURE_NAMES))."""
        return self.booster.predict(np.atleast_2d(features))

    def predict(self, program: Program) -> float:
        """The program's predicted log gain: log(best / default speedup) its flags may reach."""
        return float(self.predict_features(program_features(program_graph(program)))[0])


def fleet_gains(location: str, programs: list[Recording]) -> dict[str, float]:
    """Each recorded program's predicted speedup (by fingerprint), from a model trained on the
    collection and on what this database has tuned."""
    from hlotune.tuning.storage import TuningDatabase

    model = GainModel.for_fleet(location)
    with TuningDatabase(location) as db:
        features = {p.fingerprint: recorded_features(db, p) for p in programs}
    return {fingerprint: math.exp(float(model.predict_features(row)[0])) for fingerprint, row in features.items()}
