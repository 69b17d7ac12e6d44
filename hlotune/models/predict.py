"""Scoring the configs of one graph with a trained model (no gradients), for eval and tuning."""

from __future__ import annotations

import numpy as np
import torch

from hlotune.data.sample import GraphSample
from hlotune.models.gnn import GraphCostModel
from hlotune.models.inputs import config_inputs, graph_inputs

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
    With cross-config attention a config's score depends on the others of its chunk, as in
    training. Raises HlotuneError if the sample does not fit the model (collection, widths).
    """
    was_training = model.training
    model.eval()
    try:
        device = model.device
        context = model.encode_graph(graph_inputs(sample, model.config, device))
        chosen = np.arange(sample.num_configs) if indices is None else np.asarray(indices)
        chunk = max(1, max_rows // context.rows_per_config)
        scores = [
            model.score(context, config_inputs(sample, chosen[start : start + chunk], device)).cpu()
            for start in range(0, len(chosen), chunk)
        ]
    finally:
        model.train(was_training)
    return torch.cat(scores).numpy() if scores else np.zeros(0, dtype=np.float32)
