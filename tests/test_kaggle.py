"""Kaggle submission IDs, config ranking, and the CSV writer and reader."""

import numpy as np
import pytest

from hlotune.data.kaggle import read_submission, submission_id, top_configs, write_submission
from hlotune.errors import HlotuneError


def test_submission_ids():
    assert submission_id("tile", "xla", None, "abc123") == "tile:xla:abc123"
    assert submission_id("layout", "xla", "random", "bert") == "layout:xla:random:bert"
    assert submission_id("layout", "nlp", "default", "g") == "layout:nlp:default:g"
    with pytest.raises(ValueError):
        submission_id("tile", "xla", "random", "g")
    with pytest.raises(ValueError):
        submission_id("layout", "xla", None, "g")
    with pytest.raises(ValueError):
        submission_id("flags", "xla", None, "g")


def test_top_configs_lowest_score_first():
    scores = np.array([0.5, 0.1, 0.9, 0.3, 0.7, 0.2, 0.8])
    # Ascending: 0.1 (1), 0.2 (5), 0.3 (3), 0.5 (0), 0.7 (4), 0.8 (6), 0.9 (2).
    assert top_configs(scores, "layout") == [1, 5, 3, 0, 4, 6, 2]
    assert top_configs(scores, "tile") == [1, 5, 3, 0, 4]
    assert top_configs([2.0, 1.0], "tile") == [1, 0]  # fewer than 5 configs: all of them
    assert top_configs([1.0, 0.0, 1.0, 0.0], "layout") == [1, 3, 0, 2]  # ties: lower index first
    assert all(type(i) is int for i in top_configs(scores, "tile"))
    with pytest.raises(ValueError):
        top_configs(scores, "flags")


def test_round_trip(tmp_path):
    rows = {
        "tile:xla:abc": [3, 0, 4, 1, 2],
        "layout:nlp:default:has,comma": [2, 0, 1],
        "layout:xla:random:g": [0],
    }
    path = tmp_path / "submission.csv"
    write_submission(path, rows)
    assert path.read_text().splitlines()[:2] == ["ID,TopConfigs", "tile:xla:abc,3;0;4;1;2"]
    back = read_submission(path)
    assert back == rows
    assert list(back) == list(rows)  # row order kept


def test_write_rejects_rows_without_configs(tmp_path):
    with pytest.raises(ValueError, match="without configs"):
        write_submission(tmp_path / "s.csv", {"tile:xla:a": []})


def test_reader_skips_blank_lines_and_a_bom(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("\ufeffID,TopConfigs\n\ntile:xla:a,1;0\n\n", encoding="utf-8")
    assert read_submission(path) == {"tile:xla:a": [1, 0]}


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("", ":1:"),  # empty file: no header
        ("tile:xla:a,1;2\n", ":1:"),  # header missing
        ("ID,Configs\ntile:xla:a,1\n", ":1:"),  # wrong header
        ("ID,TopConfigs\ntile:xla:a,1;x;2\n", ":2:"),  # not an integer
        ("ID,TopConfigs\ntile:xla:a,1.5\n", ":2:"),  # not an integer
        ("ID,TopConfigs\ntile:xla:a,\n", ":2:"),  # no configs
        ("ID,TopConfigs\ntile:xla:a,1;;2\n", ":2:"),  # empty item
        ("ID,TopConfigs\ntile:xla:a,1;-3\n", ":2:"),  # negative index
        ("ID,TopConfigs\ntile:xla:a,1;2;1\n", ":2:"),  # repeated index
        ("ID,TopConfigs\ntile:xla:a\n", ":2:"),  # one field
        ("ID,TopConfigs\ntile:xla:a,1,2\n", ":2:"),  # three fields
        ("ID,TopConfigs\ntile:xla:a,1\ntile:xla:b,2\ntile:xla:a,3\n", ":4:"),  # duplicate ID
    ],
)
def test_reader_rejects_malformed_files(tmp_path, text, where):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(HlotuneError, match=f"bad.csv{where}") as err:
        read_submission(path)
    assert "\n" not in str(err.value)


def test_reader_missing_file(tmp_path):
    with pytest.raises(HlotuneError, match="missing.csv"):
        read_submission(tmp_path / "missing.csv")


def test_reader_rejects_binary(tmp_path):
    path = tmp_path / "binary.csv"
    path.write_bytes(b"ID,TopConfigs\n\xff\xfe\x00\n")
    with pytest.raises(HlotuneError, match="binary.csv"):
        read_submission(path)
