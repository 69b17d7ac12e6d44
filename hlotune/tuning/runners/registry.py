"""Runners by name, as `hlotune tune --runner` and `tune(runner=...)` spell them: `local`,
`in-process` (no worker process: what a live program needs), or `ray` and `ray:ADDRESS` (as
`ray.init(address=ADDRESS)`). Each is imported when made: the command line lists them without
importing any."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hlotune.errors import HlotuneError
from hlotune.lazy import Imported

if TYPE_CHECKING:
    from hlotune.tuning.runners.base import Runner

DEFAULT_RUNNER = "local"
IN_PROCESS = "in-process"


@dataclass(frozen=True)
class RunnerKind:
    """What makes a runner of a kind: `build()`, or `build(address or None)` for a kind whose
    spec takes an address (`NAME:ADDRESS`), and what it is, in one line of --help."""

    build: Callable[..., Runner]
    description: str
    takes_address: bool = False


def _runner(module: str, name: str) -> Imported:
    return Imported(f"hlotune.tuning.runners.{module}", name)


RUNNERS: dict[str, RunnerKind] = {
    DEFAULT_RUNNER: RunnerKind(_runner("local", "LocalRunner"),
                               "this machine, each program's batches in a worker process"),
    IN_PROCESS: RunnerKind(_runner("in_process", "InProcessRunner"),
                           "this process, no worker: what a live program needs (docs/tuning.md)"),
    "ray": RunnerKind(_runner("ray", "RayRunner"), "the workers of a Ray cluster started with `ray start`, "
                      "ADDRESS as ray.init(address=ADDRESS) takes it (the ray extra; docs/tuning.md)",
                      takes_address=True),
}


def make_runner(spec: str) -> Runner:
    """The runner `spec` names: NAME, or NAME:ADDRESS for a kind that takes an address."""
    name, _, address = spec.partition(":")
    kind = RUNNERS.get(name)
    if kind is None or (address and not kind.takes_address):
        spellings = _spellings()
        raise HlotuneError(f"unknown runner {spec!r}: use {', '.join(spellings[:-1])} or {spellings[-1]}")
    return kind.build(address or None) if kind.takes_address else kind.build()


def _spellings() -> list[str]:
    """Every spec the registry takes: `local`, `ray`, `ray:ADDRESS`."""
    return [spec for name, kind in RUNNERS.items()
            for spec in ((name, f"{name}:ADDRESS") if kind.takes_address else (name,))]


def described() -> dict[str, str]:
    """Each kind's spelling (`ray[:ADDRESS]`) and what it is: its --help line."""
    return {f"{name}[:ADDRESS]" if kind.takes_address else name: kind.description
            for name, kind in RUNNERS.items()}


@contextmanager
def open_runner(runner: str | Runner) -> Iterator[Runner]:
    """The runner a spec names, closed afterwards; a Runner given as an object stays open."""
    if not isinstance(runner, str):
        yield runner
        return
    made = make_runner(runner)
    try:
        yield made
    finally:
        made.close()
