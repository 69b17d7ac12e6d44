"""A runner that answers from recorded measurements instead of the compiler (Kernel Tuner's
simulation mode), so search strategies can be compared offline, fast and on the same data.

The record is a collected program (`hlotune collect`'s NAME.npz with NAME.json beside it). A
config measured there gets its recorded samples back; one never measured, or failed there,
fails here with that reason. The default's recorded samples stand for its replicas, split into
odd and even samples, so a replayed batch has the noise floor the recording had. Replayed
records carry a machine of their own ("replay of ..."), so they never mix with real
measurements in a database.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from hlotune.compiler.configs.config import DEFAULT_CONFIG, CompileConfig
from hlotune.compiler.measurement.machine import this_machine
from hlotune.compiler.measurement.measure import FAILED, OK, BatchResult, MeasureSettings, Measurement
from hlotune.data.npz import read_sample
from hlotune.errors import HlotuneError


class ReplayRunner:
    """Measures nothing: every batch is answered from `recorded` (config -> samples in ns)."""

    def __init__(self, recorded: Mapping[CompileConfig, Sequence[int]], source: str) -> None:
        if not recorded.get(DEFAULT_CONFIG):
            raise HlotuneError(f"{source}: no recorded samples of the default config to replay")
        self.recorded, self.source = dict(recorded), source
        machine = this_machine()
        self.machine = replace(machine, cpu=f"replay of {source}", cores=0, system="replay")

    @classmethod
    def from_collection(cls, npz: str | Path) -> ReplayRunner:
        """A collected program: the npz's samples, matched to configs by the JSON beside it
        (its healthy configs, in order, are the npz's rows after the default). Each config's
        samples are rescaled so that their median is its npz runtime: that runtime is the median
        of all of its samples, corrected for its batch's drift, while the npz keeps only a few
        samples of each config (its first few, in files collected before
        `collector.stored_samples` spread them over its rounds), which in a batch that drifted
        while it was sampled to its noise target can come from a slower or faster stretch."""
        npz = Path(npz)
        summary_path = npz.with_suffix(".json")
        try:
            summary = json.loads(summary_path.read_text())
        except (OSError, ValueError) as error:
            raise HlotuneError(f"{summary_path}: cannot read the collection summary ({error})") from None
        configs = read_sample(npz).configs
        samples, runtimes = configs.config_runtime_samples, configs.config_runtime
        healthy = [r for r in summary["configs"] if r["status"] == OK]
        if samples is None or len(samples) != len(healthy) + 1:
            raise HlotuneError(f"{npz}: its samples do not match the configs of {summary_path.name}")
        keys = [DEFAULT_CONFIG, *(CompileConfig.from_dict(r["config"]) for r in healthy)]
        return cls({key: np.rint(row * runtime / np.median(row)).astype(np.int64).tolist()
                    for key, row, runtime in zip(keys, samples, runtimes)}, str(npz))

    def measure(
        self, program: str, configs: Sequence[CompileConfig], settings: MeasureSettings
    ) -> list[BatchResult]:
        reference = self.recorded[DEFAULT_CONFIG]
        defaults = [Measurement(DEFAULT_CONFIG, samples_ns=list(reference))]
        defaults += [Measurement(DEFAULT_CONFIG, samples_ns=list(reference[i::2])) for i in (0, 1)]
        return [BatchResult([self._answer(config) for config in configs], defaults)]

    def _answer(self, config: CompileConfig) -> Measurement:
        samples = self.recorded.get(config)
        if samples is None:
            return Measurement(config, FAILED, f"not in the recorded data ({self.source})")
        return Measurement(config, samples_ns=list(samples))

    def close(self) -> None:
        pass

