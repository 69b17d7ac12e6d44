"""A cost model learned from other programs' measurements (XTAT's transfer between programs).

Many XLA options help or hurt most programs on one machine alike (a vector width, an ISA cap, a
pass that never pays here), so the per-choice effects of `ChoiceModel`, fitted on other
programs' measurements, rank a new program's flag configs before it has been measured at all.
Fitted on edition 1's 8 training families, it put the best held-out configs first less often
than the pretrained GNN; fitted on edition 2's 31, it puts a config within 2% of the best
second, right after the default, on the median held-out program (benchmarks/tune_bench.py,
replayed; docs/tuning.md). `hlotune tune --model transfer[@DIR]` ranks with it. Layout choices
name a program's own tensors, so they do not transfer: the model sees flags only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from hlotune.compiler.configs.config import DEFAULT_CONFIG, CompileConfig
from hlotune.data.builtin import resolve
from hlotune.errors import HlotuneError
from hlotune.tuning.models.base import CostModel
from hlotune.tuning.models.online import ChoiceModel
from hlotune.tuning.runners.replay import ReplayRunner

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


def load_transfer(spec: str, space_kind: str) -> TransferCostModel:
    """`transfer`, fitted on the built-in dataset's flags training programs, or `transfer@DIR`,
    on the programs `hlotune collect` wrote into DIR."""
    if space_kind == "layout":
        raise HlotuneError("the transfer model ranks flags; layouts name each program's own tensors")
    _, _, folder = spec.partition("@")
    root = Path(folder) if folder else resolve("builtin:flags/train")
    files = sorted(npz for npz in root.glob("*.npz") if npz.with_suffix(".json").is_file())
    if not files:
        raise HlotuneError(f"{root}: no collected programs (NAME.npz beside NAME.json) to transfer from")
    return TransferCostModel(collection_examples(files))


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
