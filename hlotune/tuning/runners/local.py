"""The default runner: measurements on this machine, in a worker process."""

from __future__ import annotations

from collections.abc import Sequence

from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.measurement.machine import this_machine
from hlotune.compiler.measurement.measure import BatchResult, MeasureSettings, Measurer


class LocalRunner:
    """Measures on this machine, one batch at a time, the batches of a program in one worker
    (`Measurer`: its program is loaded once, not once per batch)."""

    def __init__(self) -> None:
        self.machine = this_machine()
        self._measurer: Measurer | None = None

    def measure(
        self, program: str, configs: Sequence[CompileConfig], settings: MeasureSettings
    ) -> list[BatchResult]:
        current = self._measurer
        if current is None or (current.program, current.settings) != (program, settings):
            self.close()
            self._measurer = self._open(program, settings)
        return [self._measurer.measure(configs)]

    def _open(self, program: str, settings: MeasureSettings) -> Measurer:
        """The measurer of a program's batches: a worker process here."""
        return Measurer(program, settings)

    def close(self) -> None:
        if self._measurer is not None:
            self._measurer.close()
            self._measurer = None
