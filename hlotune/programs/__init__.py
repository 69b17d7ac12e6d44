"""Programs by spec, one resolver per prefix: `zoo:NAME[@VARIANT]`, `corpus:NAME[@VARIANT]`,
`export:PATH` and `path/to/file.py:FACTORY`.

A VARIANT is `SIZE[-bBATCH][-train][-bf16]`: `small`, `small-b32`, `tiny-train`,
`base-b1-train`; `-bf16` only for corpus models (the zoo's are f32).
`FACTORY()` returns `(function, example_args)`; the user's code is imported as it is.
`export:PATH` is a function saved with its example arguments by hlotune.programs.exported (how
`hlotune.tune(fn, *args)` hands a bare function to the measurement worker).
"""

from __future__ import annotations

from collections.abc import Callable

from hlotune.errors import HlotuneError
from hlotune.programs.program import CORPUS_PREFIX, EXPORT_PREFIX, ZOO_PREFIX, Program


def _load_zoo(spec: str) -> Program:
    from hlotune.programs.zoo import load_zoo_program

    return load_zoo_program(spec)


def _load_corpus(spec: str) -> Program:
    from hlotune.programs.corpus import load_corpus_program

    return load_corpus_program(spec)


def _load_exported(spec: str) -> Program:
    from hlotune.programs.exported import load_exported

    return load_exported(spec)


# Heavy resolvers are imported on first use: naming a program must not import jax.
_RESOLVERS: dict[str, Callable[[str], Program]] = {
    ZOO_PREFIX: _load_zoo,
    CORPUS_PREFIX: _load_corpus,
    EXPORT_PREFIX: _load_exported,
}


def is_program_spec(source: str) -> bool:
    """Whether `source` names a program (not a file of HLO): a known prefix or file.py:FACTORY."""
    if source.startswith(tuple(_RESOLVERS)):
        return True
    path, sep, factory = source.rpartition(":")
    return bool(sep and factory) and path.endswith(".py")


def load_program(spec: str) -> Program:
    for prefix, resolve in _RESOLVERS.items():
        if spec.startswith(prefix):
            return resolve(spec)
    if is_program_spec(spec):
        from hlotune.programs.files import load_file_program

        return load_file_program(spec)
    raise HlotuneError(
        f"not a program spec: {spec!r} (expected zoo:NAME[@VARIANT], corpus:NAME[@VARIANT], "
        "file.py:FACTORY or export:PATH)"
    )


__all__ = ["CORPUS_PREFIX", "EXPORT_PREFIX", "ZOO_PREFIX", "Program", "is_program_spec", "load_program"]
