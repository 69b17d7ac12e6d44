"""Baselines that see what XLA compiled for each config, as the kernel program model does, so
that it is compared fairly: the compiled module's roofline, and GBDT-rank given a summary of
the compiled module beside the features it always has (features.py).

The summary per config: thunks, their calls, fusions of each kind and unfused instructions,
and the log of the flops, bytes and roofline seconds summed over thunk calls.
"""

from __future__ import annotations

import numpy as np

from hlotune.data.sample import GraphSample
from hlotune.hlo.costs import LAUNCH_S, core_seconds
from hlotune.kernels.labels import KernelGraphs
from hlotune.kernels.program_model import CompiledModule
from hlotune.models.baselines.features import feature_matrix, flag_names_of
from hlotune.models.baselines.gbdt import PARAMS, ROUNDS, load_lightgbm, relevance_grades

KINDS = ("kLoop", "kInput", "kOutput", "kCustom")
SUMMARY = ("thunks", "calls", *KINDS, "unfused", "log_flops", "log_bytes", "log_roofline_s")


def compiled_summary(compiled: list[CompiledModule], graphs: KernelGraphs) -> np.ndarray:
    """(c, len(SUMMARY)) the summary of each config's compiled module."""
    rows = []
    for config in compiled:
        flops = nbytes = seconds = 0.0
        kinds = dict.fromkeys(KINDS, 0)
        for thunk in config.thunks:
            thunk_flops, thunk_bytes = graphs.roofline(thunk.fingerprint) if graphs.has(thunk.fingerprint) else (0, 0)
            flops, nbytes = flops + thunk_flops * thunk.calls, nbytes + thunk_bytes * thunk.calls
            seconds += (core_seconds(thunk_flops, thunk_bytes) + LAUNCH_S) * thunk.calls
            if thunk.kind in kinds:
                kinds[thunk.kind] += 1
        fused = sum(kinds.values())
        rows.append([len(config.thunks), sum(t.calls for t in config.thunks), *kinds.values(),
                     len(config.thunks) - fused, np.log1p(flops), np.log1p(nbytes), np.log(seconds or LAUNCH_S)])
    return np.array(rows, np.float64)


def roofline_scores(summary: np.ndarray) -> np.ndarray:
    """The analytical baseline on the compiled modules: their roofline seconds (log)."""
    return summary[:, SUMMARY.index("log_roofline_s")]


class CompiledGbdtRank:
    """LambdaRank trees over each program's configs on the usual GBDT features plus the
    compiled module's summary."""

    def __init__(self, booster, flag_names: tuple[str, ...]) -> None:
        self.booster, self.flag_names = booster, flag_names

    @classmethod
    def fit(cls, programs: list[tuple[GraphSample, np.ndarray, np.ndarray]], rounds: int = ROUNDS) -> CompiledGbdtRank:
        """`programs`: (the collected sample, its summary rows, the sample's config rows they
        describe), each program a LambdaRank group."""
        lightgbm = load_lightgbm()
        flag_names = flag_names_of(programs[0][0])
        features, grades, groups = [], [], []
        for sample, summary, rows in programs:
            features.append(_features(sample, summary, rows, flag_names))
            grades.append(relevance_grades(np.log(sample.configs.config_runtime[rows].astype(np.float64))))
            groups.append(len(rows))
        data = lightgbm.Dataset(np.concatenate(features), np.concatenate(grades), group=groups, params={"verbosity": -1})
        return cls(lightgbm.train(PARAMS | {"objective": "lambdarank"}, data, num_boost_round=rounds), flag_names)

    def scores(self, sample: GraphSample, summary: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Lower = predicted faster, for the configs at `rows`."""
        return -self.booster.predict(_features(sample, summary, rows, self.flag_names), num_threads=1)


def _features(sample: GraphSample, summary: np.ndarray, rows: np.ndarray, flag_names: tuple[str, ...]) -> np.ndarray:
    return np.concatenate([feature_matrix(sample, flag_names)[rows], summary], axis=1)
