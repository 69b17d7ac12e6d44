"""The gain model: the same cheap look at a program from its stored and its recorded form, a model
trained on the flags collection and on a fleet's own tunes, and the allocation it steers."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest

import hlotune
from conftest import need
from hlotune.data.builtin import resolve
from hlotune.data.npz import read_sample
from hlotune.fleet import gain_model, gain_rows
from hlotune.fleet.allocation import MIN_GAIN, PROBE, model_guided
from hlotune.fleet.gain_model import GainModel
from hlotune.fleet.program_features import FEATURE_NAMES, program_features, program_graph
from hlotune.fleet.tune import Outcome
from hlotune.programs import load_program
from hlotune.tuning.options import TuneOptions
from hlotune.fleet.recorded import recorded_spec
from hlotune.fleet.recorder import recorder_for
from hlotune.tuning.storage import Recording, TuningDatabase
from hlotune.tuning.tuner import tune


@pytest.fixture(scope="module")
def stored_mlp() -> np.ndarray:
    return program_features(read_sample(resolve("builtin:flags/train") / "mlp@tiny.npz").graph)


def _recorded(program, location: str) -> Recording:
    jitted = hlotune.jit(program.fn, db=location)
    for _ in range(2):
        jax.block_until_ready(jitted(*program.args))
    recorder_for(location).flush()
    with TuningDatabase(location) as db:
        return db.recordings()[0]


def test_a_program_looks_as_its_stored_form_does(stored_mlp):
    features = program_features(program_graph(load_program("zoo:mlp@tiny")))
    assert features.shape == (len(FEATURE_NAMES),) and np.isfinite(features).all()
    assert np.array_equal(features, stored_mlp)


def test_a_recorded_program_looks_as_its_stored_form_does(stored_mlp, tmp_path):
    location = str(tmp_path / "fleet.sqlite")
    recording = _recorded(load_program("zoo:mlp@tiny"), location)
    with TuningDatabase(location) as db:
        spec = recorded_spec(db, recording)
    assert np.array_equal(program_features(program_graph(load_program(spec, abstract=True))), stored_mlp)


def test_the_model_ranks_families_it_never_saw_better_than_chance():
    """Four folds of whole families: each fold's programs ranked by a model fitted without
    them, its predictions averaged over three bagging seeds (one seed's top quarter holds 32-49%:
    a bar on one would test the seed). By chance, the quarter ranked highest holds a quarter of
    the log gain."""
    need("lightgbm", install='pip install "hlotune[gbdt]"')
    from scipy.stats import spearmanr

    rows = gain_rows.collection_rows()
    assert rows.features.shape == (151, len(FEATURE_NAMES)) and len(set(rows.families)) == 43
    assert (rows.gains >= 0).all() and rows.gains.max() > math.log(2)  # haiku-resnet gains 8x
    folds = np.array([sorted(set(rows.families)).index(f) % 4 for f in rows.families])
    predicted = np.zeros(len(rows.gains))
    for fold in range(4):
        held = folds == fold
        predicted[held] = np.mean([GainModel.train(rows.where(~held), seed=seed).predict_features(rows.features[held])
                                   for seed in range(3)], axis=0)
    top = np.argsort(-predicted)[:len(predicted) // 4]
    assert spearmanr(predicted, rows.gains)[0] > 0.2
    assert rows.gains[top].sum() / rows.gains.sum() > 0.35
    assert math.isfinite(GainModel.train(rows).predict(load_program("zoo:mlp@tiny", abstract=True)))


def test_a_fleet_gets_a_predicted_speedup_for_each_recorded_program(tmp_path):
    need("lightgbm", install='pip install "hlotune[gbdt]"')
    location = str(tmp_path / "fleet.sqlite")
    recording = _recorded(load_program("zoo:mlp@tiny"), location)
    gains = gain_model.fleet_gains(location, [recording])
    assert list(gains) == [recording.fingerprint]  # as the model predicts the program's stored form:
    stored = GainModel.for_fleet(location).predict(load_program("zoo:mlp@tiny", abstract=True))
    assert gains[recording.fingerprint] == pytest.approx(math.exp(stored))


def test_a_fleet_learns_from_its_own_tunes(tmp_path, monkeypatch):
    location = str(tmp_path / "fleet.sqlite")
    recording = _recorded(load_program("zoo:mlp@tiny"), location)
    assert gain_rows.fleet_rows(location).names == ()  # not tuned yet
    with TuningDatabase(location) as db:
        tune(recorded_spec(db, recording), options=TuneOptions(budget=3), db=location, progress=False)
    monkeypatch.setattr(gain_rows, "MIN_CONFIGS", 2)
    rows = gain_rows.fleet_rows(location)
    assert rows.names == (recording.name,) and rows.families == (f"fleet:{recording.name}",)
    assert rows.features.shape == (1, len(FEATURE_NAMES)) and rows.gains[0] >= 0


class _Spend:
    """What an allocation calls, charging nothing: records each (program, budget)."""

    location = "unused.sqlite"

    def __init__(self) -> None:
        self.spent: list[tuple[str, int]] = []

    def __call__(self, program: Recording, budget: int) -> Outcome:
        self.spent.append((program.name, budget))
        return Outcome(program, budget, budget, 1.0, 1.0, 1.0)


def test_the_model_allocation_probes_by_predicted_saving_and_skips_predicted_nothing(monkeypatch):
    seconds = {"a": 9.0, "b": 5.0, "c": 3.0, "d": 1.0}
    speedups = {"a": 1.01, "b": 1.1, "c": 1.5, "d": 1.2}  # c saves 1 s a day, b 0.45, d 0.17, a skipped
    programs = [Recording(name * 8, name, "", True, "", 0.0, 10, s, 86400.0) for name, s in seconds.items()]
    monkeypatch.setattr(gain_model, "fleet_gains", lambda location, recorded: {
        p.fingerprint: speedups[p.name] for p in recorded})
    spend = _Spend()
    model_guided(programs, spend)
    assert speedups["a"] < MIN_GAIN
    assert spend.spent[:3] == [("c", PROBE), ("b", PROBE), ("d", PROBE)]
    assert "a" not in {name for name, _ in spend.spent}
