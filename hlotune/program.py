"""Programs by name: `zoo:NAME[@VARIANT]`, `path/to/file.py:FACTORY` or `export:PATH`.

A zoo VARIANT is `SIZE[-bBATCH][-train]`: `small`, `small-b32`, `tiny-train`, `base-b1-train`.

`FACTORY()` returns `(function, example_args)`; the user's code is imported as it is.
`export:PATH` is a function saved with its example arguments by hlotune.exported (how
`hlotune.tune(fn, *args)` hands a bare function to the measurement worker).
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hlotune.errors import HlotuneError

ZOO_PREFIX = "zoo:"
EXPORT_PREFIX = "export:"
TRAIN_SUFFIX = "-train"


@dataclass
class Program:
    name: str  # the spec it was loaded from
    fn: Callable
    args: tuple

    @property
    def slug(self) -> str:
        """A short file-name-safe name: `resnet@small-train`, `model_make` for model.py:make,
        the file's stem for export:PATH."""
        if self.name.startswith(ZOO_PREFIX):
            return self.name.removeprefix(ZOO_PREFIX)
        if self.name.startswith(EXPORT_PREFIX):
            return Path(self.name.removeprefix(EXPORT_PREFIX)).stem
        path, _, factory = self.name.rpartition(":")
        return f"{Path(path).stem}_{factory}"


def is_program_spec(source: str) -> bool:
    """Whether `source` names a program (not a file of HLO): zoo:NAME, file.py:FACTORY or
    export:PATH."""
    if source.startswith((ZOO_PREFIX, EXPORT_PREFIX)):
        return True
    path, sep, factory = source.rpartition(":")
    return bool(sep and factory) and path.endswith(".py")


def load_program(spec: str) -> Program:
    if spec.startswith(ZOO_PREFIX):
        return _zoo_program(spec)
    if spec.startswith(EXPORT_PREFIX):
        from hlotune.exported import load_exported

        return load_exported(spec)
    if is_program_spec(spec):
        path, _, factory = spec.rpartition(":")
        return _file_program(spec, Path(path), factory)
    raise HlotuneError(
        f"not a program spec: {spec!r} (expected zoo:NAME[@VARIANT], file.py:FACTORY or export:PATH)"
    )


def zoo_variants(name: str) -> list[str]:
    """The variants of a zoo workload at its own batch sizes (any `-bN` works too)."""
    from hlotune.zoo import WORKLOADS

    return _variants(WORKLOADS[name])


@dataclass(frozen=True)
class WorkloadVariant:
    """A `PREFIX NAME[@SIZE[-bBATCH][-train]]` spec resolved against a table of workloads."""

    name: str  # the program's name: the spec with its variant spelt out
    workload: Any  # hlotune.zoo.base.Workload
    size: str
    batch: int | None
    train: bool


def resolve_workload(spec: str, prefix: str, workloads: Mapping[str, Any], kind: str) -> WorkloadVariant:
    """Look up the workload and variant a spec names (default: the first size); `kind` names
    the table in errors ("zoo program", "GO graph")."""
    name, _, variant = spec.removeprefix(prefix).partition("@")
    if name not in workloads:
        raise HlotuneError(f"unknown {kind} {name!r}; known: {', '.join(sorted(workloads))}")
    workload = workloads[name]
    variant = variant or next(iter(workload.sizes))
    size, batch, train = _parse_variant(variant)
    if size not in workload.sizes:
        raise HlotuneError(
            f"unknown variant {variant!r} of {prefix}{name}; known: "
            f"{', '.join(_variants(workload))} (SIZE[-bBATCH][-train])"
        )
    return WorkloadVariant(f"{prefix}{name}@{variant}", workload, size, batch, train)


def _variants(workload) -> list[str]:
    sizes = list(workload.sizes)
    return sizes + [size + TRAIN_SUFFIX for size in sizes]


def _zoo_program(spec: str) -> Program:
    from hlotune.zoo import WORKLOADS

    resolved = resolve_workload(spec, ZOO_PREFIX, WORKLOADS, "zoo program")
    fn, args = resolved.workload.program(resolved.size, train=resolved.train, batch=resolved.batch)
    return Program(resolved.name, fn, args)


_VARIANT = re.compile(r"(?P<size>[a-z0-9_]+)(?:-b(?P<batch>[1-9][0-9]*))?(?P<train>-train)?")


def _parse_variant(variant: str) -> tuple[str, int | None, bool]:
    """`small-b32-train` -> ("small", 32, True); an unknown form gives the size ""."""
    match = _VARIANT.fullmatch(variant)
    if match is None:
        return "", None, False
    batch = match["batch"]
    return match["size"], int(batch) if batch else None, bool(match["train"])


def _file_program(spec: str, path: Path, factory: str) -> Program:
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
