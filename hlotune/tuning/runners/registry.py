"""Runners by name, as `hlotune tune --runner` and `tune(runner=...)` spell them: `local`,
`in-process` (no worker process: what a live program needs), or `ray` and `ray:ADDRESS` (as
`ray.init(address=ADDRESS)`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from hlotune.errors import HlotuneError
from hlotune.tuning.runners.base import Runner
from hlotune.tuning.runners.in_process import IN_PROCESS, InProcessRunner
from hlotune.tuning.runners.local import LocalRunner
from hlotune.tuning.runners.ray import RayRunner


@dataclass(frozen=True)
class RunnerKind:
    """What makes a runner of a kind: `build()`, or `build(address or None)` for a kind whose
    spec takes an address (`NAME:ADDRESS`)."""

    build: Callable[..., Runner]
    takes_address: bool = False


RUNNERS: dict[str, RunnerKind] = {
    "local": RunnerKind(LocalRunner),
    IN_PROCESS: RunnerKind(InProcessRunner),
    "ray": RunnerKind(RayRunner, takes_address=True),
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
