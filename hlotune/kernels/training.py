"""Trains a kernel program model (kernels/program_model.py; `pretrained:kernels` is one): the
kernel model on the kernel labels of the built-in train split for a fixed number of epochs, then
the overhead per thunk call fitted on the train programs' measured runtimes. No early stopping:
the trainer's validation ranks the configs of one graph, while a kernel model is judged by how
its sums rank a program's configs (benchmarks/kernel_model_bench.py, on the test split).

    hlotune rebuild kernel-model OUT [--epochs N] [--spaces flags,layout]
"""

from __future__ import annotations

import argparse
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from hlotune.compiler.configs.config import CompileConfig
from hlotune.errors import HlotuneError
from hlotune.kernels.labels import LABELS, KernelGraphs, ProgramKernels, kernel_samples
from hlotune.models.settings import ModelSettings

if TYPE_CHECKING:  # torch loads when training starts: a wrong option fails at once
    from hlotune.train.trainer import TrainSettings

EPOCHS = 12


def train_settings(epochs: int = EPOCHS) -> TrainSettings:
    """The recipe `pretrained:kernels` was trained with."""
    from hlotune.train.trainer import TrainSettings

    return TrainSettings(epochs=epochs, loss="mse", configs_per_batch=16, graphs_per_step=8)


@dataclass(frozen=True)
class LabelledProgram:
    labels: ProgramKernels
    configs: list[CompileConfig]  # the collected program's, in its npz's row order
    measured_ns: np.ndarray  # the collection's runtime of each labels row


def labelled_programs(split: str, spaces: tuple[str, ...] = ("flags",)) -> list[LabelledProgram]:
    """Every built-in program of `split` with kernel labels, in `spaces`."""
    from hlotune.data.builtin import EDITION
    from hlotune.data.npz import read_sample
    from hlotune.kernels.labels import collected_configs

    programs = []
    for space in spaces:
        for path in sorted((EDITION.root / LABELS / space / split).glob("*.npz")):
            collected = EDITION.root / space / split / path.name
            labels = ProgramKernels.load(path)
            runtimes = read_sample(collected).configs.config_runtime.astype(np.float64)
            programs.append(LabelledProgram(labels, collected_configs(collected.with_suffix(".json")),
                                            runtimes[labels.rows]))
    return programs


def write_samples(programs: list[LabelledProgram], graphs: KernelGraphs, folder: Path) -> int:
    from hlotune.data.npz import write_sample

    folder.mkdir(parents=True, exist_ok=True)
    samples = kernel_samples([(p.labels, p.configs) for p in programs], graphs)
    for sample in samples:
        write_sample(folder / f"{sample.name}.npz", sample)
    return len(samples)


def train_kernels(out: Path, settings: TrainSettings | None = None,
                  model_settings: ModelSettings = ModelSettings(), spaces: tuple[str, ...] = ("flags",),
                  progress: bool = True):
    """Train into `out` (`samples/` holds the kernel samples, kept for inspection; `run/` the
    training run; `model/` the program model)."""
    from hlotune.kernels.program_model import KernelProgramModel, fit_overhead
    from hlotune.models.gnn import GraphCostModel
    from hlotune.train.trainer import train

    settings = settings or train_settings()
    graphs = KernelGraphs()
    train_programs = labelled_programs("train", spaces)
    if not train_programs:
        raise HlotuneError(f"no kernel labels in the built-in train split of {', '.join(spaces)}: "
                           "run hlotune rebuild kernel-labels first")
    samples = out / "samples"
    shutil.rmtree(samples, ignore_errors=True)
    print(f"kernel samples: {write_samples(train_programs, graphs, samples)} from {len(train_programs)} programs",
          flush=True)
    run = out / "run"
    shutil.rmtree(run, ignore_errors=True)
    result = train(samples, None, run, settings, model_settings=model_settings, progress=progress)
    model = KernelProgramModel(GraphCostModel.load(result.model_dir), graphs=graphs)
    sums = [model.kernels_ns(model.from_labels(p.labels, p.configs)) for p in train_programs]
    model.overhead = fit_overhead(sums, [p.labels.static_calls.sum(axis=1) for p in train_programs],
                                  [p.measured_ns for p in train_programs])
    model.save(out / "model")
    return model


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="hlotune rebuild kernel-model",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    parser.add_argument("--spaces", default="flags", help="comma-separated: flags, layout")
    args = parser.parse_args(argv)
    model = train_kernels(args.out, train_settings(args.epochs), spaces=tuple(args.spaces.split(",")))
    print(f"model in {args.out / 'model'}; overhead {model.overhead.per_call_ns:.0f} ns per thunk call")
    return 0
