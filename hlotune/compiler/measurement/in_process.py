"""Measuring a live program in this process: one that cannot cross to a worker process.

A function whose host callbacks jax.export cannot serialize exists only as Python objects in
the user's process (programs/callbacks.py). It is measured there by the worker's own code
(worker.py), request for request as measure.py's worker session, so a batch keeps its protocol
and its BatchResult: interleaved rounds, default replicas, output checks, failed configs
recorded with their reason. What the worker process gave is lost (`ISOLATION`).
"""

from __future__ import annotations

from collections.abc import Iterator

from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.measurement.measure import MeasureSettings, Measurer
from hlotune.compiler.measurement.worker import Worker, serve
from hlotune.errors import HlotuneError
from hlotune.programs import Program

ISOLATION = ("a config that crashes XLA crashes this process, one that hangs hangs it, and the "
             "timings share this process with the rest of your code")


class InProcessMeasurer(Measurer):
    """A Measurer of the live `program`, in this process."""

    def __init__(self, program: Program, settings: MeasureSettings = MeasureSettings()) -> None:
        super().__init__(program.name, settings)
        self.live = program

    def _open(self) -> InProcessSession:
        return InProcessSession(self.live, self.settings)


class InProcessSession:
    """The requests measure.py sends a worker, served by a Worker in this process. Nothing here
    dies or times out, so no config is ever replayed after a restart."""

    def __init__(self, program: Program, settings: MeasureSettings) -> None:
        self.settings = settings
        self._samples: list[dict] = []
        self._worker = Worker(self._samples.append)
        reply = serve(self._worker, "use", {"program": program})
        if not reply["ok"]:
            raise HlotuneError(f"{program.name}: cannot measure it: {reply['error']}")
        self._compiled: set[str] = set()

    def __exit__(self, *exc) -> None:
        self._compiled.clear()
        self._worker = None

    def compile(self, id: str, config: CompileConfig) -> dict:
        reply = self._serve("compile", id=id, config=config.to_dict(), rtol=self.settings.rtol)
        if reply["ok"]:
            self._compiled.add(id)
        return reply

    def clear(self) -> None:
        for id in list(self._compiled):
            self.drop(id)

    def drop(self, id: str) -> None:
        self._compiled.discard(id)
        self._serve("drop", id=id)

    def module(self, config: CompileConfig) -> dict:
        return self._serve("module", config=config.to_dict())

    def profile(self, id: str, runs: int) -> dict:
        return self._serve("profile", id=id, runs=runs)

    def hlo(self, id: str) -> dict:
        return self._serve("hlo", id=id)

    def run(self, ids: list[str], repeats: int, loop: int) -> Iterator[tuple[str, list[int]]]:
        """Yield (id, samples) as each config finishes its calls."""
        for id in ids:
            reply = self._serve("run", ids=[id], repeats=repeats, loop=loop)
            if not reply["ok"]:
                raise HlotuneError(f"measurement failed: {reply['error']}")
            yield id, self._samples.pop()["ns"]

    def _serve(self, op: str, **request) -> dict:
        return serve(self._worker, op, request)
