"""What measures a tune's batches. A runtime belongs to the machine it was measured on, so a
runner says which machine that is (`machine`) and the tuner reads and writes the database under
its hardware fingerprint, never the driver's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.measurement.machine import Machine
from hlotune.compiler.measurement.measure import BatchResult, MeasureSettings


class Runner(Protocol):
    """Measures batches of a program's configs on one kind of machine."""

    machine: Machine  # what every measurement runs on; records are stored under it

    def measure(
        self, program: str, configs: Sequence[CompileConfig], settings: MeasureSettings
    ) -> list[BatchResult]:
        """The configs measured in one or more batches, each beside its own default replicas
        (one batch, even for no configs: the default alone)."""

    def close(self) -> None: ...
