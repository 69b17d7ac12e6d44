"""Optional dependencies: the base install covers featurize, inspect, train, eval, predict and
tune; the rest come with an extra (pyproject.toml), imported only where a feature needs them.

A missing one is bad input of the environment, not a bug: `require` turns the ImportError into
the one-line message that names the extra to install.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from hlotune.errors import HlotuneError


def require(module: str, extra: str, feature: str) -> ModuleType:
    """Import `module` (a package of the extra `extra`) for `feature`, or say how to get it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise HlotuneError(
            f'{feature} needs {module}, which is not installed: pip install "hlotune[{extra}]"'
        ) from None
