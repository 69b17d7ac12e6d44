"""Programs by spec, one resolver per prefix, for every command: `zoo:NAME[@VARIANT]` (the
built-in workloads, hlotune.programs.zoo), `corpus:NAME[@VARIANT]` (real library models,
hlotune.programs.corpus), `go:NAME[@VARIANT]` (GO-scale graphs, hlotune.programs.go),
`numerics:NAME[@SIZE]` (numerical algorithms, hlotune.programs.numerics),
`export:PATH` and `path/to/file.py:FACTORY`.

A VARIANT is `SIZE[-bBATCH][-train][-bf16]` (hlotune.programs.variants): `small`, `small-b32`,
`tiny-train`, `base-b1-train`; `-bf16` only for corpus models (the zoo's and GO's are f32).
`FACTORY()` returns `(function, example_args)`; the user's code is imported as it is.
`export:PATH` is a function saved with its example arguments by hlotune.programs.exported (how
`hlotune.tune(fn, *args)` hands a bare function to the measurement worker).
"""

from __future__ import annotations

from collections.abc import Callable

from hlotune.errors import HlotuneError
from hlotune.programs.program import (
    CORPUS_PREFIX,
    EXPORT_PREFIX,
    GO_PREFIX,
    NUMERICS_PREFIX,
    ZOO_PREFIX,
    Program,
)


def _load_zoo(spec: str, abstract: bool) -> Program:
    from hlotune.programs.variants import resolve_workload
    from hlotune.programs.zoo import WORKLOADS

    resolved = resolve_workload(spec, ZOO_PREFIX, WORKLOADS, "zoo program")
    fn, args = resolved.workload.program(resolved.size, train=resolved.train, batch=resolved.batch,
                                         abstract=abstract)
    return Program(resolved.name, fn, args)


def _load_corpus(spec: str, abstract: bool) -> Program:
    from hlotune.programs.corpus import load_corpus_program

    return load_corpus_program(spec, abstract=abstract)


def _load_go(spec: str, abstract: bool) -> Program:
    from hlotune.programs.go import load_go_program

    return load_go_program(spec, abstract=abstract)


def _load_numerics(spec: str, abstract: bool) -> Program:
    from hlotune.programs.numerics import load_numerics_program

    return load_numerics_program(spec)


def _load_exported(spec: str, abstract: bool) -> Program:
    from hlotune.programs.exported import load_exported

    return load_exported(spec)


# Heavy resolvers are imported on first use: naming a program must not import jax. Each takes
# (spec, abstract); the built-in model tables (zoo:, corpus:, go:) honour `abstract` and trace
# their init for its shapes, the others build values all the same.
_RESOLVERS: dict[str, Callable[[str, bool], Program]] = {
    ZOO_PREFIX: _load_zoo,
    CORPUS_PREFIX: _load_corpus,
    GO_PREFIX: _load_go,
    NUMERICS_PREFIX: _load_numerics,
    EXPORT_PREFIX: _load_exported,
}


def traces_abstractly(spec: str) -> bool:
    """Whether `load_program(spec, abstract=True)` gives shapes without running the program's init."""
    return spec.startswith((ZOO_PREFIX, CORPUS_PREFIX, GO_PREFIX))


def is_program_spec(source: str) -> bool:
    """Whether `source` names a program (not a file of HLO): a known prefix or file.py:FACTORY."""
    if source.startswith(tuple(_RESOLVERS)):
        return True
    path, sep, factory = source.rpartition(":")
    return bool(sep and factory) and path.endswith(".py")


def load_program(spec: str, *, abstract: bool = False) -> Program:
    """The program a spec names, with example arguments to run it on. `abstract`: the caller
    only lowers it (featurize, opt), so a resolver may give its arguments as shapes
    (jax.ShapeDtypeStruct)."""
    for prefix, resolve in _RESOLVERS.items():
        if spec.startswith(prefix):
            return resolve(spec, abstract)
    if is_program_spec(spec):
        from hlotune.programs.files import load_file_program

        return load_file_program(spec)
    raise HlotuneError(
        f"not a program spec: {spec!r} (expected zoo:NAME[@VARIANT], corpus:NAME[@VARIANT], "
        "go:NAME[@VARIANT], numerics:NAME[@SIZE], file.py:FACTORY or export:PATH)"
    )


__all__ = ["CORPUS_PREFIX", "EXPORT_PREFIX", "GO_PREFIX", "NUMERICS_PREFIX", "ZOO_PREFIX", "Program",
           "is_program_spec", "load_program", "traces_abstractly"]
