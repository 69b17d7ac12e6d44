"""Every choice the command line offers is a registry's, and its --help has a line for each: the
spaces, strategies, models and runners of `hlotune tune`, the allocations and runners of `hlotune
fleet tune`; the defaults are TuneOptions'. Help comes from the parsers, not from a process."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from hlotune.cli import _parser
from hlotune.evaluation.registry import FOLDER, MODELS, model_kind
from hlotune.fleet.allocation import ALLOCATIONS
from hlotune.tuning.commands import _tune_options
from hlotune.tuning.models.registry import PRIORS, tune_models
from hlotune.tuning.options import TuneOptions
from hlotune.tuning.recipes.registry import SPACES
from hlotune.tuning.runners import registry as runners
from hlotune.tuning.strategies.registry import STRATEGIES


def help_of(*path: str) -> str:
    """`hlotune PATH --help`, its whitespace collapsed: a line wrapped reads as one."""
    parser = _parser()
    for name in path:
        (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        parser = commands.choices[name]
    return " ".join(parser.format_help().split())


def lines(choices: dict[str, str]) -> list[str]:
    return [f"{name}: {what}" for name, what in choices.items()]


def test_tune_help_lists_every_space_strategy_model_and_runner():
    text = help_of("tune")
    assert "{" + ",".join(SPACES) + "}" in text and "{" + ",".join(STRATEGIES) + "}" in text
    for line in lines(tune_models()) + lines(runners.described()):
        assert line in text
    assert set(tune_models()) == {"pretrained", "transfer[@DIR]", "none", "pretrained:NAME", "baseline:NAME",
                                  FOLDER}
    assert set(runners.described()) == {"local", "in-process", "ray[:ADDRESS]"}


def test_fleet_tune_help_has_a_line_per_allocation_and_runner():
    text = help_of("fleet", "tune")
    assert "{" + ",".join(ALLOCATIONS) + "}" in text
    allocations = {name: kind.description for name, kind in ALLOCATIONS.items()}
    for line in lines(allocations) + lines(runners.described()):
        assert line in text


def test_the_command_lines_defaults_are_tune_options():
    args = _parser().parse_args(["tune", "zoo:mlp@tiny"])
    assert _tune_options(args) == TuneOptions()
    assert f"configs to evaluate, the default included (default {TuneOptions().budget})" in help_of("tune")


@pytest.mark.parametrize("name, key", [
    ("pretrained", "pretrained"), ("transfer", "transfer"), ("transfer@d", "transfer"), ("none", "none"),
    ("pretrained:flags", None), ("baseline:gbdt@d", None), ("pretrained@d", None), ("none@d", None),
    ("transfer:d", None), ("path/to/model", None),
])
def test_each_spelling_is_the_tuners_own_or_a_scorers(name, key):
    assert model_kind(PRIORS, name) is PRIORS.get(key)


@pytest.mark.parametrize("name, key", [
    ("pretrained:flags", "pretrained:"), ("pretrained:kernels", "pretrained:"),
    ("baseline:random", "baseline:"), ("baseline:gbdt-rank@d", "baseline:"), ("baseline", FOLDER),
    ("pretrained", FOLDER), ("gnn", FOLDER), ("path/to/model", FOLDER), ("c:/model", FOLDER),
])
def test_each_scorer_name_is_its_prefixs_else_a_folders(name, key):
    assert (model_kind(MODELS, name) or MODELS[FOLDER]) is MODELS[key]


def test_none_is_no_model_however_given():
    assert TuneOptions(model="none").model is None
    assert _tune_options(_parser().parse_args(["tune", "zoo:mlp@tiny", "--model", "none"])).model is None
    assert TuneOptions(model="none@d").model == "none@d"  # a folder's name, as before


def test_building_the_parser_imports_no_numpy():
    """The registries and TuneOptions' defaults are read without importing what they build."""
    code = "import sys; from hlotune.cli import _parser; _parser(); print('numpy' in sys.modules)"
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert child.stdout == "False\n"


@pytest.mark.parametrize("package", ["hlotune.tuning.strategies", "hlotune.tuning.runners", "hlotune.tuning.models",
                                     "hlotune.fleet"])
def test_the_part_packages_export_their_built_ins_on_first_use(package):
    import importlib

    module = importlib.import_module(package)
    for name in module.__all__:
        value = getattr(module, name)
        assert getattr(value, "__name__", name) == name or isinstance(value, dict), (package, name)
    with pytest.raises(AttributeError):
        module.NotAnExport
