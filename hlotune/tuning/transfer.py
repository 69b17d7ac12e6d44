"""A cost model learned from other programs' measurements (XTAT's transfer between programs).

Many XLA options help or hurt most programs on one machine alike (a vector width, an ISA cap, a
pass that never pays here), so the per-choice effects of `ChoiceModel`, fitted on other
programs' measurements, rank a new program's flag configs before it has been measured at all.
Fitted on the built-in training families, it orders the held-out families' recorded flag
configs better than the pretrained GNN overall (median Kendall tau 0.55 against 0.48) but puts
the best ones first less often, so the tuner does not use it by default: benchmarks/tune_bench.py
compares the two, alone and summed (docs/tuning.md). Layout choices name a program's own
tensors, so they do not transfer: the model sees flags only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from hlotune.compiler.config import DEFAULT_CONFIG, CompileConfig
from hlotune.tuning.cost_model import CostModel
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


def _flags(config: CompileConfig) -> CompileConfig:
    return CompileConfig(flags=config.flags)
