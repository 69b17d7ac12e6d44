"""Package attributes and registry entries imported on first use (PEP 562), so that importing a
package, and so `hlotune --help`, never pays for jax or torch."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import reduce
from importlib import import_module
from typing import Any


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
        return load(*api[name])

    return __getattr__


def renamed_attributes(module: str, renamed: Mapping[str, str]) -> Callable[[str], object]:
    """A module-level `__getattr__` serving each old name in `renamed` (old -> new, a name the
    module defines) as its new one with a DeprecationWarning, for one release."""
    return lazy_attributes(module, {new: (module, new) for new in renamed.values()}, renamed)


def load(module: str, attribute: str) -> Any:
    """`module`'s `attribute`, imported now; a dotted attribute reaches into it (`Class.method`)."""
    return reduce(getattr, attribute.split("."), import_module(module))


@dataclass(frozen=True)
class Imported:
    """A function named by its module and attribute, imported on its first call, so that a
    registry lists its names (the command line's choices) without importing what they build."""

    module: str
    attribute: str

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return load(self.module, self.attribute)(*args, **kwargs)
