"""Scoring the configs of one graph with a trained model (no gradients), for eval and tuning."""

from __future__ import annotations

import numpy as np
import torch

from hlotune.data.sample import GraphSample
from hlotune.models.settings import ModelSettings
from hlotune.models.gnn import GraphCostModel
from hlotune.models.inputs import config_inputs, graph_inputs, prior_inputs, prior_rows

# Node rows (configs x nodes each config propagates) per forward pass: bounds memory on layout
# graphs of 100k nodes, where one config alone is large. On CPU, 2^14 ranked layout configs
# 2.3-3.3x faster than 2^18 (benchmarks/rank_bench.py --max-rows): big passes churn memory.
MAX_ROWS = 2**14


@torch.no_grad()
def predict_scores(
    model: GraphCostModel,
    sample: GraphSample,
    *,
    indices: np.ndarray | None = None,
    max_rows: int = MAX_ROWS,
) -> np.ndarray:
    """Scores `(C,)` float32 of the sample's configs (or those at `indices`), lower = faster.

    The graph is encoded once and its configs scored in chunks of at most `max_rows` node rows.
    With a cross-config layer a config's score depends on the others scored beside it: a model
    with `test_group_size` scores random groups of about that many (as it was trained), draws
    them `test_permutations` times and averages; without, configs go in chunks, as they come.
    Raises HlotuneError if the sample does not fit the model (collection, widths).
    """
    was_training = model.training
    if was_training:  # switching walks every submodule: 10% of scoring a small graph
        model.eval()
    try:
        device = model.device
        context = model.encode_graph(graph_inputs(sample, model.config, device))
        chosen = np.arange(sample.num_configs) if indices is None else np.asarray(indices)
        chunk = max(1, max_rows // context.rows_per_config)
        prior = prior_inputs(sample, model.config)

        def scored(groups: list[np.ndarray]) -> np.ndarray:
            scores = np.zeros(len(chosen), dtype=np.float32)
            for group in groups:
                configs = config_inputs(sample, chosen[group], device)
                costs = prior_rows(prior, chosen[group], device)
                scores[group] = model.score(context, configs, costs).cpu().numpy()
            return scores

        config = model.config
        if config.test_group_size is None or not _compares_configs(config):
            starts = range(0, len(chosen), chunk)
            return scored([np.arange(start, min(start + chunk, len(chosen))) for start in starts])
        rng = np.random.default_rng(0)
        parts = max(1, -(-len(chosen) // min(config.test_group_size, chunk)))
        draws = [scored(np.array_split(rng.permutation(len(chosen)), parts))
                 for _ in range(config.test_permutations)]
        return np.mean(draws, axis=0).astype(np.float32)
    finally:
        if was_training:
            model.train()


def _compares_configs(config: ModelSettings) -> bool:
    """Whether a config's score depends on the configs scored beside it."""
    return config.cross_config_attention or config.config_softmax
