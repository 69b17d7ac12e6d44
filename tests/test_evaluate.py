"""The evaluation harness: any scorer, real files, the paper protocol and the noise ceiling."""

from __future__ import annotations

import numpy as np
import pytest

from hlotune.data import metrics
from hlotune.data.dataset import Dataset
from hlotune.data.metrics import target_runtimes
from hlotune.data.sample import FlagConfigArrays, GraphSample
from hlotune.errors import HlotuneError
from hlotune.evaluation.evaluate import evaluate, noise_ceiling


def test_perfect_and_reversed_scorers_on_the_fixtures(tpugraphs_dir):
    for folder in ("npz/tile", "npz/layout"):
        perfect = evaluate(Dataset(tpugraphs_dir / folder), target_runtimes)
        assert perfect.kendall_tau == pytest.approx(1.0) and perfect.opa == pytest.approx(1.0)
        assert all(v == 0 for v in perfect.top_k_error.values())
        reversed_ = evaluate(Dataset(tpugraphs_dir / folder), lambda s: -target_runtimes(s))
        assert reversed_.opa < 0.05
    # Only the labelled files count: the tile and layout test splits are skipped.
    assert perfect.graphs == 2


def test_scores_match_a_direct_computation(tpugraphs_dir):
    sample = Dataset(tpugraphs_dir / "npz/layout/xla/random/train")[0]
    scores = np.random.default_rng(0).random(sample.num_configs)
    result = evaluate([sample], lambda s: scores)
    runtimes = sample.configs.config_runtime
    assert result.kendall_tau == pytest.approx(metrics.kendall_tau(runtimes, scores))
    assert result.opa == pytest.approx(metrics.opa(runtimes, scores))
    assert result.top_k_error["10"] == pytest.approx(metrics.top_k_error(runtimes, scores, 10))


def test_paper_protocol_scores_the_official_indices(tpugraphs_dir):
    indices = metrics.load_eval_indices(tpugraphs_dir / "eval_indices/xla_default.json")
    dataset = Dataset(tpugraphs_dir / "npz/layout/xla/default/valid")
    result = evaluate(dataset, target_runtimes, eval_indices=indices)
    assert result.per_graph[0]["configs"] == 1000


def test_noise_ceiling_from_odd_and_even_samples(tpugraphs_dir):
    graph = Dataset(tpugraphs_dir / "npz/tile/xla/train")[0].graph
    true = np.array([100.0, 200.0, 300.0, 400.0])
    samples = (true[:, None] + np.array([[1, -1, 2, -2]])).astype(np.int64)  # clean separation
    sample = GraphSample(graph, FlagConfigArrays(np.zeros((4, 1), np.float32), np.array(["x"]),
                                            true.astype(np.int64), samples))
    assert noise_ceiling(sample) == pytest.approx(1.0)
    noisy = samples.copy()
    noisy[:, 1::2] = noisy[::-1, 1::2]  # odd samples rank the configs the other way round
    assert noise_ceiling(GraphSample(graph, FlagConfigArrays(sample.configs.config_feat, np.array(["x"]),
                                                        true.astype(np.int64), noisy))) == pytest.approx(-1.0)


def test_unlabelled_data_is_not_scored(tpugraphs_dir):
    with pytest.raises(HlotuneError, match="no labelled graphs"):
        evaluate(Dataset(tpugraphs_dir / "npz/tile/xla/test"), target_runtimes)
