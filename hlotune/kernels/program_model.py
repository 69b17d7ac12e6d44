"""A program's runtime from the module XLA compiled for it: the kernel model's time for each
thunk, times its calls, summed, plus a learned overhead per thunk call (`pretrained:kernels`).

The kernel model is a tile GraphCostModel (a GNN over the kernel's own graph, its partitions
and the module's code-generation options as the config) trained with MSE on the log of each
kernel's absolute ns per call (kernels/labels.py). What the kernels' sum leaves out (the
runtime launching thunks, waiting on threads) is fitted on the training programs as ns per
thunk call: inside one program only differences between configs matter, so a constant per
program would change no ranking and is not fitted.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.configs.flags import FlagConfig
from hlotune.compiler.xla.thunks import thunks_of
from hlotune.data.sample import GraphSample
from hlotune.errors import HlotuneError
from hlotune.kernels.labels import KernelGraphs, ProgramKernels, collected_configs, labels_of
from hlotune.kernels.sample import compiled_features, tile_configs

KERNEL_MODEL, OVERHEAD = "kernel-model", "overhead.json"


@dataclass(frozen=True)
class CompiledThunk:
    fingerprint: str
    kind: str  # a fusion's kind, or an unfused instruction's opcode
    partitions: tuple[int, ...]
    calls: int  # per program run, as the module says (compiler/xla/thunks.py)

    def to_json(self) -> list:
        return [self.fingerprint, self.kind, list(self.partitions), self.calls]

    @classmethod
    def from_json(cls, values: list) -> CompiledThunk:
        fingerprint, kind, partitions, calls = values
        return cls(fingerprint, kind, tuple(partitions), calls)


@dataclass(frozen=True)
class CompiledModule:
    """What a screen knows of the module XLA compiled for a config: its thunks and options."""

    flags: FlagConfig
    thunks: list[CompiledThunk]


@dataclass(frozen=True)
class Overhead:
    per_call_ns: float = 0.0  # each thunk call beyond its kernel's own time


class KernelProgramModel:
    def __init__(self, kernel_model, overhead: Overhead = Overhead(), graphs: KernelGraphs | None = None) -> None:
        self.kernel_model, self.overhead = kernel_model, overhead
        self.graphs = graphs or KernelGraphs()

    @classmethod
    def load(cls, folder: Path) -> KernelProgramModel:
        from hlotune.models.gnn import GraphCostModel

        if not (folder / OVERHEAD).exists():
            raise HlotuneError(f"{folder}: not a kernel program model (no {OVERHEAD})")
        overhead = Overhead(**json.loads((folder / OVERHEAD).read_text()))
        return cls(GraphCostModel.load(folder / KERNEL_MODEL), overhead)

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.kernel_model.save(folder / KERNEL_MODEL)
        (folder / OVERHEAD).write_text(json.dumps(asdict(self.overhead), indent=1) + "\n")

    def kernels_ns(self, compiled: list[CompiledModule]) -> np.ndarray:
        """(c,) each config's predicted kernel time: the sum over its thunks of ns per call times
        the calls the module says it makes (a screen has no profile)."""
        from hlotune.models.predict import predict_scores

        wanted: dict[str, dict[tuple[float, ...], list[tuple[int, int]]]] = defaultdict(lambda: defaultdict(list))
        for row, config in enumerate(compiled):
            for thunk, feat in zip(config.thunks, compiled_features([t.partitions for t in config.thunks], config.flags)):
                if not self.graphs.has(thunk.fingerprint):
                    continue  # unreadable (KernelGraphs): left out of the sum
                wanted[thunk.fingerprint][tuple(feat.tolist())].append((row, thunk.calls))
        total = np.zeros(len(compiled))
        for fingerprint, rows in wanted.items():
            graph, arrays = self.graphs.get(fingerprint)
            configs = tile_configs(graph, np.array(list(rows), np.float32), None)
            per_call = np.exp(predict_scores(self.kernel_model, GraphSample(arrays, configs, fingerprint)).astype(np.float64))
            for ns, places in zip(per_call, rows.values()):
                for row, calls in places:
                    total[row] += ns * calls
        return total

    def program_ns(self, compiled: list[CompiledModule]) -> np.ndarray:
        """(c,) each config's predicted runtime, up to a constant of the program."""
        calls = np.array([sum(t.calls for t in config.thunks) for config in compiled], np.float64)
        return self.kernels_ns(compiled) + self.overhead.per_call_ns * calls

    def from_labels(self, labels: ProgramKernels, configs: list[CompileConfig]) -> list[CompiledModule]:
        """The compiled modules a kernel-label file holds (their times left out)."""
        self.graphs.load(labels.modules, labels.fingerprints)
        return [CompiledModule(configs[int(labels.rows[row])].flags, [
            CompiledThunk(str(labels.fingerprints[c]), str(labels.kinds[c]),
                          tuple(int(p) for p in labels.partitions[row, c] if p), int(labels.static_calls[row, c]))
            for c in labels.present(row)])
            for row in range(len(labels.rows))]

    def from_module(self, text: str, config: CompileConfig) -> tuple[CompiledModule, dict[str, str]]:
        """A config as XLA compiled it (`text`, the compiled module), and its thunks' module
        texts by fingerprint."""
        thunks = thunks_of(text)
        modules = {t.fingerprint: t.module for t in thunks.values()}
        self.graphs.add(modules)
        return CompiledModule(config.flags, [CompiledThunk(t.fingerprint, t.kind, t.partitions, t.calls)
                                             for t in thunks.values()]), modules


def fit_overhead(kernels_ns: list[np.ndarray], calls: list[np.ndarray], measured_ns: list[np.ndarray]) -> Overhead:
    """The ns per thunk call that best explains, by least squares over the training programs,
    how far each config's measured runtime is from its predicted kernels' sum, each program's
    configs taken relative to their mean (ns of a program's default, so large programs do not
    outweigh small ones); never negative."""
    x, y = [], []
    for predicted, count, measured in zip(kernels_ns, calls, measured_ns):
        scale = measured[0]
        x.append((count - count.mean()) / scale)
        y.append(((measured - predicted) - (measured - predicted).mean()) / scale)
    x_all, y_all = np.concatenate(x), np.concatenate(y)
    denominator = float(x_all @ x_all)
    return Overhead(max(float(x_all @ y_all) / denominator, 0.0) if denominator > 0 else 0.0)


def load_kernel_program_model(name: str) -> KernelProgramModel | None:
    """The kernel program model `name` names (`pretrained:kernels`, or a folder holding one);
    None where it names a model of another kind."""
    folder = Path(name)
    if name.startswith("pretrained:"):
        from hlotune.models.files import pretrained_folder

        folder = pretrained_folder(name.removeprefix("pretrained:"))
    return KernelProgramModel.load(folder) if (folder / OVERHEAD).exists() else None


class KernelScorer:
    """A kernel program model as `hlotune eval` takes models: a collected program's configs
    scored from the modules XLA compiled for them, which its kernel-label file keeps (their
    measured times are not read). A config the labels lack (it failed to profile) scores as the
    program's median."""

    def __init__(self, model: KernelProgramModel) -> None:
        self.model = model

    def __call__(self, sample: GraphSample) -> np.ndarray:
        source = Path(sample.source)
        path = labels_of(source)
        if not path.exists():
            raise HlotuneError(f"{sample.name}: a kernel model scores the modules XLA compiled for each config, "
                               f"and none are kept at {path} (hlotune rebuild kernel-labels)")
        labels, configs = ProgramKernels.load(path), collected_configs(source.with_suffix(".json"))
        if len(configs) != sample.num_configs:
            raise HlotuneError(f"{source}: {sample.num_configs} configs, but its summary lists {len(configs)}")
        predicted = np.log(self.model.program_ns(self.model.from_labels(labels, configs)))
        scores = np.full(sample.num_configs, np.median(predicted))
        scores[labels.rows] = predicted
        return scores
