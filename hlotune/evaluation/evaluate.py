"""Score a ranking model on a dataset: the harness behind `hlotune eval`.

Any model is a function from a GraphSample to one score per config (lower = predicted
faster), so the GNN and every baseline are judged by the same code. Tile graphs are scored on
normalised runtimes; layout validation graphs may use the paper protocol (1000 official config
indices per graph). Unlabelled graphs (test splits) are skipped. Where the files keep their
measurement samples, the noise ceiling says how well any model could rank: the Kendall tau
between the medians of the odd and the even samples of each config.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from hlotune.data import metrics
from hlotune.data.metrics import target_runtimes
from hlotune.data.sample import GraphSample
from hlotune.errors import HlotuneError
from hlotune.evaluation.scorers import Scorer


@dataclass
class Evaluation:
    collection: str
    graphs: int
    kendall_tau: float
    opa: float
    top_k_error: dict[str, float]
    per_graph: list[dict]
    noise_ceiling_tau: float | None = None

    def to_json(self) -> dict:
        return asdict(self)


def evaluate(
    samples: Iterable[GraphSample],
    score: Scorer,
    *,
    eval_indices: dict[str, np.ndarray] | None = None,
    predictions: bool = False,
) -> Evaluation:
    """Metrics per graph and averaged; `eval_indices` restricts graphs to the paper's configs.
    With `predictions`, each graph's entry also lists the runtimes and the model's scores of
    the configs scored (what `hlotune report --eval` plots)."""
    scored: list[metrics.GraphScores] = []
    per_graph: list[dict] = []
    ceilings: list[float] = []
    collection = None
    for sample in samples:
        if not sample.labelled:
            continue
        collection = sample.collection
        if collection not in metrics.TOP_K:  # fusion files: data, no model ranks them yet
            raise HlotuneError(f"{sample.source or sample.name}: a {collection} graph; "
                               f"hlotune eval scores {', '.join(metrics.TOP_K)} graphs")
        runtimes, scores = target_runtimes(sample), np.asarray(score(sample), np.float64)
        keep = metrics.eval_indices_for(sample.name, eval_indices or {}, sample.num_configs)
        if keep is not None:
            runtimes, scores = runtimes[keep], scores[keep]
        scored.append(metrics.score_graph(sample.name, runtimes, scores, metrics.TOP_K[collection]))
        ceiling = noise_ceiling(sample, keep)
        if ceiling is not None:
            ceilings.append(ceiling)
        per_graph.append(_graph_json(scored[-1]) | {"noise_ceiling_tau": ceiling})
        if predictions:
            per_graph[-1] |= {"runtimes": runtimes.tolist(), "scores": scores.tolist()}
    if not scored:
        raise HlotuneError("no labelled graphs to evaluate (test splits have all-zero runtimes)")
    summary = metrics.summarize(scored)
    return Evaluation(
        collection=collection,
        graphs=summary["graphs"],
        kendall_tau=summary["kendall_tau"],
        opa=summary["opa"],
        top_k_error=summary["top_k_error"],
        per_graph=per_graph,
        noise_ceiling_tau=float(np.mean(ceilings)) if ceilings else None,
    )


def noise_ceiling(sample: GraphSample, keep: np.ndarray | None = None) -> float | None:
    """Kendall tau of odd-sample medians against even-sample medians (None without samples)."""
    samples = getattr(sample.configs, "config_runtime_samples", None)
    if samples is None or samples.shape[1] < 2:
        return None
    if keep is not None:
        samples = samples[keep]
    odd, even = np.median(samples[:, 1::2], axis=1), np.median(samples[:, 0::2], axis=1)
    return metrics.kendall_tau(even, odd)


def _graph_json(graph: metrics.GraphScores) -> dict:
    return {
        "graph": graph.name,
        "configs": graph.num_configs,
        "kendall_tau": graph.kendall_tau,
        "opa": graph.opa,
        "top_k_error": {str(k): v for k, v in graph.top_k_error.items()},
    }


def format_evaluation(result: Evaluation, model: str, data: str | Path) -> str:
    ks = ", ".join(f"top-{k} {v:.2%}" for k, v in result.top_k_error.items())
    lines = [
        f"{model} on {data} ({result.collection}, {result.graphs} graphs): "
        f"Kendall tau {result.kendall_tau:.3f}, OPA {result.opa:.3f}, {ks}"
    ]
    if result.noise_ceiling_tau is not None:
        lines.append(f"  noise ceiling (odd vs even samples): Kendall tau {result.noise_ceiling_tau:.3f}")
    for graph in result.per_graph:
        ks = " ".join(f"{v:.1%}" for v in graph["top_k_error"].values())
        lines.append(f"  {graph['graph']:<40} tau {graph['kendall_tau']:+.3f} opa {graph['opa']:.3f} top-k {ks}")
    return "\n".join(lines)
