"""benchmarks/: every script answers --help, and the harness they share renders tables, writes
result files and resumes row logs as the scripts rely on."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = sorted(path.name for path in BENCHMARKS.glob("*.py") if path.name != "harness.py")


def _load_harness():
    """benchmarks/harness.py, imported as the scripts do but under a name of its own."""
    spec = importlib.util.spec_from_file_location("benchmarks_harness", BENCHMARKS / "harness.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


harness = _load_harness()


# Runs each script as `python SCRIPT --help` would, in one interpreter that pays for jax and torch
# once: its stdout, and the exit code (SystemExit's, else 0) or the exception it raised.
_HELP_DRIVER = """
import contextlib, io, json, os, runpy, sys
sys.path.insert(0, os.path.dirname(sys.argv[1]))  # as Python does for a script: harness.py
results = {}
for path in sys.argv[1:]:
    sys.argv, out = [path, "--help"], io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(path, run_name="__main__")
        code = 0
    except SystemExit as exit:
        code = exit.code or 0
    except Exception as error:  # the script's failure, told apart from the others'
        code = f"{type(error).__name__}: {error}"
    results[path] = [code, out.getvalue()]
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def helps() -> dict[str, tuple[int, str]]:
    """Every script's --help exit code and stdout, from a fresh interpreter."""
    paths = [str(BENCHMARKS / name) for name in SCRIPTS]
    done = subprocess.run([sys.executable, "-c", _HELP_DRIVER, *paths], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout)
    return {name: tuple(results[path]) for name, path in zip(SCRIPTS, paths, strict=True)}


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_runs(helps, script):
    code, stdout = helps[script]
    assert code == 0, code
    assert stdout.startswith("usage:"), stdout[-2000:]


def test_markdown():
    table = harness.markdown(("name", "ms", "note"), [["a", "1.5", "x"], ["bb", "12.25", ""]], align="lrl")
    assert table == "| name | ms | note |\n|---|---:|---|\n| a | 1.5 | x |\n| bb | 12.25 | |"


def test_markdown_printed_a_row_at_a_time_is_the_whole_table():
    header, rows = ("a", "b"), [["1", "2"], ["3", "4"]]
    assert "\n".join([harness.markdown_header(header), *map(harness.markdown_row, rows)]) == harness.markdown(header, rows)


def test_markdown_refuses_a_row_of_another_width():
    with pytest.raises(ValueError, match="3 cells under 2 columns"):
        harness.markdown(("a", "b"), [["1", "2", "3"]])
    with pytest.raises(ValueError, match="for 2 columns"):
        harness.markdown(("a", "b"), [], align="lrr")


def test_text_table():
    table = harness.text_table(("module", "nodes"), [("fixture", "3,163"), ("big", "500,000")], align="lr")
    assert table.splitlines() == ["module     nodes", "----------------", "fixture    3,163", "big      500,000"]
    plain = harness.text_table(("a", "note"), [("1", ""), ("22", "x")], rule=False)
    assert plain.splitlines() == ["a   note", "1", "22  x"]  # no rule, no trailing spaces


def test_lists():
    assert harness.int_list("1, 2,,3") == [1, 2, 3]
    assert harness.text_list("") == []
    assert harness.text_list("go:nmt@small,zoo:vit@small") == ["go:nmt@small", "zoo:vit@small"]


def test_parser_common_arguments():
    parser = harness.parser("Title line.\ncontinued.\n\nDetails.", out=None, seed=0, json=False, repeats=3)
    assert parser.description == "Title line.\ncontinued."
    args = parser.parse_args([])
    assert (args.out, args.seed, args.json, args.repeats) == (None, 0, False, 3)
    args = parser.parse_args(["--out", "x.json", "--seed", "7", "--json"])
    assert (args.out, args.seed, args.json) == (Path("x.json"), 7, True)
    with pytest.raises(KeyError):
        harness.parser("Doc.", not_common=1)


def test_write_json(tmp_path):
    path = tmp_path / "new" / "result.json"
    harness.write_json(path, {"b": [1, 2]})
    assert path.read_text() == json.dumps({"b": [1, 2]}, indent=1)
    harness.write_json(path, {"b": 3}, end="\n")
    assert path.read_text() == '{\n "b": 3\n}\n'
    assert [p.name for p in path.parent.iterdir()] == ["result.json"]  # no temporary file left


@pytest.mark.parametrize("lines", [False, True])
def test_rows_round_trip(tmp_path, lines):
    path = tmp_path / "rows"
    rows = [{"program": "a", "x": 1.5}, {"program": "b", "x": None}]
    harness.write_rows(path, rows, lines=lines)
    assert harness.read_rows(path, lines=lines) == rows
    expected = "".join(json.dumps(r) + "\n" for r in rows) if lines else json.dumps(rows, indent=1)
    assert path.read_text() == expected


def test_a_resumed_log_measures_only_what_it_has_not(tmp_path):
    path = tmp_path / "rows.jsonl"
    harness.RowLog(path, lines=True).add({"program": "b", "x": 1})
    resumed = harness.RowLog(path, lines=True)
    assert resumed.todo("program", ["a", "b", "c"]) == ["a", "c"]


@pytest.mark.parametrize("text", [None, '{"program": "a"}\n{"program": '])
def test_a_missing_or_corrupt_results_file_exits_in_one_line(tmp_path, text):
    path = tmp_path / "rows.jsonl"
    if text is not None:
        path.write_text(text)
    with pytest.raises(SystemExit) as exit:
        harness.read_rows(path, lines=True)
    message = str(exit.value)
    assert message.startswith(f"{path}: not a readable results file (") and "\n" not in message
    assert ("FileNotFoundError" if text is None else "JSONDecodeError") in message


@pytest.mark.parametrize("lines", [False, True])
def test_row_log_resumes_after_the_process_dies(tmp_path, lines):
    """Rows a killed process added are there for the next; the resumed run adds after them."""
    path = tmp_path / "log"
    child = textwrap.dedent(f"""
        import os, signal, sys
        from pathlib import Path
        sys.path.insert(0, {str(BENCHMARKS)!r})  # as a script in benchmarks/ has it
        import harness
        log = harness.RowLog(Path({str(path)!r}), lines={lines})
        log.add({{"program": "a", "ms": 1.0}})
        log.add({{"program": "b", "ms": 2.0}})
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    assert done.returncode == -9, done.stderr
    log = harness.RowLog(path, lines=lines)
    assert log.rows == [{"program": "a", "ms": 1.0}, {"program": "b", "ms": 2.0}]
    assert log.done("program") == {"a", "b"}
    log.add({"program": "c", "ms": 3.0})
    assert [r["program"] for r in harness.read_rows(path, lines=lines)] == ["a", "b", "c"]


def test_row_log_starts_empty(tmp_path):
    log = harness.RowLog(tmp_path / "missing.jsonl", lines=True)
    assert log.rows == [] and log.done("program") == set()
    assert not (tmp_path / "missing.jsonl").exists()


def test_spread():
    spread = harness.Spread((3.0, 1.0, 2.0, 10.0))
    assert (spread.median, spread.mean) == (2.5, 4.0)
    assert spread.range() == "1.00-10.00"
    assert spread.range(".0f") == "1-10"


def test_timed_runs_at_least_once_and_keeps_the_last_value():
    calls = []
    seconds, value = harness.timed(0, lambda: calls.append(len(calls)) or len(calls))
    assert (len(seconds.values), value, calls) == (1, 1, [0])
    seconds, value = harness.timed(3, lambda: calls.append(len(calls)) or len(calls))
    assert (len(seconds.values), value) == (3, 4)
    assert all(s >= 0 for s in seconds.values)


def test_save_figure(tmp_path):
    from matplotlib import pyplot

    figure, axes = harness.subplots(figsize=(2, 2))
    axes.plot([0, 1], [1, 0])
    path = tmp_path / "plots" / "line.png"
    harness.save_figure(figure, path, dpi=50)
    assert path.read_bytes().startswith(b"\x89PNG")
    assert figure.number not in pyplot.get_fignums()
