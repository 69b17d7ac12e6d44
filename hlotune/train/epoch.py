"""One epoch of GraphCostModel training (trainer.py runs the epochs): each step's graphs, each
graph's loss on a random batch of its measured configs, and the learning rate's cosine.

Ranking is learned between configs of one graph, never across graphs, whose runtimes are not
comparable; under torchrun a step's graphs are shared out over the processes, each with its own
(seed, epoch, position) generator, so the work is the same whichever process does it.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from hlotune.data.dataset import Dataset
from hlotune.data.sample import GraphSample
from hlotune.models.compress import drop_duplicate_configs
from hlotune.models.gnn import GraphCostModel
from hlotune.models.inputs import config_inputs, graph_inputs, prior_inputs, prior_rows
from hlotune.progress import progress_bar
from hlotune.train.checkpoint import TrainerState
from hlotune.train.distributed import Group
from hlotune.train.gst import SegmentTraining
from hlotune.train.losses import CombinedLoss
from hlotune.train.multitask import JointTask
from hlotune.train.targets import centred, log_targets, measured

if TYPE_CHECKING:
    from hlotune.train.trainer import TrainSettings


class Step(torch.nn.Module):
    """Scores of one graph's config batch: whole-graph or GST. A module so DDP can wrap it (DDP
    syncs the gradients of what runs through its forward)."""

    def __init__(
        self, model: GraphCostModel, gst: SegmentTraining | None,
        companion: GraphCostModel | None = None,
    ) -> None:
        super().__init__()
        self.model, self.gst, self.companion = model, gst, companion

    def forward(
        self,
        key: tuple[int, int],
        sample: GraphSample,
        picked: np.ndarray,
        rng: np.random.Generator,
    ) -> torch.Tensor:
        model = self.model
        if self.companion is not None and sample.collection == self.companion.config.collection:
            model = self.companion
        device = model.device
        graph = graph_inputs(sample, model.config, device)
        configs = config_inputs(sample, picked, device)
        prior = prior_rows(prior_inputs(sample, model.config, picked), slice(None), device)
        if self.gst is None:
            return model(graph, configs, prior)
        return self.gst.scores(self.model, key, sample, graph, configs, picked, rng, prior)


@dataclass
class TrainingRun:
    """What every epoch of a run uses."""

    step: torch.nn.Module  # Step, DDP-wrapped in a group
    optimizer: torch.optim.Optimizer
    loss_fn: CombinedLoss
    train_sets: list[Dataset]
    files: list[tuple[int, int]]  # labelled graphs
    settings: TrainSettings
    group: Group
    joint: JointTask | None = None

    @property
    def graphs_per_step(self) -> int:
        """Over all processes."""
        return self.settings.graphs_per_step * self.group.world


def train_epoch(run: TrainingRun, state: TrainerState, progress: bool) -> float:
    """One pass over the training graphs in a (seed, epoch)-shuffled order; the mean graph loss.

    Step j takes the next `run.graphs_per_step` graphs of the order, this process its own share.
    The last step is padded from the start of the order with zero-weight graphs, so that every
    process runs the same number of passes, and each graph draws from its own (seed, epoch,
    position) generator: the same work whichever process does it.
    """
    settings, files = run.settings, run.files
    epoch = state.epoch + 1
    rng = np.random.default_rng([settings.seed, epoch])
    torch.manual_seed(int(rng.integers(2**62)))  # dropout
    order = rng.permutation(len(files))
    joint_order = None if run.joint is None else rng.permutation(len(run.joint.files))
    steps = math.ceil(len(files) / run.graphs_per_step)
    total_steps = settings.epochs * math.ceil(state.steps_per_epoch / run.graphs_per_step)
    run.step.train()
    losses = []
    description = f"epoch {epoch}/{settings.epochs}"
    with progress_bar(total=steps, desc=description, show=progress) as bar:
        for j in range(steps):
            for group in run.optimizer.param_groups:
                group["lr"] = _cosine(settings.lr, state.step, total_steps)
            run.optimizer.zero_grad(set_to_none=True)
            first = j * run.graphs_per_step + run.group.rank * settings.graphs_per_step
            for k in range(settings.graphs_per_step):
                position = first + k
                last = k == settings.graphs_per_step - 1
                with contextlib.nullcontext() if last else _no_sync(run.step):
                    seed = [settings.seed, epoch, position]
                    loss = _graph_loss(run, run.train_sets, files[order[position % len(files)]], seed)
                    weight = 1.0 / settings.graphs_per_step if position < len(files) else 0.0
                    if run.joint is not None:  # and a graph of the other space
                        other = run.joint.files[joint_order[position % len(joint_order)]]
                        joint_loss = _graph_loss(run, run.joint.train_sets, other, seed + [1])
                        ((loss + run.joint.weight * joint_loss) * weight).backward()
                    else:
                        (loss * weight).backward()
                if weight:
                    losses.append(loss.item())
            torch.nn.utils.clip_grad_norm_(run.step.parameters(), settings.clip_norm)
            run.optimizer.step()
            state.step += 1
            bar.update()
            if losses:
                bar.set_postfix(loss=f"{losses[-1]:.4g}")
    return float(np.mean(losses)) if losses else math.nan


def _graph_loss(
    run: TrainingRun, train_sets: list[Dataset], file: tuple[int, int], seed: list[int]
) -> torch.Tensor:
    """The loss on `configs_per_batch` random measured configs of one graph."""
    d, i = file
    sample = train_sets[d][i]
    if run.settings.drop_duplicate_configs:
        sample = drop_duplicate_configs(sample)
    rng = np.random.default_rng(seed)
    candidates = measured(sample)
    size = min(run.settings.configs_per_batch, len(candidates))
    picked = rng.choice(candidates, size=size, replace=False)
    scores = run.step(file, sample, picked, rng)
    targets = torch.as_tensor(log_targets(sample)[picked], device=scores.device)
    if run.settings.relative_targets:
        scores, targets = centred(scores), centred(targets)
    return run.loss_fn(scores, targets)


def _no_sync(step: torch.nn.Module) -> contextlib.AbstractContextManager:
    """DDP all-reduces at a process's last backward of a step only."""
    return step.no_sync() if hasattr(step, "no_sync") else contextlib.nullcontext()


def _cosine(peak: float, step: int, total: int) -> float:
    return peak * 0.5 * (1.0 + math.cos(math.pi * min(step, total) / max(total, 1)))
