"""`path/to/file.py:FACTORY`: the user's module imported as it is; FACTORY() -> (fn, args)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from hlotune.errors import HlotuneError
from hlotune.programs.program import Program


def load_file_program(spec: str) -> Program:
    path_text, _, factory = spec.rpartition(":")
    path = Path(path_text)
    if not path.is_file():
        raise HlotuneError(f"{path}: no such file")
    module_name = f"hlotune_user_{path.stem}"
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as error:
        raise HlotuneError(f"{path}: importing it failed: {type(error).__name__}: {error}") from None
    build = getattr(module, factory, None)
    if not callable(build):
        raise HlotuneError(f"{path}: has no function {factory!r}")
    try:
        fn, args = build()
    except Exception as error:
        raise HlotuneError(f"{spec}: the factory failed: {type(error).__name__}: {error}") from None
    if not callable(fn):
        raise HlotuneError(f"{spec}: the factory must return (function, example_args)")
    return Program(spec, fn, tuple(args))
