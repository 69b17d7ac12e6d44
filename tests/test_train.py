"""Training: losses on hand-computed cases, and short runs on real TpuGraphs fixtures."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from hlotune.data.dataset import Dataset
from hlotune.errors import HlotuneError
from hlotune.models import GraphCostModel, ModelSettings, predict_scores
from hlotune.train import CombinedLoss, TrainSettings, train
from hlotune.train import trainer as trainer_module
from hlotune.train.log import Curves, EpochLog
from hlotune.train.losses import listmle_loss, mse_loss, pairwise_hinge_loss, pairwise_logistic_loss
from hlotune.train.targets import centred

pytestmark = pytest.mark.usefixtures("one_thread")

TINY = ModelSettings(hidden_dim=8, opcode_dim=4, num_layers=2, prune_hops=2)
FAST = TrainSettings(configs_per_batch=20, lr=1e-2)
RUN = dict(model_settings=TINY, progress=False)


# Losses. Scores are predicted log runtimes: lower = faster.


def test_pairwise_losses_match_the_slide_by_hand():
    # y_1 > y_0 is the only ordered pair; n(n-1)/2 = 1.
    targets = torch.tensor([1.0, 2.0])
    scores = torch.tensor([0.0, 0.25])
    assert pairwise_hinge_loss(scores, targets).item() == pytest.approx(0.75)  # max(0, 1 - 0.25)
    assert pairwise_logistic_loss(scores, targets).item() == pytest.approx(math.log1p(math.exp(-0.25)))
    # three configs, pairs (1,0), (2,0), (2,1); margins 2, 1, -1 -> hinge 0, 0, 2; over 3 pairs
    targets = torch.tensor([1.0, 2.0, 3.0])
    scores = torch.tensor([0.0, 2.0, 1.0])
    assert pairwise_hinge_loss(scores, targets).item() == pytest.approx(2 / 3)
    # ties in the runtimes make no pair
    assert pairwise_hinge_loss(torch.tensor([0.0, 5.0]), torch.tensor([1.0, 1.0])).item() == 0.0


def test_listmle_and_mse_by_hand():
    # order fastest first: [0, 1]; u = -s = [0, 0]: (logsumexp(0, 0) - 0 + 0 - 0) / 2
    assert listmle_loss(torch.zeros(2), torch.tensor([1.0, 2.0])).item() == pytest.approx(math.log(2) / 2)
    # u = [1, -1] in true order: (log(e + e^-1) - 1 + 0) / 2
    expected = (math.log(math.e + math.exp(-1)) - 1) / 2
    assert listmle_loss(torch.tensor([-1.0, 1.0]), torch.tensor([1.0, 2.0])).item() == pytest.approx(expected)
    assert mse_loss(torch.tensor([1.0, 3.0]), torch.tensor([0.0, 1.0])).item() == pytest.approx(2.5)


@pytest.mark.parametrize("name", ["pairwise_hinge", "pairwise_logistic", "listmle"])
def test_ranking_losses_prefer_the_true_order(name):
    targets = torch.log(torch.tensor([100.0, 300.0, 200.0, 400.0]))
    loss = CombinedLoss.parse(name)
    assert loss(targets, targets) < loss(-targets, targets)


def test_combined_loss_spec():
    loss = CombinedLoss.parse("mse:2, pairwise_hinge:0.5")
    assert str(loss) == "mse:2,pairwise_hinge:0.5"
    scores, targets = torch.tensor([0.0, 0.25]), torch.tensor([1.0, 2.0])
    expected = 2 * mse_loss(scores, targets) + 0.5 * pairwise_hinge_loss(scores, targets)
    assert loss(scores, targets).item() == pytest.approx(expected.item())
    assert CombinedLoss.parse("listmle").terms == (("listmle", 1.0),)
    for bad in ("nope", "mse:x", "mse:-1", "mse,mse", ""):
        with pytest.raises(HlotuneError):
            CombinedLoss.parse(bad)


# Settings


def test_settings_are_built_by_keyword_and_a_bad_value_names_its_field():
    assert TrainSettings().epochs == 20 and TrainSettings(joint_data="a").joint_data == ("a",)
    with pytest.raises(TypeError, match="learning_rate"):
        TrainSettings(learning_rate=1e-3)
    with pytest.raises(TypeError):
        TrainSettings(20)  # no position for a reordered field to swap
    bad = {"lr": -1, "epochs": 0, "weight_decay": -0.1, "clip_norm": 0, "monitor": "loss",
           "loss": "nope", "joint_weight": 0, "valid_max_configs": 0, "graphs_per_step": 0}
    for field, value in bad.items():
        with pytest.raises(HlotuneError, match=rf"^{field} "):
            TrainSettings(**{field: value})


# Training on the fixtures


@pytest.fixture
def layout_dir(tpugraphs_dir):
    return tpugraphs_dir / "npz/layout/xla/random/train"


@pytest.fixture
def tile_dir(tpugraphs_dir):
    return tpugraphs_dir / "npz/tile/xla/train"


def test_layout_training_lowers_the_loss_and_writes_its_files(layout_dir, tmp_path):
    result = train(layout_dir, layout_dir, tmp_path, replace(FAST, epochs=6, loss="mse"), **RUN)
    losses = [row.train_loss for row in result.history]
    assert losses[-1] < losses[0] / 10
    assert result.epochs_run == 6 and result.model_dir == tmp_path / "model"
    with open(tmp_path / "log.csv") as stream:
        rows = list(csv.DictReader(stream))
    assert list(rows[0]) == ["epoch", "train_loss", "valid_tau", "valid_opa", "lr", "seconds"]
    assert len(rows) == 6 and float(rows[-1]["lr"]) < float(rows[0]["lr"])  # cosine
    assert (tmp_path / "curves.png").read_bytes().startswith(b"\x89PNG")
    model = GraphCostModel.load(result.model_dir)
    assert predict_scores(model, Dataset(layout_dir)[0]).shape == (20,)


def test_the_curves_are_drawn_at_most_every_so_often_and_after_the_last_epoch(tmp_path):
    curves = Curves(tmp_path / "curves.png", every_s=3600)
    history = [EpochLog(epoch, 1 / epoch, 0.5, 0.7, 1e-3, 1.0) for epoch in (1, 2, 3)]
    curves.update(history[:1], last=False)  # the first epoch's: nothing was drawn yet
    assert curves.path.read_bytes().startswith(b"\x89PNG")
    curves.path.unlink()
    curves.update(history[:2], last=False)  # within the hour: not drawn again
    assert not curves.path.exists()
    curves.update(history, last=True)
    assert curves.path.read_bytes().startswith(b"\x89PNG")


def test_tile_training_lowers_the_loss_and_skips_unlabelled_graphs(tile_dir, tmp_path):
    test_split = tile_dir.parent / "test"  # runtimes all 0
    result = train([tile_dir, test_split], None, tmp_path, replace(FAST, epochs=5, loss="mse"), **RUN)
    assert result.history[-1].train_loss < result.history[0].train_loss
    state = json.loads((tmp_path / "checkpoint/trainer_state.json").read_text())
    assert state["steps_per_epoch"] == 1 and state["step"] == 5
    assert result.best_epoch == 5 and result.history[0].valid_tau is None


def _curves(history):
    return [(row.epoch, row.train_loss, row.valid_tau, row.valid_opa, row.lr) for row in history]


def _scores(model_dir, sample):
    return predict_scores(GraphCostModel.load(model_dir), sample)


def test_a_seed_gives_identical_models(tmp_path, tpugraphs_dir):
    folder = tpugraphs_dir / "npz/tile/xla/valid"  # 9 configs of distinct runtimes
    settings = replace(FAST, configs_per_batch=4, epochs=2, loss="pairwise_hinge", seed=3)
    first = train(folder, folder, tmp_path / "a", settings, **RUN)
    again = train(folder, folder, tmp_path / "b", settings, **RUN)
    other = train(folder, folder, tmp_path / "c", replace(settings, seed=4), **RUN)
    sample = Dataset(folder)[0]
    np.testing.assert_array_equal(_scores(first.model_dir, sample), _scores(again.model_dir, sample))
    assert not np.array_equal(_scores(first.model_dir, sample), _scores(other.model_dir, sample))
    assert first.history[0].train_loss == again.history[0].train_loss


def test_resume_continues_an_interrupted_run_exactly(tmp_path, tpugraphs_dir, monkeypatch):
    folder = tpugraphs_dir / "npz/tile/xla/valid"
    settings = replace(FAST, configs_per_batch=4, epochs=3, loss="listmle", patience=10)
    whole = train(folder, folder, tmp_path / "whole", settings, **RUN)

    save = trainer_module.save_checkpoint

    def save_then_crash(folder, model, optimizer, state):
        save(folder, model, optimizer, state)
        if state.epoch == 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(trainer_module, "save_checkpoint", save_then_crash)
    with pytest.raises(KeyboardInterrupt):
        train(folder, folder, tmp_path / "cut", settings, **RUN)
    monkeypatch.undo()
    resumed = train(folder, folder, tmp_path / "cut", settings, resume=True, **RUN)
    assert _curves(resumed.history) == _curves(whole.history)
    checkpoint = tmp_path / "cut/checkpoint"
    sample = Dataset(folder)[0]
    np.testing.assert_array_equal(_scores(checkpoint, sample), _scores(tmp_path / "whole/checkpoint", sample))


def test_run_folders_are_guarded(tmp_path, tile_dir):
    with pytest.raises(HlotuneError, match="no checkpoint"):
        train(tile_dir, None, tmp_path, replace(FAST, epochs=1), resume=True, **RUN)
    one_epoch = replace(FAST, epochs=1, loss="mse")
    train(tile_dir, None, tmp_path, one_epoch, **RUN)
    with pytest.raises(HlotuneError, match="holds a training run"):
        train(tile_dir, None, tmp_path, one_epoch, **RUN)
    with pytest.raises(HlotuneError, match="other settings"):
        train(tile_dir, None, tmp_path, replace(FAST, epochs=2, loss="listmle"), resume=True, **RUN)
    with pytest.raises(HlotuneError, match="layout graphs"):
        train(tile_dir, tile_dir.parents[2] / "layout/xla/random/train", tmp_path / "x",
              replace(FAST, epochs=1), **RUN)


def test_early_stopping_without_improvement(layout_dir, tmp_path):
    # The fixture's 20 configs share one layout, so validation tau stays 0: no epoch beats the first.
    result = train(layout_dir, layout_dir, tmp_path, replace(FAST, epochs=5, loss="mse", patience=2), **RUN)
    assert result.stopped_early and result.epochs_run == 3 and result.best_epoch == 1


def test_relative_targets_leave_mse_only_the_differences_within_a_graph():
    """A graph 20,000x slower than the scores' scale costs plain MSE everything and relative
    MSE nothing, when the configs' differences are right; ranking losses do not change."""
    scores = torch.tensor([0.1, 0.5, 0.2])
    targets = scores + math.log(2e4)
    assert mse_loss(scores, targets) > 50
    assert mse_loss(centred(scores), centred(targets)) < 1e-10
    wrong = torch.tensor([0.5, 0.1, 0.2]) + math.log(2e4)
    assert mse_loss(centred(scores), centred(wrong)) > 0.05
    assert pairwise_hinge_loss(centred(scores), centred(targets)) == pairwise_hinge_loss(scores, targets)


def test_init_from_copies_the_node_layers_of_another_spaces_model(tmp_path):
    """Sequential multi-task: a flags model starts from the shipped layout model's node layers,
    its own scaling, config encoder and head fresh; layers of another shape are refused."""
    from hlotune.models.files import pretrained_folder
    from hlotune.train.multitask import transfer_node_layers

    layout = GraphCostModel.load(pretrained_folder("layout"))
    flags = GraphCostModel(ModelSettings().with_data("flags", 140, 30))
    transfer_node_layers(layout, flags)
    theirs = layout.state_dict()
    copied = [name for name in flags.state_dict() if name.startswith(("opcode_embedding.", "node_encoder.", "convs."))]
    assert len(copied) > 10 and all(torch.equal(flags.state_dict()[name], theirs[name]) for name in copied)
    assert not torch.equal(flags.head[0].weight, layout.head[0].weight)  # its own head
    with pytest.raises(HlotuneError, match="node layers differ"):
        transfer_node_layers(layout, GraphCostModel(ModelSettings(hidden_dim=8).with_data("flags", 140, 30)))
    result = train("builtin:flags/valid", None, tmp_path / "run",
                   TrainSettings(epochs=1, init_from=pretrained_folder("layout")), progress=False)
    assert result.epochs_run == 1


def test_joint_training_shares_the_node_layers_with_a_companion_of_the_other_space(tmp_path):
    """Joint multi-task: a layout companion trains beside the flags model on the same node
    layers, saved with them at the best epoch; those layers learn from both spaces' graphs."""
    from hlotune.train.multitask import SHARED_MODULES

    flags_only = replace(FAST, epochs=2, seed=3)
    joint = replace(flags_only, joint_data="builtin:layout/valid")
    result = train("builtin:flags/valid", None, tmp_path / "joint", joint, **RUN)
    model, companion = GraphCostModel.load(result.model_dir), GraphCostModel.load(tmp_path / "joint" / "joint-model")
    assert (model.config.collection, companion.config.collection) == ("flags", "layout")
    mine, theirs = model.state_dict(), companion.state_dict()
    shared = [name for name in mine if name.startswith(SHARED_MODULES)]
    assert len(shared) > 10 and all(torch.equal(mine[name], theirs[name]) for name in shared)
    alone = GraphCostModel.load(train("builtin:flags/valid", None, tmp_path / "alone", flags_only, **RUN).model_dir)
    assert not torch.equal(alone.convs[0].update[0].weight, model.convs[0].update[0].weight)
    with pytest.raises(HlotuneError, match="other space"):
        train("builtin:flags/valid", None, tmp_path / "same", replace(joint, joint_data="builtin:flags/valid"),
              **RUN)
    with pytest.raises(HlotuneError, match="cannot be resumed"):
        train("builtin:flags/valid", None, tmp_path / "joint", joint, resume=True, **RUN)
