"""Old public spellings kept for one release: a keyword renamed, a module moved. Each use warns
with a DeprecationWarning that names the new spelling, and does what the new one does."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from typing import TypeVar

T = TypeVar("T")


def renamed_keyword(new_value: T | None, old_value: T | None, *, call: str, old: str, new: str) -> T | None:
    """The value a caller gave as `new=`, or as its old spelling `old=` (with a warning)."""
    if old_value is None:
        return new_value
    warnings.warn(f"{call}({old}=...) is deprecated: use {new}=...", DeprecationWarning, stacklevel=3)
    return old_value if new_value is None else new_value


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports a module's old path as its new one: the same module object under both names, so
    its state and classes are shared (isinstance holds across them)."""

    def __init__(self) -> None:
        self.moved: dict[str, str] = {}

    def find_spec(self, name, path=None, target=None):
        return importlib.machinery.ModuleSpec(name, self) if name in self.moved else None

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        new = self.moved[module.__name__]
        warnings.warn(f"{module.__name__} is deprecated: use {new}", DeprecationWarning, stacklevel=2)
        sys.modules[module.__name__] = importlib.import_module(new)  # what the import returns


def moved_modules(moved: dict[str, str]) -> None:
    """Old module paths -> new ones, importable by the old path until the next release."""
    finder = next((f for f in sys.meta_path if isinstance(f, _MovedModules)), None)
    if finder is None:
        finder = _MovedModules()
        sys.meta_path.append(finder)
    finder.moved.update(moved)
