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
                                              ("hlotune.models.config", "ModelConfig", "ModelSettings"),
                                              ("hlotune.opt.ppo", "PPOConfig", "PPOSettings")])
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


@pytest.mark.parametrize("package", ["hlotune", "hlotune.tuning"])
def test_every_lazy_name_imports(package):
    """Each name a package serves lazily (its `_API`) resolves to the attribute it points at,
    so a module moved without its entry here fails now, not on a user's first use."""
    module = importlib.import_module(package)
    for name, (where, attribute) in module._API.items():
        assert getattr(module, name) is getattr(importlib.import_module(where), attribute), name
