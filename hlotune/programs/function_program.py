"""A user's function, bound to its example arguments, as a program to tune.

The tuner measures what a worker process can load: the function exported as a function of
flat leaves (exported.py). A function that jax.export cannot serialize, one with host
callbacks (callbacks.py), stays live: it is measured in this process (compiler/measurement/in_process.py)
and `in_process` says why. Either way `user` is the same computation taking and returning the
user's pytrees, which a chosen config compiles for the user's calls, and `measured` is what
the fingerprint hashes, so `hlotune.tune(fn, ...)`, `@autotune` and `export:PATH` agree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hlotune.programs.exported import ExportedFunction, HostCallbacks, export_function
from hlotune.programs.program import Program

IN_PROCESS_PREFIX = "in-process:"  # a live program's name: no process but this one can load it


@dataclass(frozen=True)
class FunctionProgram:
    measured: Program  # what a runner measures and the fingerprint hashes
    user: Program  # the same computation of the user's pytrees, compiled for the user's calls
    exported: ExportedFunction | None  # None: live, measured in this process
    folder: Path  # where the export's file goes
    in_process: str = ""  # why it is measured in this process (one line); "" when exported

    def spec(self) -> str:
        """The program's name for a runner: the export's `export:PATH`, its file written, or
        the live program's name."""
        return self.measured.name if self.exported is None else self.exported.save(self.folder)


def function_program(fn: Callable, args: tuple, folder: Path) -> FunctionProgram:
    """`fn` for `args` (a tuple of pytrees of arrays), exported into `folder` when saved, or
    live where jax.export cannot serialize it."""
    try:
        exported = export_function(fn, args)
    except HostCallbacks as error:
        live = Program(IN_PROCESS_PREFIX + getattr(fn, "__name__", type(fn).__name__), fn, args)
        return FunctionProgram(live, live, None, folder, str(error))
    return FunctionProgram(exported.program(folder), exported.user_program(folder), exported, folder)
