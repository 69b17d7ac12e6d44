"""The GO policy's fusion head fine-tuned on MEASURED speedups (`opt train --measure`)."""

from __future__ import annotations

import json

import pytest
import torch

from hlotune.cli import main
from hlotune.compiler.measurement.measure import MeasureSettings
from hlotune.errors import HlotuneError
from hlotune.opt.commands import PRETRAINED_DIR
from hlotune.opt.policy import GOPolicy
from hlotune.opt.fusion_fine_tune import FineTuneSettings, fine_tune
from hlotune.opt.measured_fusion import FusionProblem

PROGRAM = "zoo:gnn@tiny"  # XLA makes kernels it can split or merge


def test_a_measured_batch_moves_the_fusion_head_and_reports_speedups():
    policy, _ = GOPolicy.load(PRETRAINED_DIR)
    before = {name: tensor.clone() for name, tensor in policy.state_dict().items()}
    settings = FineTuneSettings(rounds=1, samples=4, measure=MeasureSettings(rounds=2, repeats=2, default_replicas=1))
    (step,) = fine_tune(policy, [FusionProblem.load(PROGRAM)], settings)
    assert step.program == PROGRAM and 1 <= step.measured <= 4 and 0 <= step.failed <= step.measured
    assert step.best_speedup >= step.mean_speedup > 0 and step.noise >= 0
    moved = [name for name, tensor in policy.state_dict().items() if not torch.equal(tensor, before[name])]
    assert moved  # unless every sample measured the same, which 4 draws of a stochastic head do not


def test_fine_tuning_needs_samples_to_compare():
    with pytest.raises(HlotuneError, match="2 samples"):
        FineTuneSettings(samples=1)


def test_opt_train_measure_writes_a_policy_that_opt_fuse_loads(tmp_path, capsys):
    out = tmp_path / "policy"
    argv = ["opt", "train", "--measure", "--programs", PROGRAM, "--iterations", "1", "--samples", "2",
            "--out", str(out), "--json", "--quiet"]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["measured_on"] == "this machine" and len(summary["steps"]) == 1
    _, training = GOPolicy.load(out)
    assert training["measured_fine_tune"]["programs"] == [PROGRAM] and "fuse" in "".join(training["tasks"])
    assert main(["opt", "train", "--measure", "--programs", PROGRAM, "--devices", "2", "--out", str(out)]) == 1
    assert "--devices is for simulated training" in capsys.readouterr().err
    assert main(["opt", "train", "--programs", PROGRAM, "--out", str(out)]) == 1
    assert "needs --devices" in capsys.readouterr().err
