"""Compile and predict (XTAT's screen): every candidate is compiled, nothing run, and the kernel
program model (kernels/program_model.py) scores the module XLA made of it. A compile costs
0.1-1 s here and a measurement 1-2 s, so many candidates can be screened for each one measured;
the budget still counts configs measured, and `compiled`/`compile_s` say what screening cost.

Compiles are cached in the tuning database by config key (its `compiles` table, each thunk's
module text once), so a resumed tune compiles nothing twice. A config XLA rejects or dies on
scores last. The compiles run in a worker process of their own (compiler/measurement/measure.py), apart
from the one measuring, as XLA may crash on a config.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.measurement.measure import Measurer, MeasureSettings
from hlotune.kernels.program_model import CompiledModule, CompiledThunk, KernelProgramModel
from hlotune.tuning.models.base import CostModel


class KernelScreen(CostModel):
    def __init__(self, program: str, model: KernelProgramModel, db_path: str | Path, fingerprint: str,
                 settings: MeasureSettings = MeasureSettings()) -> None:
        from hlotune.tuning.storage import TuningDatabase

        self.model, self.fingerprint = model, fingerprint
        self._measurer = Measurer(program, settings)
        self._db = TuningDatabase(db_path)
        self.compiled, self.compile_s = 0, 0.0  # configs this screen compiled, and the seconds

    def statistics(self) -> dict[str, int | float]:
        return {"screened": self.compiled, "screen_s": self.compile_s}

    def close(self) -> None:
        self._measurer.close()
        self._db.close()

    def predict(self, configs: Sequence[CompileConfig]) -> np.ndarray:
        known = {config.key: self._cached(config) for config in configs}
        missing = [config for config in configs if known[config.key] is False]
        if missing:
            started = time.perf_counter()
            texts = self._measurer.compiled_modules(missing)
            self.compile_s += time.perf_counter() - started
            self.compiled += len(missing)
            for config, text in zip(missing, texts):
                known[config.key] = self._store(config, text)
        healthy = [i for i, config in enumerate(configs) if known[config.key] is not None]
        scores = np.full(len(configs), np.inf)
        if healthy:
            predicted = self.model.program_ns([known[configs[i].key] for i in healthy])
            scores[healthy] = np.log(predicted)
        return scores

    def _cached(self, config: CompileConfig) -> CompiledModule | None | bool:
        """The config's thunks from the database; None if it failed to compile; False if unknown."""
        found, thunks = self._db.compiled(self.fingerprint, config.key)
        if not found:
            return False
        if thunks is None:
            return None
        compiled = CompiledModule(config.flags, [CompiledThunk.from_json(t) for t in thunks])
        self.model.graphs.add(self._db.thunk_modules([t.fingerprint for t in compiled.thunks
                                                      if not self.model.graphs.has(t.fingerprint)]))
        return compiled

    def _store(self, config: CompileConfig, text: str | None) -> CompiledModule | None:
        if text is None:
            self._db.record_compiled(self.fingerprint, config.key, None, {})
            return None
        compiled, modules = self.model.from_module(text, config)
        self._db.record_compiled(self.fingerprint, config.key, [t.to_json() for t in compiled.thunks], modules)
        return compiled
