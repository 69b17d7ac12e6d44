"""Seed ensembles: several trained models in one folder, scoring as one model everywhere."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from hlotune.data.dataset import Dataset
from hlotune.errors import HlotuneError
from hlotune.models.ensemble import write_ensemble
from hlotune.models.gnn import GraphCostModel
from hlotune.models.predict import predict_scores
from hlotune.models.files import pretrained_folder
from hlotune.evaluation.scorers import load_scorer

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def two_flags_models(tmp_path):
    """The shipped flags model and a copy with perturbed weights: two members that disagree."""
    other = GraphCostModel.load(pretrained_folder("flags"))
    torch.manual_seed(0)
    with torch.no_grad():
        for parameter in other.head.parameters():
            parameter.add_(0.5 * torch.randn_like(parameter))
    other.save(tmp_path / "other")
    return [pretrained_folder("flags"), tmp_path / "other"]


def test_an_ensemble_scores_as_the_mean_of_its_members_standardised(tmp_path, two_flags_models):
    ensemble = load_scorer(str(write_ensemble(tmp_path / "ensemble", two_flags_models)))
    sample = next(iter(Dataset("builtin:flags/test")))
    members = [predict_scores(GraphCostModel.load(m), sample) for m in two_flags_models]
    assert not np.allclose(*members)
    z = [(s - s.mean()) / s.std() for s in members]
    np.testing.assert_allclose(ensemble(sample), (z[0] + z[1]) / 2, rtol=1e-4, atol=1e-5)
    assert len(ensemble.models) == 2
    ensemble.fine_tune(sample)  # every member learns
    after = [predict_scores(model, sample) for model in ensemble.models]
    assert not np.allclose(after[0], members[0]) and not np.allclose(after[1], members[1])


def test_the_ensemble_command_builds_one_that_eval_reads(tmp_path, cli, two_flags_models):
    result = cli("ensemble", *two_flags_models, "--out", tmp_path / "e", "-q")
    assert result.returncode == 0, result.stderr
    evaluation = cli("eval", "--model", tmp_path / "e", "--data", "builtin:flags/test", "--json")
    assert evaluation.returncode == 0, evaluation.stderr
    assert json.loads(evaluation.stdout)["kendall_tau"] > 0.1


def test_bad_ensembles_are_one_line_errors(tmp_path, two_flags_models):
    with pytest.raises(HlotuneError, match="at least two"):
        write_ensemble(tmp_path / "one", two_flags_models[:1])
    with pytest.raises(HlotuneError, match="not a model folder"):
        write_ensemble(tmp_path / "x", [two_flags_models[0], tmp_path])
    with pytest.raises(HlotuneError, match="other collections: flags, layout"):
        write_ensemble(tmp_path / "mixed", [two_flags_models[0], pretrained_folder("layout")])
    folder = write_ensemble(tmp_path / "e", two_flags_models)
    (folder / "ensemble.json").write_text('{"format": "hlotune-ensemble", "version": 1, "members": ["gone"]}')
    with pytest.raises(HlotuneError, match="member folder missing"):
        load_scorer(str(folder))
    (folder / "ensemble.json").write_text("{not json")
    with pytest.raises(HlotuneError, match="not valid JSON"):
        load_scorer(str(folder))
