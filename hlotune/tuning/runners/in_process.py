"""Measurements in this process: the only runner for a live program.

A function that jax.export cannot serialize (host callbacks: programs/callbacks.py) has no
file a worker could load, so `hlotune.tune(fn, ...)` and `@autotune` measure it here
(compiler/measurement/in_process.py), batch for batch as the local runner does, and say once, in one
warning line, why and what isolation that gives up (`runner_for`). By name (`in-process`) it
measures any program spec here, as the worker would.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from hlotune.compiler.measurement.in_process import ISOLATION, InProcessMeasurer
from hlotune.compiler.measurement.measure import MeasureSettings
from hlotune.errors import HlotuneError
from hlotune.programs import Program, load_program
from hlotune.programs.function_program import FunctionProgram
from hlotune.tuning.runners.base import Runner
from hlotune.tuning.runners.local import LocalRunner
from hlotune.tuning.runners.registry import DEFAULT_RUNNER, IN_PROCESS, open_runner


class InProcessRunner(LocalRunner):
    """Measures in this process, one batch at a time: the `live` programs by name, any other
    by its spec."""

    def __init__(self, *live: Program) -> None:
        super().__init__()
        self._live = {program.name: program for program in live}

    def _open(self, program: str, settings: MeasureSettings) -> InProcessMeasurer:
        return InProcessMeasurer(self._live.get(program) or load_program(program), settings)


@contextmanager
def runner_for(program: FunctionProgram | None, runner: str | Runner) -> Iterator[Runner]:
    """`open_runner(runner)`, or for a live program an in-process runner, with one warning
    saying why."""
    if program is None or not program.in_process:
        with open_runner(runner) as opened:
            yield opened
        return
    if runner not in (DEFAULT_RUNNER, IN_PROCESS):
        raise HlotuneError(f"{program.in_process}: it can be measured only in this process, so not "
                           f"with runner {runner!r}")
    warnings.warn(f"{program.in_process}: measuring it in this process, not in a worker: {ISOLATION}",
                  stacklevel=4)
    live = InProcessRunner(program.measured)
    try:
        yield live
    finally:
        live.close()
