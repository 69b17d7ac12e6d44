"""docs/extending.md's examples run as written, and the tune really uses their strategy and runner."""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path

import pytest

import hlotune
from hlotune.compiler.measure import MeasureSettings
from hlotune.tuning.tuner import tune

DOC = Path(__file__).resolve().parent.parent / "docs" / "extending.md"
FAST = MeasureSettings(rounds=2, repeats=2)


def _examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


def _run(code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """The example executed as a script, its tunes in a fresh database, fast and quiet."""
    monkeypatch.setenv("HLOTUNE_DB", str(tmp_path / "tune.sqlite"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(hlotune, "tune", partial(tune, settings=FAST, progress=False), raising=False)
    namespace: dict = {"__name__": "__main__"}
    exec(compile(code, str(DOC), "exec"), namespace)  # noqa: S102 (the doc's own example)
    return namespace


def test_the_doc_has_one_strategy_and_one_runner_example_under_40_lines():
    strategy, runner = _examples()
    assert "class NearBest(Strategy)" in strategy and "strategy=strategy" in strategy
    assert "class CountingRunner" in runner and "runner=runner" in runner
    assert len(strategy.splitlines()) < 40 and len(runner.splitlines()) < 40


def test_the_custom_strategy_is_asked_and_names_the_result(tmp_path, monkeypatch):
    namespace = _run(_examples()[0], tmp_path, monkeypatch)
    strategy, result = namespace["strategy"], namespace["result"]
    assert strategy.asks >= 1
    assert result.strategy == "near-best"
    assert result.measurements == 3  # budget 3: the default and the two configs it asked
    asked = [config for config in strategy.costs if not config.is_default]
    assert len(asked) == 2 and asked[0] in strategy.seen  # told back what it asked
    assert (tmp_path / "tune.sqlite").is_file()


def test_the_custom_runner_measures_every_batch(tmp_path, monkeypatch):
    namespace = _run(_examples()[1], tmp_path, monkeypatch)
    runner, result = namespace["runner"], namespace["result"]
    assert runner.batches >= 1 and runner.configs >= 2  # the two searched configs at least
    assert result.measurements == 3
    assert result.fingerprint and runner.inner._measurer is None  # closed by the example
