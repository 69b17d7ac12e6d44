"""Leave-family-out cross-validation (`hlotune cv`): folds hold whole families,
and every model trained per fold is scored on the families it never saw."""

from __future__ import annotations

import json
import shutil
import statistics

import pytest

import hlotune
from hlotune.cli import main
from hlotune.evaluation.crossval import partition
from hlotune.data.builtin import ROOT, SPLITS
from hlotune.errors import HlotuneError
from hlotune.train import TrainSettings

FAMILIES = {"a": 5, "b": 4, "c": 4, "d": 3, "e": 2, "f": 2, "g": 1}  # graphs per family
GRAPHS = [family for family, count in FAMILIES.items() for _ in range(count)]
BUILTIN_FAMILIES = sum(map(len, SPLITS.values()))


def cv(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["cv", "-q", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_partition_deals_whole_families_into_balanced_folds():
    for seed in range(5):
        folds = partition(GRAPHS, 3, seed)
        dealt = [family for fold in folds for family in fold]
        assert sorted(dealt) == sorted(FAMILIES)  # every family in exactly one fold
        sizes = [sum(FAMILIES[family] for family in fold) for fold in folds]
        assert sum(sizes) == len(GRAPHS) and max(sizes) - min(sizes) <= 1
        assert partition(GRAPHS, 3, seed) == folds  # deterministic given the seed
    same_size = ["x", "y", "z", "w"] * 3
    assert len({str(partition(same_size, 2, seed)) for seed in range(6)}) > 1  # the seed deals
    with pytest.raises(HlotuneError, match="at least 2"):
        partition(GRAPHS, 1, 0)
    with pytest.raises(HlotuneError, match="more than the data's 7 families"):
        partition(GRAPHS, 8, 0)


def test_cv_of_gbdt_rank_on_two_builtin_splits(capsys):
    code, out, err = cv(capsys, "--folds", "2", "--model", "baseline:gbdt-rank",
                        "--data", "builtin:flags/valid", "builtin:flags/test", "--json")
    assert code == 0, err
    result = json.loads(out)
    folds = result["folds"]
    assert result["collection"] == "flags" and len(folds) == 2
    families = [family for fold in folds for family in fold["families"]]
    assert sorted(families) == sorted(SPLITS["valid"] + SPLITS["test"])
    graphs = [g["graph"] for fold in folds for g in fold["evaluation"]["per_graph"]]
    files = len(list((ROOT / "flags" / "valid").glob("*.npz")) + list((ROOT / "flags" / "test").glob("*.npz")))
    assert len(graphs) == len(set(graphs)) == files  # every graph scored once
    for fold in folds:
        held_out = {g["graph"].partition("@")[0] for g in fold["evaluation"]["per_graph"]}
        assert held_out == set(fold["families"])
        assert fold["train_graphs"] + fold["evaluation"]["graphs"] == files
    taus = [fold["evaluation"]["kendall_tau"] for fold in folds]
    assert result["mean"]["kendall_tau"] == pytest.approx(statistics.fmean(taus))
    assert result["std"]["kendall_tau"] == pytest.approx(statistics.stdev(taus))
    assert set(result["mean"]) == {"kendall_tau", "opa", "top_k_error", "noise_ceiling_tau"}
    assert set(result["std"]["top_k_error"]) == {"1", "5", "10"}
    assert result["mean"]["kendall_tau"] > 0.1  # chance is 0


def test_cv_text_report_of_an_untrained_baseline(capsys):
    code, out, err = cv(capsys, "--folds", "3", "--seed", "1", "--model", "baseline:analytical",
                        "--data", "builtin:flags")
    assert code == 0, err
    lines = out.splitlines()
    assert f"{len(list((ROOT / 'flags').rglob('*.npz')))} graphs" in lines[0] and "3 folds, seed 1" in lines[0]
    assert [line.split()[:2] for line in lines[1:4]] == [["fold", "1"], ["fold", "2"], ["fold", "3"]]
    assert lines[4].startswith("  mean ± std: tau ") and "noise ceiling" in lines[4]


def test_cv_trains_a_gnn_per_fold_with_the_training_options(tmp_path, one_thread):
    for name in ("mlp@tiny", "mlp@small", "cnn@tiny", "cnn@small"):  # the smallest graphs
        for file in (ROOT / "flags").rglob(f"{name}.*"):
            shutil.copy(file, tmp_path)
    result = hlotune.cross_validate(tmp_path, "gnn", folds=2,
                                    settings=TrainSettings(epochs=1, loss="mse"))
    assert sorted(fold.families for fold in result.folds) == [["cnn"], ["mlp"]]
    assert all(fold.train_graphs == fold.evaluation.graphs == 2 for fold in result.folds)
    assert all(-1 <= fold.evaluation.kendall_tau <= 1 for fold in result.folds)


@pytest.mark.parametrize(
    "args, fragment",
    [
        (("--folds", "1", "--model", "baseline:analytical"), "--folds must be at least 2"),
        (("--folds", str(BUILTIN_FAMILIES + 1), "--model", "baseline:gbdt"),
         f"more than the data's {BUILTIN_FAMILIES} families"),
        (("--model", "pretrained:flags"), "pretrained:flags cannot be cross-validated"),
        (("--model", "baseline:gbdt@builtin:flags/train"), "trained on fixed data"),
        (("--model", "gnn", "--init-from", "pretrained:layout"), "cannot cross-validate with --init-from"),
    ],
)
def test_bad_cv_input_is_a_one_line_error(capsys, args, fragment):
    code, out, err = cv(capsys, "--data", "builtin:flags", *args)
    assert code == 1 and out == ""
    assert len(err.strip().splitlines()) == 1 and fragment in err, err


@pytest.mark.parametrize(
    "args, fragment",
    [
        (("--model", "baseline:random", "--folds", "3"), "--folds and --seed are options of hlotune cv"),
        (("--model", "gnn"), "gnn is a GNN to train: `hlotune cv` trains one per fold"),
    ],
)
def test_cv_options_on_eval_are_one_line_errors(capsys, args, fragment):
    code = main(["eval", "--data", "builtin:flags/test", *args])
    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1 and fragment in err, err


def test_the_old_spelling_eval_cv_notes_the_new_one_and_does_what_cv_does(capsys):
    args = ("--folds", "3", "--seed", "2", "--model", "baseline:analytical", "--data",
            "builtin:flags/valid", "builtin:flags/test", "--json")
    code, out, err = cv(capsys, *args)
    assert code == 0 and err == "", err
    old = main(["eval", "--cv", "family", "-q", *args])
    old_out, old_err = capsys.readouterr()
    assert old == 0
    assert old_err == ("hlotune: note: 'eval --cv' is now 'hlotune cv'; the old spelling goes in "
                       "the next release\n")
    results = [json.loads(out), json.loads(old_out)]
    for result in results:  # all but the timings
        del result["seconds"]
        for fold in result["folds"]:
            del fold["train_seconds"]
    assert results[0] == results[1]
    bad = main(["eval", "--cv", "family", "--data", "builtin:flags", "--model", "baseline:random",
                "--predictions"])
    note, error = capsys.readouterr().err.splitlines()
    assert bad == 1 and note.startswith("hlotune: note:") and "no --protocol paper" in error
