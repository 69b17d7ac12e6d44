"""Fine-tuning a trained model on one program's own measurements, as a tuner gathers them.

A pretrained model has never seen the program being tuned; a few optimizer steps on the
configs measured so far adapt it to that graph (the pairwise term teaches their order, the MSE
term their scale). The steps are few and the learning rate low, so the model keeps what it
learnt on other programs; the tuner calls this at intervals, not after every measurement.
"""

from __future__ import annotations

import numpy as np
import torch

from hlotune.data.sample import GraphSample
from hlotune.models.gnn import GraphCostModel
from hlotune.models.inputs import config_inputs, graph_inputs, prior_inputs, prior_rows
from hlotune.train.losses import CombinedLoss
from hlotune.train.targets import log_targets, measured

FINE_TUNE_LOSS = "mse:1,pairwise_hinge:1"


def fine_tune(
    model: GraphCostModel,
    sample: GraphSample,
    *,
    steps: int = 20,
    lr: float = 1e-4,
    configs_per_batch: int = 16,
    seed: int = 0,
) -> float:
    """Trains `model` in place on the measured configs of `sample`; the mean loss of the steps."""
    candidates = measured(sample)
    if len(candidates) < 2:
        return float("nan")  # nothing to rank yet
    loss_fn = CombinedLoss.parse(FINE_TUNE_LOSS)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    rng = np.random.default_rng(seed)
    device = model.device
    graph = graph_inputs(sample, model.config, device)
    targets = torch.as_tensor(log_targets(sample), device=device)
    model.train()
    losses = []
    try:
        for _ in range(steps):
            picked = rng.choice(candidates, size=min(configs_per_batch, len(candidates)), replace=False)
            configs = config_inputs(sample, picked, device)
            prior = prior_rows(prior_inputs(sample, model.config, picked), slice(None), device)
            loss = loss_fn(model(graph, configs, prior), targets[picked])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            losses.append(loss.item())
    finally:
        model.eval()
    return float(np.mean(losses))
