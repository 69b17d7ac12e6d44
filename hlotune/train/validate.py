"""Ranking quality of a model on a folder of labelled graphs (the trainer's per-epoch check)."""

from __future__ import annotations

import numpy as np

from hlotune.data.dataset import Dataset
from hlotune.data.metrics import TOP_K, score_graph, summarize, target_runtimes
from hlotune.models.gnn import GraphCostModel
from hlotune.models.predict import predict_scores
from hlotune.train.targets import measured


def validate(
    model: GraphCostModel, dataset: Dataset, *, max_configs: int | None = None
) -> dict | None:
    """`hlotune.data.metrics.summarize` over the labelled graphs; None when there are none.

    A graph with more than `max_configs` measured configs is scored on a fixed random subset of
    that many (seeded by the graph's index, so every epoch sees the same), which keeps a
    validation pass over layout graphs of 100k configs affordable.
    """
    scored = []
    for index in range(len(dataset)):
        sample = dataset[index]
        if not sample.labelled:
            continue
        chosen = measured(sample)
        if max_configs is not None and len(chosen) > max_configs:
            rng = np.random.default_rng(index)
            chosen = np.sort(rng.choice(chosen, size=max_configs, replace=False))
        scores = predict_scores(model, sample, indices=chosen)
        runtimes = target_runtimes(sample)[chosen]
        scored.append(score_graph(sample.name, runtimes, scores, TOP_K[sample.collection]))
    return summarize(scored) if scored else None
