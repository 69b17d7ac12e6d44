"""Package attributes imported on first use (PEP 562), so that importing a package, and so
`hlotune --help`, never pays for jax or torch."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from importlib import import_module


def lazy_attributes(package: str, api: Mapping[str, tuple[str, str]],
                    renamed: Mapping[str, str] | None = None) -> Callable[[str], object]:
    """A module-level `__getattr__` serving `api` (name -> (module, attribute)), and each old
    name in `renamed` (old -> new) as its new one with a DeprecationWarning, for one release."""
    renamed = renamed or {}

    def __getattr__(name: str) -> object:
        if name in renamed:
            warnings.warn(f"{package}.{name} is deprecated: use {package}.{renamed[name]}",
                          DeprecationWarning, stacklevel=2)
            name = renamed[name]
        if name not in api:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = api[name]
        return getattr(import_module(module), attribute)

    return __getattr__
