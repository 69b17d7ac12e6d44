"""A cost model learned from other programs' measurements (XTAT's transfer between programs).

Many XLA options help or hurt most programs on one machine alike (a vector width, an ISA cap, a
pass that never pays here), so the per-choice effects of `ChoiceModel`, fitted on other
programs' measurements, rank a new program's flag configs before it has been measured at all.
On the built-in data this ranks held-out families' flag configs better than the pretrained GNN
(docs/tuning.md, benchmarks/tune_bench.py). Layout choices name a program's own
tensors, so they do not transfer: the model sees flags only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from hlotune.compiler.config import DEFAULT_CONFIG, CompileConfig
from hlotune.tuning.cost_model import CostModel
from hlotune.tuning.database import TuningDatabase
from hlotune.tuning.online import ChoiceModel
from hlotune.tuning.replay import ReplayRunner

PENALTY = 1.0  # ridge penalty, in configs: a light touch on thousands of pooled configs
Example = tuple[CompileConfig, float]  # a config of some program, its cost relative to the default


class TransferCostModel(CostModel):
    """Ranks configs by their flag choices' effects on other programs; learns nothing from the
    program being tuned (OnlineCostModel does that)."""

    def __init__(self, examples: Sequence[Example]) -> None:
        self.model = ChoiceModel(PENALTY)
        self.model.fit([_flags(config) for config, _ in examples], [cost for _, cost in examples])
        self.size = len(examples)

    def predict(self, configs: Sequence[CompileConfig]) -> np.ndarray:
        return self.model.predict([_flags(config) for config in configs])


def collection_examples(npz_files: Iterable[str | Path]) -> list[Example]:
    """Collected programs (`hlotune collect`'s NAME.npz beside NAME.json): each healthy config's
    median runtime relative to its program's default."""
    examples = []
    for npz in npz_files:
        recorded = ReplayRunner.from_collection(npz).recorded
        default_ns = np.median(recorded[DEFAULT_CONFIG])
        examples += [(config, float(np.median(samples) / default_ns))
                     for config, samples in recorded.items() if not config.is_default]
    return examples


def database_examples(database: TuningDatabase, exclude: str | None = None) -> list[Example]:
    """The healthy records of every program in `database` (this machine, this compiler) but
    `exclude`."""
    return [(record.config, record.cost)
            for entry in database.programs() if entry.fingerprint != exclude
            for record in database.records(entry.fingerprint)
            if record.ok and np.isfinite(record.cost) and not record.config.is_default]


def _flags(config: CompileConfig) -> CompileConfig:
    return CompileConfig(flags=config.flags)
