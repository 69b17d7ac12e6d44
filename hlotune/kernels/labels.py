"""Kernel labels read back (kernels/label_collection.py writes them): each collected config's
compiled thunks with their times, and the tile-format kernel samples a kernel model learns from.

A kernel sample is one thunk (fingerprint) with one config row per distinct way it was compiled
(its partitions and the module's code-generation options, kernels/sample.py) and, as its
runtime, the median ns per call over every program config that compiled it so. The normaliser
is 1: runtimes are absolute, so that a model trained with MSE on their log predicts how long a
kernel takes, which a program model can sum.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hlotune.compiler.configs.config import DEFAULT_CONFIG, CompileConfig
from hlotune.compiler.measurement.measure import OK
from hlotune.data.sample import GraphArrays, GraphSample
from hlotune.errors import HlotuneError
from hlotune.hlo.graph import HloGraph
from hlotune.kernels.sample import compiled_features, kernel_roofline, tile_configs

LABELS = "kernels"  # the labels' folder beside the collection's space folders
MODULES = ".kernels"  # each thunk's module text, in the space's labels folder


@dataclass(frozen=True)
class ProgramKernels:
    """One program's configs (rows of its collected npz) x the thunks they compiled."""

    path: Path
    rows: np.ndarray  # (c,)
    names: np.ndarray  # (k,)
    fingerprints: np.ndarray  # (k,)
    kinds: np.ndarray  # (k,)
    ns: np.ndarray  # (c, k) per program run, NaN where the config has no such thunk
    calls: np.ndarray  # (c, k) events per run in the profile
    static_calls: np.ndarray  # (c, k) what the module says (known trip counts): all a screen has
    partitions: np.ndarray  # (c, k, 6)
    other_ns: np.ndarray  # (c,) control-flow thunks

    @classmethod
    def load(cls, path: Path) -> ProgramKernels:
        try:
            with np.load(path) as arrays:
                return cls(path, **{name: arrays[name] for name in
                                    ("rows", "names", "fingerprints", "kinds", "ns", "calls", "static_calls",
                                     "partitions", "other_ns")})
        except (OSError, KeyError, ValueError) as error:
            raise HlotuneError(f"{path}: not a kernel-label file ({error})") from None

    @property
    def modules(self) -> Path:
        return self.path.parent.parent / MODULES

    def present(self, row: int) -> np.ndarray:
        """The thunk columns config `row` (an index into `rows`) compiled."""
        return np.flatnonzero(self.calls[row] > 0)


def labels_of(collected: Path) -> Path:
    """Where the kernel labels of a collected program file (ROOT/SPACE/SPLIT/NAME.npz) live."""
    return collected.parent.parent.parent / LABELS / collected.parent.parent.name / collected.parent.name / collected.name


def collected_configs(summary: Path) -> list[CompileConfig]:
    """The configs of a collected program in its npz's row order (collect/collector.py writes
    the default first, then each healthy config), read from its summary (`NAME.json`)."""
    records = json.loads(summary.read_text())["configs"]
    return [DEFAULT_CONFIG] + [CompileConfig.from_dict(r["config"]) for r in records if r["status"] == OK]


class KernelGraphs:
    """Each thunk's graph, parsed and featurized once, by fingerprint: thousands of kernels
    recur across configs and programs. A module XLA's parser rejects (a handful of ten
    thousand: a custom call whose comparator an early collector left out) is kept in
    `unreadable` with the reason; models leave such a thunk out (`has` is False)."""

    def __init__(self) -> None:
        self.unreadable: dict[str, str] = {}
        self._graphs: dict[str, tuple[HloGraph, GraphArrays]] = {}
        self._rooflines: dict[str, np.ndarray] = {}

    def get(self, fingerprint: str) -> tuple[HloGraph, GraphArrays]:
        return self._graphs[fingerprint]

    def has(self, fingerprint: str) -> bool:
        return fingerprint in self._graphs

    def roofline(self, fingerprint: str) -> np.ndarray:
        """The thunk's flops and bytes (kernels/sample.kernel_roofline)."""
        if fingerprint not in self._rooflines:
            self._rooflines[fingerprint] = kernel_roofline(self._graphs[fingerprint][0])
        return self._rooflines[fingerprint]

    def load(self, modules: Path, fingerprints) -> None:
        """Parse and featurize the ones not loaded yet (one parser process for all of them)."""
        missing = sorted(set(map(str, fingerprints)) - set(self._graphs) - set(self.unreadable))
        self.add({fingerprint: _module_text(modules, fingerprint) for fingerprint in missing})

    def add(self, texts: dict[str, str]) -> None:
        """Parse and featurize thunk modules given as text, by fingerprint."""
        from hlotune.hlo.featurize import featurize
        from hlotune.hlo.proto import graph_from_proto
        from hlotune.hlo.text_parser import texts_to_protos

        missing = [f for f in texts if f not in self._graphs and f not in self.unreadable]
        for fingerprint, proto in zip(missing, texts_to_protos([texts[f] for f in missing])):
            if isinstance(proto, HlotuneError):
                self.unreadable[fingerprint] = str(proto)
                continue
            graph = graph_from_proto(proto, name=fingerprint)
            self._graphs[fingerprint] = (graph, featurize(graph, progress=False))


def _module_text(modules: Path, fingerprint: str) -> str:
    path = modules / f"{fingerprint}.hlo"
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise HlotuneError(f"{path}: unreadable kernel module ({error})") from None


def config_rows(labels: ProgramKernels, row: int, configs: list[CompileConfig], columns: np.ndarray) -> np.ndarray:
    """The tile config rows (kernels/sample.config_features) of thunks `columns` as
    config `row` (an index into `rows`) compiled them: XLA's partitions, the config's options."""
    parts = [tuple(int(p) for p in labels.partitions[row, c] if p) for c in columns]
    return compiled_features(parts, configs[int(labels.rows[row])].flags)


def kernel_samples(programs: list[tuple[ProgramKernels, list[CompileConfig]]], graphs: KernelGraphs) -> list[GraphSample]:
    """One labelled tile sample per thunk fingerprint over `programs` (labels and the collected
    configs of each), a row per distinct compiled form, its runtime the median ns per call."""
    times: dict[str, dict[tuple[float, ...], list[float]]] = defaultdict(lambda: defaultdict(list))
    for labels, configs in programs:
        graphs.load(labels.modules, labels.fingerprints)
        for row in range(len(labels.rows)):
            columns = labels.present(row)
            for column, feat in zip(columns, config_rows(labels, row, configs, columns)):
                if not graphs.has(str(labels.fingerprints[column])):
                    continue
                per_call = labels.ns[row, column] / labels.calls[row, column]
                times[str(labels.fingerprints[column])][tuple(feat.tolist())].append(float(per_call))
    return [_sample(fingerprint, rows, graphs) for fingerprint, rows in sorted(times.items())]


def _sample(fingerprint: str, rows: dict[tuple[float, ...], list[float]], graphs: KernelGraphs) -> GraphSample:
    graph, arrays = graphs.get(fingerprint)
    runtimes = np.array([[max(round(float(np.median(times))), 1)] for times in rows.values()], np.int64)
    configs = tile_configs(graph, np.array(list(rows), np.float32), runtimes)
    return GraphSample(arrays, configs, fingerprint, f"kernel {fingerprint}")
