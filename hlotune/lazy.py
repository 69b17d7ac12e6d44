"""Package attributes imported on first use (PEP 562), so that importing a package, and so
`hlotune --help`, never pays for jax or torch."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module


def lazy_attributes(package: str, api: Mapping[str, tuple[str, str]]) -> Callable[[str], object]:
    """A module-level `__getattr__` serving `api` (name -> (module, attribute))."""

    def __getattr__(name: str) -> object:
        if name not in api:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = api[name]
        return getattr(import_module(module), attribute)

    return __getattr__
