"""The flag space against the installed XLA: options and passes it lacks are left out with a
note, the answers cached per jaxlib; what needs a newer jax says so."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jaxlib
import pytest

from hlotune.compiler.configs import flags, xla_support
from hlotune.compiler.spaces import space
from hlotune.compiler.configs.flags import FLAG_FEATURE_NAMES, FlagOption
from hlotune.compiler.xla.hook import require_hook
from hlotune.compiler.spaces.space import SearchSpace
from hlotune.errors import HlotuneError

REPO = Path(__file__).resolve().parents[1]
PINNED = next(line.split("==")[1] for line in (REPO / "constraints.txt").read_text().splitlines()
              if line.startswith("jaxlib=="))


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """An empty cache folder and no answer kept in this process."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    xla_support.xla_support.cache_clear()
    yield tmp_path / "hlotune" / "xla_options.json"
    xla_support.xla_support.cache_clear()


@pytest.fixture
def planted(monkeypatch):
    """flags.py with an option no XLA has, a value XLA cannot parse, one declared for a release
    that does not exist yet and a pass XLA:CPU does not run."""
    options = (
        FlagOption("xla_hlotune_test_option", (False, True), "in no XLA"),
        FlagOption("xla_backend_optimization_level", (3, 1, "fast"), "'fast' is no int32"),
        FlagOption("xla_cpu_use_xnnpack", (True, False), "declared for a later release", since="99.0"),
    )
    for module in (xla_support, space):
        monkeypatch.setattr(module, "FLAG_OPTIONS", options)
    passes = ("fusion", "hlotune-no-such-pass")
    monkeypatch.setattr(xla_support, "KNOWN_PASSES", passes)
    monkeypatch.setattr(space, "SAMPLED_PASSES", passes)


def test_what_xla_rejects_is_left_out_of_the_space_with_a_one_line_note(fresh, planted, capsys):
    support = xla_support.xla_support()
    assert not support.takes("xla_hlotune_test_option", True)
    assert support.takes("xla_backend_optimization_level", 1)
    assert not support.takes("xla_backend_optimization_level", "fast")
    assert "declared from 99.0" in support.left_out['xla_cpu_use_xnnpack=false']
    assert support.runs("fusion") and not support.runs("hlotune-no-such-pass")
    (note,) = capsys.readouterr().err.splitlines()
    assert note == (f"hlotune: the flag space leaves out what jaxlib {jaxlib.__version__}'s XLA lacks: "
                    "xla_hlotune_test_option, xla_backend_optimization_level=fast, "
                    "xla_cpu_use_xnnpack (declared from 99.0), pass hlotune-no-such-pass")
    genes = {gene.name: gene.values for gene in SearchSpace("flags").genes}
    assert genes == {"xla_backend_optimization_level": (3, 1), "pass:fusion": (False, True)}
    assert capsys.readouterr().err == ""  # once a process


def test_the_answers_are_cached_per_jaxlib_and_xla_is_not_asked_again(fresh, planted, monkeypatch):
    first = xla_support.xla_support()
    cached = json.loads(fresh.read_text())
    assert list(cached) == [jaxlib.__version__]
    assert "xla_cpu_use_xnnpack=false" not in cached[jaxlib.__version__]  # declared: never asked
    xla_support.xla_support.cache_clear()

    def ask_xla():
        raise AssertionError("XLA asked again")

    monkeypatch.setattr(xla_support, "_probe", ask_xla)
    assert xla_support.xla_support() == first


def test_a_value_added_to_the_table_is_asked_about_alone(fresh, planted, monkeypatch):
    xla_support.xla_support()
    xla_support.xla_support.cache_clear()
    grown = (*xla_support.FLAG_OPTIONS, FlagOption("xla_cpu_multi_thread_eigen", (True, False), "new"))
    monkeypatch.setattr(xla_support, "FLAG_OPTIONS", grown)
    asked = []
    monkeypatch.setattr(xla_support, "_option_rejected", lambda lowered, name, value: asked.append(name))
    assert xla_support.xla_support().takes("xla_cpu_multi_thread_eigen", False)
    assert asked == ["xla_cpu_multi_thread_eigen"]


def test_a_config_setting_what_xla_lacks_is_outside_the_space(fresh, planted):
    from hlotune.compiler.configs.config import CompileConfig
    from hlotune.compiler.configs.flags import FlagConfig

    lacking = CompileConfig(FlagConfig((("xla_backend_optimization_level", "fast"),)))
    with pytest.raises(HlotuneError, match="the installed XLA lacks it"):
        SearchSpace("flags").genome(lacking)


def test_releases_are_compared_as_numbers():
    option = FlagOption("xla_x", (True, False), "", since="0.9", until="0.10.2")
    assert [option.in_release(v) for v in ("0.8.3", "0.9.0", "0.10.1", "0.10.2", "0.10.2.dev20260601")] == [
        False, True, True, False, False]


def test_the_pinned_xla_takes_the_whole_table(fresh, capsys):
    if jaxlib.__version__ != PINNED:
        pytest.skip(f"the table is complete for jaxlib {PINNED}, the one CI pins")
    assert xla_support.xla_support().left_out == {}
    assert capsys.readouterr().err == ""


def test_new_values_keep_the_shipped_models_columns():
    """The shipped data and models read 30 named columns; a value added since (the YNN lists
    less one type) has none, so they load under every release."""
    model = json.loads((REPO / "hlotune" / "models" / "pretrained" / "flags" / "config.json").read_text())
    assert FLAG_FEATURE_NAMES == tuple(model["model"]["config_feat_names"])
    assert set(flags.YNN_DEFAULT_LESS_ONE) <= set(flags.OPTIONS_BY_NAME["xla_cpu_experimental_ynn_fusion_type"].values)


def test_per_kernel_options_need_the_hook_and_say_which_jax(monkeypatch):
    monkeypatch.setitem(sys.modules, "jax.extend.xla", None)  # as under jax < 0.10.2
    with pytest.raises(HlotuneError, match=r"jax and jaxlib 0\.10\.2 or newer \(installed: jax "):
        require_hook()
