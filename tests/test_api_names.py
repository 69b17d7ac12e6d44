"""The top-level API's names: each resolves on first use, and a renamed one still works for a
release, warning that it is going."""

from __future__ import annotations

import importlib
import warnings

import pytest

import hlotune


def test_featurize_source_reads_a_source_and_the_old_name_warns_but_still_works():
    from hlotune.hlo.sources import featurize_source

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert hlotune.featurize_source is featurize_source
    with pytest.warns(DeprecationWarning, match="hlotune.featurize is deprecated: use hlotune.featurize_source"):
        assert hlotune.featurize is featurize_source
    assert "featurize_source" in hlotune.__all__ and "featurize" not in hlotune.__all__


@pytest.mark.parametrize("module, old, new", [("hlotune.models", "ModelConfig", "ModelSettings"),
                                              ("hlotune.models.settings", "ModelConfig", "ModelSettings"),
                                              ("hlotune.opt.ppo", "PPOConfig", "PPOSettings"),
                                              ("hlotune.tuning.compiled", "compile_config", "compile_program"),
                                              ("hlotune.fleet", "Trial", "ProcessTrial"),
                                              ("hlotune.fleet.trial", "Trial", "ProcessTrial")])
def test_a_renamed_class_warns_but_still_works(module, old, new):
    """`Config` names compiler configurations only: settings classes renamed keep their old
    name for a release."""
    module = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=f"{module.__name__}.{old} is deprecated: use {module.__name__}.{new}"):
        assert getattr(module, old) is getattr(module, new)
    assert old not in getattr(module, "__all__", ())


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'featurise'"):
        _ = hlotune.featurise


@pytest.mark.parametrize("package", ["hlotune", "hlotune.tuning", "hlotune.fleet"])
def test_every_lazy_name_imports(package):
    """Each name a package serves lazily (its `_API`) resolves to the attribute it points at,
    so a module moved without its entry here fails now, not on a user's first use."""
    module = importlib.import_module(package)
    for name, (where, attribute) in module._API.items():
        assert getattr(module, name) is getattr(importlib.import_module(where), attribute), name


def test_tune_takes_the_database_as_db_and_its_old_keyword_db_path_warns_but_still_works(tmp_path):
    from hlotune.errors import HlotuneError

    with pytest.warns(DeprecationWarning, match=r"hlotune.tune\(db_path=...\) is deprecated: use db="):
        with pytest.raises(HlotuneError, match="no-such-program"):
            hlotune.tune("zoo:no-such-program", db_path=tmp_path / "t.sqlite", progress=False)


@pytest.mark.parametrize("call", ["train", "cross_validate"])
def test_training_takes_model_settings_and_its_old_keyword_model_config_warns_but_still_works(call, tmp_path):
    from hlotune.errors import HlotuneError
    from hlotune.models import ModelSettings

    from hlotune.train import train

    run = {"train": lambda **kw: train(tmp_path / "none", None, tmp_path / "out", **kw),
           "cross_validate": lambda **kw: hlotune.cross_validate(tmp_path / "none", "gnn", folds=2, **kw)}[call]
    with pytest.warns(DeprecationWarning, match=r"\(model_config=...\) is deprecated: use model_settings="):
        with pytest.raises((HlotuneError, FileNotFoundError)):
            run(model_config=ModelSettings())


def test_the_database_stores_a_verification_as_record_verification_and_verify_warns_but_still_works(tmp_path):
    from hlotune.tuning.storage import TuningDatabase
    from hlotune.tuning.storage.fleet_log import Verification

    with TuningDatabase(str(tmp_path / "t.sqlite")) as db:
        with pytest.warns(DeprecationWarning, match="TuningDatabase.verify is deprecated"):
            db.verify("p", Verification("k", jit_ns=100.0, tuned_ns=80.0, rounds=10, timestamp=1.0))
        assert db.verification("p", "k").speedup == pytest.approx(1.25)


def test_a_recording_names_its_fingerprint_and_its_old_field_program_warns_but_still_works():
    from hlotune.tuning.storage import Recording

    recording = Recording("f" * 64, "model.step", "f32[8]", True, "", 0.0, 10, 1.0, 86400.0)
    with pytest.warns(DeprecationWarning, match="Recording.program is deprecated: use Recording.fingerprint"):
        assert recording.program == recording.fingerprint == "f" * 64


def test_records_and_decisions_name_their_fingerprint_and_the_old_field_program_warns_but_still_works():
    from hlotune.compiler.configs.config import DEFAULT_CONFIG
    from hlotune.tuning.storage import Decision, Record

    record = Record("f" * 64, DEFAULT_CONFIG.key, "ok", "", 1.0, 1.0, 0.01, (1,), 0.1, 0.0)
    decision = Decision("f" * 64, DEFAULT_CONFIG, DEFAULT_CONFIG, 1.0, 1.0, 0.01, "import", "flags", 0.0)
    for value, kind in ((record, "Record"), (decision, "Decision")):
        with pytest.warns(DeprecationWarning, match=f"{kind}.program is deprecated: use {kind}.fingerprint"):
            assert value.program == value.fingerprint == "f" * 64


@pytest.mark.parametrize("old, new", [("hlotune.compiler.measure", "hlotune.compiler.measurement.measure"),
                                      ("hlotune.compiler.flags", "hlotune.compiler.configs.flags"),
                                      ("hlotune.compiler.hook", "hlotune.compiler.xla.hook"),
                                      ("hlotune.models.config", "hlotune.models.settings")])
def test_a_module_moved_in_1_2_imports_by_its_old_path_with_a_warning(old, new, monkeypatch):
    """The same module object under both names, so a class checked by isinstance is one class."""
    import sys

    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning, match=f"{old} is deprecated: use {new}"):
        moved = importlib.import_module(old)
    assert moved is importlib.import_module(new) and moved.__name__ == new


def test_the_table_of_moved_compiler_modules_is_the_tree():
    """Every module of compiler/'s folders has its pre-1.2 path in the table, and only those."""
    from pathlib import Path

    import hlotune.compiler

    folder = Path(hlotune.compiler.__file__).parent
    tree = {f"hlotune.compiler.{path.parent.name}.{path.stem}" for path in folder.glob("*/*.py")
            if path.stem != "__init__"}
    assert set(hlotune.compiler.MOVED.values()) == tree
    assert not list(folder.glob("[!_]*.py"))  # nothing left at the top
