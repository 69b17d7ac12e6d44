"""Ranking metrics on hand-computed cases, OPA against a brute-force pair count, and the
paper-protocol indices and tile score on the shared TpuGraphs fixtures."""

import json

import numpy as np
import pytest

from hlotune.errors import HlotuneError
from hlotune.data.metrics import (
    GraphScores,
    average_ranks,
    eval_indices_for,
    kaggle_tile_score,
    kendall_tau,
    load_eval_indices,
    opa,
    score_graph,
    summarize,
    top_k_error,
)


def brute_force_opa(runtimes, scores) -> float:
    """OPA straight from its definition, one pair at a time."""
    right = pairs = 0.0
    for i in range(len(runtimes)):
        for j in range(i + 1, len(runtimes)):
            if runtimes[i] == runtimes[j]:
                continue
            pairs += 1
            true_order = np.sign(runtimes[i] - runtimes[j])
            predicted = np.sign(scores[i] - scores[j])
            right += 0.5 if predicted == 0 else float(predicted == true_order)
    return right / pairs


# --- top-K error ---------------------------------------------------------------------------


def test_top_k_error_by_hand():
    runtimes, scores = [3.0, 1.0, 2.0], [0.1, 0.2, 0.3]
    # Predicted order: config 0 (runtime 3), 1 (1), 2 (2); true best 1.
    assert top_k_error(runtimes, scores, 1) == pytest.approx(2.0)  # 3/1 - 1
    assert top_k_error(runtimes, scores, 2) == 0.0  # min(3, 1)/1 - 1
    assert top_k_error(runtimes, scores, 10) == 0.0  # k > 3 takes all configs


def test_top_k_error_partial_slowdown():
    # Predicted order: runtimes 5, 4, 2; best 2. top-1: 5/2-1 = 1.5; top-2: 4/2-1 = 1.0.
    runtimes, scores = [2.0, 4.0, 5.0], [3, 2, 1]
    assert top_k_error(runtimes, scores, 1) == pytest.approx(1.5)
    assert top_k_error(runtimes, scores, 2) == pytest.approx(1.0)
    assert top_k_error(runtimes, scores, 3) == 0.0


def test_top_k_error_tied_scores_take_the_earlier_config():
    # Scores all 0: the stable order is 0, 1, 2, so top-1 is config 0: 4/2 - 1 = 1.0.
    assert top_k_error([4.0, 2.0, 3.0], [0, 0, 0], 1) == pytest.approx(1.0)


def test_top_k_error_single_config_is_zero():
    assert top_k_error([7.0], [0.3], 1) == 0.0


def test_top_k_error_rejects_unlabelled_and_bad_input():
    with pytest.raises(ValueError, match="positive"):
        top_k_error([0, 0, 0], [1, 2, 3], 1)  # a test-split graph: runtimes 0
    with pytest.raises(ValueError, match="k must be"):
        top_k_error([1, 2], [1, 2], 0)
    with pytest.raises(ValueError, match="one length"):
        top_k_error([1, 2], [1, 2, 3], 1)
    with pytest.raises(ValueError, match="one length"):
        top_k_error([], [], 1)
    with pytest.raises(ValueError, match="finite"):
        top_k_error([1, 2], [np.nan, 1], 1)


def test_kaggle_tile_score_by_hand():
    # 6 configs, runtimes 1..6 predicted in reverse: top 5 = runtimes 6,5,4,3,2 -> 2 - 2/1 = 0.
    runtimes = np.arange(1.0, 7.0)
    assert kaggle_tile_score(runtimes, -runtimes) == pytest.approx(0.0)
    assert kaggle_tile_score(runtimes, runtimes) == 1.0


def test_kaggle_tile_score_on_a_real_tile_graph(tpugraphs_dir):
    (path,) = (tpugraphs_dir / "npz" / "tile" / "xla" / "valid").glob("*.npz")
    with np.load(path) as npz:
        runtimes = npz["config_runtime"] / npz["config_runtime_normalizers"]
    assert kaggle_tile_score(runtimes, scores=runtimes) == 1.0
    assert kaggle_tile_score(runtimes, scores=-runtimes) < 1.0


# --- Kendall tau -----------------------------------------------------------------------------


def test_average_ranks_are_scipys_rankdata():
    from scipy.stats import rankdata

    rng = np.random.default_rng(0)
    for _ in range(300):
        size = int(rng.integers(1, 40))
        tied = rng.integers(0, int(rng.integers(1, 8)), size).astype(float)  # many ties
        for values in (tied, rng.normal(size=size), list(tied)):
            assert np.array_equal(average_ranks(values), rankdata(values))


def test_kendall_tau_perfect_and_reversed():
    runtimes = [1.0, 2.0, 3.0, 4.0]
    assert kendall_tau(runtimes, [10, 20, 30, 40]) == pytest.approx(1.0)
    assert kendall_tau(runtimes, [4, 3, 2, 1]) == pytest.approx(-1.0)


def test_kendall_tau_by_hand():
    # runtimes [1,2,3], scores [1,3,2]: pairs (0,1)+ (0,2)+ (1,2)-; C=2, D=1, no ties.
    # tau-b = (2 - 1) / sqrt(3 * 3) = 1/3.
    assert kendall_tau([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)


def test_kendall_tau_with_tied_scores():
    # runtimes [1,2,3], scores [1,1,2]: pairs (0,1) score tie, (0,2)+, (1,2)+; C=2, D=0.
    # 3 pairs, 0 runtime ties, 1 score tie: tau-b = 2 / sqrt(3 * 2) = 0.8165.
    assert kendall_tau([1, 2, 3], [1, 1, 2]) == pytest.approx(2 / np.sqrt(6))


def test_kendall_tau_degenerate_cases_are_zero():
    assert kendall_tau([5.0], [1.0]) == 0.0  # one config
    assert kendall_tau([2, 2, 2], [1, 2, 3]) == 0.0  # all runtimes equal
    assert kendall_tau([1, 2, 3], [7, 7, 7]) == 0.0  # all scores equal


# --- OPA -------------------------------------------------------------------------------------


def test_opa_perfect_reversed_and_by_hand():
    assert opa([1, 2, 3, 4], [1, 2, 3, 4]) == 1.0
    assert opa([1, 2, 3, 4], [4, 3, 2, 1]) == 0.0
    # runtimes [1,2,3], scores [1,3,2]: (0,1) right, (0,2) right, (1,2) wrong -> 2/3.
    assert opa([1, 2, 3], [1, 3, 2]) == pytest.approx(2 / 3)


def test_opa_ties():
    # runtimes [1,1,2]: pair (0,1) is not comparable; (0,2), (1,2) are.
    # scores [5,0,5]: (0,2) tied score -> 0.5; (1,2) right -> 1. OPA = 1.5 / 2 = 0.75.
    assert opa([1, 1, 2], [5, 0, 5]) == 0.75
    # All scores equal: every comparable pair counts 0.5.
    assert opa([1, 2, 3], [0, 0, 0]) == 0.5


def test_opa_without_comparable_pairs_is_one():
    assert opa([4.0], [1.0]) == 1.0
    assert opa([2, 2, 2], [3, 1, 2]) == 1.0


def test_opa_matches_brute_force_with_ties():
    rng = np.random.default_rng(0)
    # Small integer ranges make many ties on both sides.
    runtimes = rng.integers(0, 30, size=300)
    scores = rng.integers(0, 20, size=300)
    assert opa(runtimes, scores) == pytest.approx(brute_force_opa(runtimes, scores), abs=1e-12)


def test_opa_matches_vectorised_pair_count_at_3000_configs():
    rng = np.random.default_rng(1)
    runtimes = rng.integers(0, 500, size=3000).astype(float)
    scores = runtimes + rng.normal(scale=100.0, size=3000).round()
    # All 9e6 ordered pairs at once; each unordered comparable pair appears twice.
    true_sign = np.sign(runtimes[:, None] - runtimes[None, :])
    predicted = np.sign(scores[:, None] - scores[None, :])
    comparable = true_sign != 0
    right = np.where(predicted == 0, 0.5, predicted == true_sign)[comparable].sum()
    assert opa(runtimes, scores) == pytest.approx(right / comparable.sum(), abs=1e-12)


def test_opa_handles_20000_configs():
    # 2e8 pairs: a c x c matrix would need gigabytes; the sort-based count does not.
    rng = np.random.default_rng(2)
    runtimes = rng.random(20_000)
    assert opa(runtimes, runtimes) == 1.0
    assert 0.45 < opa(runtimes, rng.random(20_000)) < 0.55


# --- per graph and averaged ----------------------------------------------------------------


def test_score_graph_and_summarize():
    perfect = score_graph("a", [1, 2, 3], [1, 2, 3], ks=(1, 2))
    assert perfect == GraphScores("a", 3, pytest.approx(1.0), 1.0, {1: 0.0, 2: 0.0})
    # Reversed: top-1 picks runtime 3 -> 3/1-1 = 2; top-2 picks 3, 2 -> 2/1-1 = 1.
    reversed_ = score_graph("b", [1, 2, 3], [3, 2, 1], ks=(1, 2))
    assert reversed_.top_k_error == {1: pytest.approx(2.0), 2: pytest.approx(1.0)}
    summary = summarize([perfect, reversed_])
    # Means: tau (1 + -1)/2 = 0, opa (1 + 0)/2 = 0.5, top-1 (0 + 2)/2 = 1, top-2 (0 + 1)/2 = 0.5.
    assert summary == {
        "graphs": 2,
        "kendall_tau": pytest.approx(0.0),
        "opa": 0.5,
        "top_k_error": {"1": pytest.approx(1.0), "2": pytest.approx(0.5)},
    }
    json.dumps(summary)  # ready for a report file


def test_summarize_rejects_nothing_and_mixed_ks():
    with pytest.raises(ValueError, match="no graphs"):
        summarize([])
    a = score_graph("a", [1, 2], [1, 2], ks=(1,))
    b = score_graph("b", [1, 2], [1, 2], ks=(1, 5))
    with pytest.raises(ValueError, match="same ks"):
        summarize([a, b])


# --- paper protocol --------------------------------------------------------------------------


def test_eval_indices_load_from_the_shared_fixture(tpugraphs_dir):
    indices = load_eval_indices(tpugraphs_dir / "eval_indices" / "xla_default.json")
    chosen = eval_indices_for("resnet_v1_50_official_batch_128_bf16", indices)
    assert chosen.dtype == np.int64 and chosen.shape == (1000,)
    assert len(np.unique(chosen)) == 1000
    assert eval_indices_for("not_a_validation_graph", indices) is None


def test_paper_protocol_on_the_layout_fixture(tpugraphs_dir):
    fixtures = tpugraphs_dir
    indices = load_eval_indices(fixtures / "eval_indices" / "xla_default.json")
    graph = fixtures / "npz" / "layout" / "xla" / "default" / "valid" / "unet_3d.4x4.bf16.npz"
    with np.load(graph) as npz:
        runtimes = npz["config_runtime"]
    chosen = eval_indices_for("unet_3d.4x4.bf16", indices, num_configs=len(runtimes))
    scores = score_graph("unet_3d.4x4.bf16", runtimes[chosen], runtimes[chosen], ks=(1, 10, 100))
    assert scores.num_configs == 1000
    assert scores.kendall_tau == pytest.approx(1.0) and scores.opa == 1.0


def test_eval_indices_for_checks_the_range():
    indices = {"g": np.array([0, 4, 9])}
    assert eval_indices_for("g", indices, num_configs=10).tolist() == [0, 4, 9]
    with pytest.raises(HlotuneError, match="out of range"):
        eval_indices_for("g", indices, num_configs=9)


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[1, 2, 3]",
        '{"g": 5}',
        '{"g": [1, "2"]}',
        '{"g": [1, -2]}',
        '{"g": [1, 1]}',
        '{"g": [true]}',
    ],
)
def test_load_eval_indices_rejects_malformed_files(tmp_path, text):
    path = tmp_path / "xla_default.json"
    path.write_text(text)
    with pytest.raises(HlotuneError, match="xla_default.json"):
        load_eval_indices(path)


def test_load_eval_indices_missing_file(tmp_path):
    with pytest.raises(HlotuneError, match="nope.json"):
        load_eval_indices(tmp_path / "nope.json")
