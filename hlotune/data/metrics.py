"""Ranking metrics of a cost model: how well its scores order the configs of one graph.

Conventions: a lower score means "predicted faster", so a perfect model's scores sort like the
true runtimes. Every function takes the runtimes and scores of one graph's configs; the caller
averages over graphs with `score_graph` and `summarize`. The runtimes are `target_runtimes`:
tile graphs' normalised by the default tile config, layout and flags graphs' raw (layout
restricted under the paper protocol to the configs of `eval_indices_for`, see
`load_eval_indices`).

They sit in the format layer, beside the samples they read, because training (validation, the
GBDT baseline's targets) and evaluation (`hlotune.evaluation`, which trains per fold) both
judge rankings by them: neither may import the other.

Degenerate graphs give defined values, never NaN: Kendall tau is 0.0 when either side has no
order (one config, all runtimes equal, or all scores equal); OPA is 1.0 when no pair of configs
has distinct runtimes (no pair can be misordered).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hlotune.data.sample import GraphSample, TileConfigArrays
from hlotune.errors import HlotuneError

# The K of the top-K errors each collection reports (the TpuGraphs paper's choices for tile and
# layout; flags follow tile).
TOP_K: dict[str, tuple[int, ...]] = {
    "tile": (1, 5, 10),
    "layout": (1, 10, 100),
    "flags": (1, 5, 10),
}

# The Kaggle tile score looks at the 5 configs predicted fastest.
KAGGLE_TILE_K = 5


def target_runtimes(sample: GraphSample) -> np.ndarray:
    """What a model ranks: runtimes, normalised by the default tile config for tile graphs."""
    configs = sample.configs
    runtimes = configs.config_runtime.astype(np.float64)
    if isinstance(configs, TileConfigArrays):
        return runtimes / configs.config_runtime_normalizers
    return runtimes


def _as_pair(runtimes: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Checks that runtimes and scores are finite, non-empty and of one length (1-D float64)."""
    runtimes = np.asarray(runtimes, dtype=np.float64)
    scores = np.asarray(scores, dtype=np.float64)
    if runtimes.ndim != 1 or runtimes.shape != scores.shape or runtimes.size == 0:
        raise ValueError(
            f"runtimes and scores must be non-empty 1-D arrays of one length, "
            f"got shapes {runtimes.shape} and {scores.shape}"
        )
    if not (np.isfinite(runtimes).all() and np.isfinite(scores).all()):
        raise ValueError("runtimes and scores must be finite")
    return runtimes, scores


def _pairs(count: int) -> int:
    return count * (count - 1) // 2


def _tied_pairs(values: np.ndarray) -> int:
    """The number of unordered pairs of equal values."""
    counts = np.unique(values, return_counts=True)[1]
    return int((counts * (counts - 1) // 2).sum())


_ALL_PAIRS_UP_TO = 128  # configs; above, comparing every pair costs more than scipy's O(c log c)


def _concordant_minus_discordant(runtimes: np.ndarray, scores: np.ndarray) -> int:
    """C - D over the unordered pairs (a pair tied on either side is neither), exactly.

    Few configs, the common case, compare every pair at once: scipy's kendalltau spends about a
    millisecond a call in argument handling, most of what scoring a test split cost. Many go
    through scipy's tau-b = (C - D) / `_tau_b_denominator`, turned back into the integer it was
    computed from.
    """
    if runtimes.size <= _ALL_PAIRS_UP_TO:
        signs = np.sign(np.subtract.outer(runtimes, runtimes)) * np.sign(np.subtract.outer(scores, scores))
        return int(signs.sum()) // 2
    from scipy.stats import kendalltau  # scipy.stats takes a second to import: not for few configs

    return round(kendalltau(runtimes, scores).statistic * _tau_b_denominator(runtimes, scores))


def average_ranks(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """1-based ranks, ties given the mean of the ranks they span (scipy's `rankdata`), without
    importing scipy.stats, which takes longer than a tune's start-up has to spare."""
    _, inverse, counts = np.unique(np.asarray(values), return_inverse=True, return_counts=True)
    last = np.cumsum(counts)
    return ((last - counts + 1 + last) / 2)[inverse.reshape(-1)]


def _tau_b_denominator(runtimes: np.ndarray, scores: np.ndarray) -> float:
    """sqrt(pairs untied in runtimes * pairs untied in scores)."""
    pairs = _pairs(runtimes.size)
    return math.sqrt(pairs - _tied_pairs(runtimes)) * math.sqrt(pairs - _tied_pairs(scores))


def top_k_error(runtimes: np.ndarray, scores: np.ndarray, k: int) -> float:
    """Slowdown of the best of the k configs predicted fastest over the true best: 0.0 is ideal.

    This is what an autotuner that measures only the model's top k loses. k beyond the number
    of configs takes them all (error 0.0). Among equal scores, the earlier config ranks first.
    Raises ValueError when a runtime is <= 0 (an unlabelled graph), as the ratio is undefined.
    """
    runtimes, scores = _as_pair(runtimes, scores)
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    best = runtimes.min()
    if best <= 0:
        raise ValueError(f"runtimes must be positive to compute a slowdown, the minimum is {best}")
    top = np.argsort(scores, kind="stable")[:k]
    return float(runtimes[top].min() / best - 1.0)


def kaggle_tile_score(runtimes: np.ndarray, scores: np.ndarray) -> float:
    """Kaggle "Fast or Slow" tile score of one graph, `2 - min(runtime[top 5]) / min(runtime)`.

    Equal to 1 - top-5 error; 1.0 is perfect. Pass normalised runtimes, as for every tile metric.
    """
    return 1.0 - top_k_error(runtimes, scores, KAGGLE_TILE_K)


def kendall_tau(runtimes: np.ndarray, scores: np.ndarray) -> float:
    """Kendall tau-b between scores and runtimes: 1.0 same order, -1.0 reversed.

    It judges the whole ranking, not only its head. Returns 0.0 (no correlation) instead of
    scipy's NaN when either side has no order: one config, or all runtimes or all scores equal.
    """
    runtimes, scores = _as_pair(runtimes, scores)
    if np.ptp(runtimes) == 0 or np.ptp(scores) == 0:
        return 0.0
    return _concordant_minus_discordant(runtimes, scores) / _tau_b_denominator(runtimes, scores)


def opa(runtimes: np.ndarray, scores: np.ndarray) -> float:
    """Ordered pair accuracy: of the config pairs with distinct runtimes, the fraction the
    scores order the same way, a tied score counting 0.5. 0.5 is chance, 1.0 perfect.

    Returns 1.0 when no pair has distinct runtimes (nothing to misorder). Runs in O(c log c)
    time and O(c) memory for many configs, so 20000 (2e8 pairs) are cheap.
    """
    runtimes, scores = _as_pair(runtimes, scores)
    comparable = _pairs(runtimes.size) - _tied_pairs(runtimes)
    if comparable == 0:
        return 1.0
    if np.ptp(scores) == 0:
        return 0.5
    # With C concordant and D discordant pairs, the comparable pairs that are neither have tied
    # scores, so OPA = (C + (comparable - C - D) / 2) / comparable = 1/2 + (C - D) / (2 comparable).
    return 0.5 + _concordant_minus_discordant(runtimes, scores) / (2 * comparable)


@dataclass
class GraphScores:
    """The metrics of one graph; top_k_error maps k to the slowdown as a fraction."""

    name: str
    num_configs: int
    kendall_tau: float
    opa: float
    top_k_error: dict[int, float]


def score_graph(
    name: str, runtimes: np.ndarray, scores: np.ndarray, ks: Iterable[int]
) -> GraphScores:
    """All metrics of one graph (ks: usually `TOP_K[collection]`)."""
    return GraphScores(
        name=name,
        num_configs=len(runtimes),
        kendall_tau=kendall_tau(runtimes, scores),
        opa=opa(runtimes, scores),
        top_k_error={k: top_k_error(runtimes, scores, k) for k in ks},
    )


def summarize(graphs: Sequence[GraphScores]) -> dict:
    """Unweighted means over graphs, as the paper and Kaggle average (a JSON-ready dict).

    Keys: `graphs` (count), `kendall_tau`, `opa`, `top_k_error` (str(k) -> mean fraction).
    Raises ValueError for no graphs or graphs scored at different ks.
    """
    if not graphs:
        raise ValueError("no graphs to summarize")
    ks = list(graphs[0].top_k_error)
    if any(list(g.top_k_error) != ks for g in graphs):
        raise ValueError("all graphs must be scored at the same ks")
    return {
        "graphs": len(graphs),
        "kendall_tau": float(np.mean([g.kendall_tau for g in graphs])),
        "opa": float(np.mean([g.opa for g in graphs])),
        "top_k_error": {str(k): float(np.mean([g.top_k_error[k] for g in graphs])) for k in ks},
    }


def load_eval_indices(path: str | Path) -> dict[str, np.ndarray]:
    """Reads a paper-protocol file, `eval_indices/{xla,nlp}_{default,random}.json`.

    The file maps each layout validation graph (its npz file name without `.npz`) to the
    indices of the configs to score (1000 per graph), so results compare with the paper's.
    Raises HlotuneError if the file is missing, not JSON, or not {name: [distinct indices >= 0]}.
    """
    try:
        raw = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise HlotuneError(f"{path}: cannot read eval indices: {err}") from None
    if not isinstance(raw, dict):
        raise HlotuneError(f"{path}: eval indices must be a JSON object of name -> index list")
    indices = {}
    for name, values in raw.items():
        valid = isinstance(values, list) and all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values
        )
        if not valid or len(set(values)) != len(values):
            raise HlotuneError(f"{path}: graph {name!r} needs a list of distinct indices >= 0")
        indices[name] = np.array(values, dtype=np.int64)
    return indices


def eval_indices_for(
    graph_name: str, indices_map: dict[str, np.ndarray], num_configs: int | None = None
) -> np.ndarray | None:
    """The config indices to score for a graph, or None if the protocol omits it (score all).

    With num_configs, raises HlotuneError if an index is out of range for the graph, which
    means the indices file belongs to another dataset version or collection.
    """
    indices = indices_map.get(graph_name)
    if indices is None or num_configs is None or indices.size == 0:
        return indices
    if indices.max() >= num_configs:
        raise HlotuneError(
            f"eval index {indices.max()} of graph {graph_name!r} is out of range: "
            f"it has {num_configs} configs"
        )
    return indices
