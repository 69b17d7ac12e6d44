"""`hlotune report`: the tuning and evaluation pages, their content, and a real headless browser.

The browser test drives Chromium from the OS packages through selenium with the chromedriver
beside it (never a downloaded one); it skips, saying why, where either is missing (fails
under CI, which installs them).
"""

from __future__ import annotations

import html
import itertools
import json
import math
import re
import shutil
from pathlib import Path

import pytest
from conftest import need

from hlotune.cli import main
from hlotune.compiler.configs.config import DEFAULT_CONFIG, CompileConfig
from hlotune.compiler.configs.flags import FlagConfig
from hlotune.compiler.xla.hook import compile_config
from hlotune.compiler.configs.layouts import LayoutSpace
from hlotune.compiler.measurement.measure import FAILED, OK, MeasureSettings
from hlotune.data.builtin import resolve
from hlotune.data.dataset import Dataset
from hlotune.evaluation.evaluate import evaluate
from hlotune.evaluation.scorers import load_scorer
from hlotune.programs import load_program
from hlotune.report.importance import choice_effects, choices
from hlotune.report.page import Page
from hlotune.report.profile import profile_section
from hlotune.tuning.storage import Record, TuningDatabase
from hlotune.tuning.tuner import tune

BUILTIN_FLAGS_TEST = resolve("builtin:flags/test")
FAST = MeasureSettings(rounds=2, repeats=2, default_replicas=1)
PROGRAMS = ("zoo:mlp@tiny", "zoo:mlp@tiny-b2")


@pytest.fixture(scope="module")
def tuned(tmp_path_factory) -> Path:
    """A real tuning database: two programs, tiny budgets."""
    path = tmp_path_factory.mktemp("db") / "tuning.sqlite"
    for program, space, budget in zip(PROGRAMS, ("all", "flags"), (6, 3)):
        tune(program, space=space, strategy="random", budget=budget, batch=3, db=path,
             settings=FAST, progress=False)
    return path


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory) -> Path:
    """`hlotune eval --json --predictions` of the flags model on two built-in graphs."""
    folder = tmp_path_factory.mktemp("data")
    for name in ("unet@tiny", "vit@tiny"):
        for suffix in (".npz", ".json"):
            shutil.copy(BUILTIN_FLAGS_TEST / f"{name}{suffix}", folder)
    result = evaluate(Dataset(str(folder)), load_scorer("pretrained:flags"), predictions=True)
    path = folder / "eval.json"
    path.write_text(json.dumps(result.to_json()))
    return path


def _report(*argv: str) -> int:
    return main(["report", *argv])


def _figures(page: str) -> int:
    return page.count("<figure><svg")


def _assert_self_contained(page: str) -> None:
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "<script" not in page and "<link" not in page


def test_the_tuning_report_has_a_section_per_program(tuned, tmp_path, capsys):
    out = tmp_path / "all.html"
    assert _report("--db", str(tuned), "--out", str(out)) == 0
    assert "2 program(s)" in capsys.readouterr().out
    page = out.read_text()
    _assert_self_contained(page)
    assert page.count("<h2>") == 2 and all(html.escape(p) in page for p in PROGRAMS)
    assert _figures(page) >= 2 * 2  # best so far and spread each; effects where estimable
    with TuningDatabase(tuned) as db:
        for entry in db.programs():
            for record in db.records(entry.fingerprint):
                assert html.escape(", ".join(choices(record.config)) or "XLA's default") in page
            assert html.escape(db.export(entry.fingerprint, "xla_flags").text) in page
            assert f"hlotune db export {entry.fingerprint[:12]} --format json" in page

    one = tmp_path / "one.html"
    assert _report("--db", str(tuned), PROGRAMS[1], "--out", str(one)) == 0
    page = one.read_text()
    assert page.count("<h2>") == 1 and PROGRAMS[1] in page and f"{PROGRAMS[0]} (" not in page


def test_the_tuning_report_shows_where_the_time_goes(tuned, tmp_path):
    """Kernel tables of the default and the chosen config, named as in the compiled module."""
    out = tmp_path / "profile.html"
    assert _report("--db", str(tuned), PROGRAMS[0], "--out", str(out)) == 0
    page = out.read_text()
    assert page.count("<h3>Where the time goes</h3>") == 1 and "No profile" not in page
    with TuningDatabase(tuned) as db:
        decision = next(entry.best for entry in db.programs() if entry.name == PROGRAMS[0])
    configs = [DEFAULT_CONFIG] + ([] if decision.kept_default else [decision.chosen])
    tables = re.findall(r"<table>(.*?)</table>", page.split("<h3>Where the time goes</h3>")[1])
    assert len(tables) == len(configs)
    for table, config in zip(tables, configs):
        assert "<th>HLO ops</th><th>source lines</th>" in table
        names = set(re.findall(r"<tr><td>([^<.][^<]*)</td>", table))
        instructions = set(re.findall(r"%([\w.\-]+) = ", _compiled_text(PROGRAMS[0], config)))
        assert names and names <= instructions, names - instructions
        assert any("fusion" in name for name in names)

    bare = tmp_path / "bare.html"
    assert _report("--db", str(tuned), PROGRAMS[0], "--out", str(bare), "--no-profile") == 0
    assert "Where the time goes" not in bare.read_text()


def _compiled_text(program: str, config: CompileConfig) -> str:
    """The module XLA compiles for `config`, as the measuring worker compiles it."""
    space = LayoutSpace(load_program(program))
    return compile_config(space.build(config.layout).lower(*space.leaves), config).as_text()


def test_a_program_that_changed_since_its_tune_is_not_profiled():
    page = Page("t")
    profile_section(page, PROGRAMS[0], "0" * 64, None)
    assert "No profile: zoo:mlp@tiny no longer computes what was tuned" in page.render()


def test_the_evaluation_report_plots_predictions_curves_and_the_ceiling(evaluated, tmp_path):
    out = tmp_path / "eval.html"
    assert _report("--eval", str(evaluated), "--out", str(out)) == 0
    page = out.read_text()
    _assert_self_contained(page)
    assert _figures(page) == 3 and "unet@tiny" in page and "noise ceiling" in page

    result = json.loads(evaluated.read_text())
    for graph in result["per_graph"]:
        assert graph["noise_ceiling_tau"] is not None
        assert len(graph["runtimes"]) == len(graph["scores"]) == graph["configs"]
        for k, error in graph["top_k_error"].items():
            assert error == pytest.approx(_top_k_slowdown(graph["runtimes"], graph["scores"], int(k)))

    for graph in result["per_graph"]:  # an eval --json without --predictions
        del graph["runtimes"], graph["scores"]
    bare = tmp_path / "bare.json"
    bare.write_text("some text first\n" + json.dumps(result))
    assert _report("--eval", str(bare), "--out", str(out)) == 0
    page = out.read_text()
    assert _figures(page) == 2 and "--predictions" in page


def _top_k_slowdown(runtimes: list[float], scores: list[float], k: int) -> float:
    """Top-k error, a second time by hand: the best runtime among the k lowest scores (the
    earlier config first among equal ones) over the best runtime of all, minus one."""
    top = sorted(range(len(scores)), key=lambda i: (scores[i], i))[:k]
    return min(runtimes[i] for i in top) / min(runtimes) - 1


def test_bad_input_is_one_line_and_exit_1(tuned, evaluated, tmp_path, capsys):
    out = str(tmp_path / "x.html")
    (tmp_path / "other.json").write_text('{"graphs": 3}')
    (tmp_path / "text.json").write_text("not json")
    cases = [
        (("--eval", str(tmp_path / "other.json")), "not the JSON of hlotune eval"),
        (("--eval", str(tmp_path / "text.json")), "not JSON"),
        (("--eval", str(tuned)), "not JSON"),
        (("--eval", str(tmp_path / "missing.json")), "cannot read"),
        (("--eval", str(evaluated), "zoo:mlp@tiny"), "not of --eval"),
        (("--db", str(tmp_path / "missing.sqlite")), "no tuning database"),
        (("--db", str(tuned), "0123"), "no program"),
    ]
    for argv, message in cases:
        assert _report(*argv, "--out", out) == 1
        err = capsys.readouterr().err
        assert err.startswith("hlotune: error: ") and message in err and err.count("\n") == 1
    assert not Path(out).exists()


def _record(config: CompileConfig, cost: float, status: str = OK) -> Record:
    return Record("p", config.key, status, "", cost * 1e6 if status == OK else None, 1e6, 0.01,
                  (1,), 0.1, 0.0)


def test_choice_effects_recover_a_known_landscape():
    """Each choice multiplies the runtime by a known factor; every combination is measured."""
    factors = {"xla_cpu_use_xnnpack": (False, 0.8), "xla_cpu_enable_fast_min_max": (False, 1.1),
               "xla_backend_optimization_level": (2, 1.0)}
    records = []
    for chosen in itertools.product((False, True), repeat=len(factors)):
        options = {name: value for (name, (value, _)), on in zip(factors.items(), chosen) if on}
        cost = math.prod(f for (_, f), on in zip(factors.values(), chosen) if on)
        records.append(_record(CompileConfig(FlagConfig.from_dict(options)), cost))
    crash = CompileConfig(FlagConfig.from_dict({"xla_disable_hlo_passes": ["cse"]}))
    records.append(_record(crash, math.inf, FAILED))

    exact = {e.choice: e for e in choice_effects(records, ridge=0.0)}
    for name, (value, factor) in factors.items():
        effect = exact[f"{name}={value}"]
        assert effect.effect == pytest.approx(factor - 1, abs=1e-9) and effect.configs == 4
    shrunk = {e.choice: e.effect for e in choice_effects(records)}
    assert -0.2 < shrunk["xla_cpu_use_xnnpack=False"] < -0.1
    assert 0.0 < shrunk["xla_cpu_enable_fast_min_max=False"] < 0.1
    failed = exact["disable pass cse"]
    assert (failed.effect, failed.configs, failed.failed) == (None, 0, 1)
    assert [e.choice for e in choice_effects(records)][:2] == [
        "xla_cpu_use_xnnpack=False", "xla_cpu_enable_fast_min_max=False"]


def _browser():
    """A headless Chromium from the OS packages, driven by its own chromedriver."""
    webdriver = need("selenium.webdriver", install="pip install selenium")
    apt = "apt-get install chromium chromium-driver"
    chromium = need("chromium", "chromium-browser", install=apt, executable=True)
    driver = need("chromedriver", install=apt, executable=True)
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1200,900"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # The driver's path, given: selenium-manager never looks for (or downloads) one.
    return webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=driver))


_FIGURES_LOADED = """
const images = [...document.images].map(i => i.complete && i.naturalWidth > 0);
const svgs = [...document.querySelectorAll('figure > svg')].map(s => {
    const box = s.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && s.querySelectorAll('path, text, use').length > 0;
});
return {images, svgs, requests: performance.getEntriesByType('resource').length};
"""


def test_both_pages_render_in_a_headless_browser(tuned, evaluated, tmp_path, monkeypatch):
    monkeypatch.setenv("SE_OFFLINE", "true")
    pages = {"tuning": tmp_path / "tuning.html", "eval": tmp_path / "eval.html"}
    assert _report("--db", str(tuned), "--out", str(pages["tuning"])) == 0
    assert _report("--eval", str(evaluated), "--out", str(pages["eval"])) == 0
    browser = _browser()
    try:
        for name, path in pages.items():
            browser.get(path.resolve().as_uri())
            loaded = browser.execute_script(_FIGURES_LOADED)
            assert len(loaded["svgs"]) == _figures(path.read_text()) > 0, name
            assert all(loaded["svgs"]) and all(loaded["images"]), name
            assert loaded["requests"] == 0, f"{name} fetched something"
            errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
            assert errors == [], name
    finally:
        browser.quit()
