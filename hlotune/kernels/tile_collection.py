"""Programs x per-kernel configs -> measured kernels -> the TpuGraphs tile collection.

One profiled run times every kernel of a compile at once (compiler/profiles/kernel_profile.py), so each
measured program config gives every tunable kernel its own drawn partitions and labels all of
them: dozens of kernel samples for one program measurement. Draws are balanced: in each block
of `len(PARTITION_CHOICES)` configs every kernel takes every choice once, in its own random
order, so each kernel gets the same number of samples of each choice while the kernels'
choices stay independent of one another.

A sample is a kernel's median time over the config's profiled runs, divided by the same
kernel's time under XLA's own choice in the same batch (the default's profile): batches run
minutes apart on a drifting machine. A kernel's file holds one row per distinct partitioning
with `config_runtime` the median ratio times `config_runtime_normalizers` (its median time under
XLA's choice), and every row keeps the same number of samples (the smallest row's count: extra
samples of a row are dropped, never invented).

A kernel is identified across programs by its fingerprint (kernels.py): a kernel already
sampled `enough` times in this folder is left at XLA's choice in later programs (measured once).
Kernels shorter than `min_kernel_ns` under XLA's choice are not labelled: the profiler's own
cost per event (about a microsecond) would be a large part of them.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.configs.kernel_config import KernelConfig
from hlotune.compiler.xla.kernels import Kernel, kernels_of
from hlotune.compiler.measurement.measure import BatchResult, Measurer, MeasureSettings
from hlotune.compiler.spaces.space import PARTITION_CHOICES, UNTUNABLE_KINDS, tunable_kernels
from hlotune.errors import HlotuneError
from hlotune.hlo.text import HloText

KERNELS = ".kernels"  # the folder of each kernel's module text
JOURNAL = ".tile-journal.jsonl"


@dataclass(frozen=True)
class TileSettings:
    configs: int = 20  # program configs per program: a multiple of len(PARTITION_CHOICES) balances
    batch: int = 10
    profile_runs: int = 10
    seed: int = 0
    min_kernel_ns: float = 1_000.0
    enough: int = 40  # samples of a kernel after which later programs leave it at XLA's choice

    def __post_init__(self) -> None:
        if min(self.configs, self.batch, self.profile_runs, self.enough) < 1:
            raise HlotuneError("configs, batch, profile runs and enough must be at least 1")

    def measure_settings(self) -> MeasureSettings:
        """One timed round (the program's runtime is not the label here), the profile after."""
        return MeasureSettings(rounds=1, repeats=3, default_replicas=1, seed=self.seed,
                               profile_runs=self.profile_runs)


@dataclass(frozen=True)
class KernelSample:
    fingerprint: str
    program: str
    name: str
    partitions: tuple[int, ...]
    ns: float
    default_ns: float  # the kernel under XLA's choice in the same batch (the reference's profile)
    batch: str  # program and batch index: where the default was measured
    xla: tuple[int, ...]  # XLA's own partitions of this kernel
    replica: bool  # a default replica's sample: XLA's choice measured again (the noise floor)

    def to_json(self) -> dict:
        return asdict(self) | {"partitions": list(self.partitions), "xla": list(self.xla)}


def draw_kernel_configs(kernels: list[Kernel], count: int, rng: random.Random) -> list[CompileConfig]:
    """`count` configs, each giving every kernel one of PARTITION_CHOICES, balanced per block."""
    columns = []
    for kernel in kernels:
        column: list[tuple[int, ...]] = []
        while len(column) < count:
            block = list(PARTITION_CHOICES)
            rng.shuffle(block)
            column += block
        columns.append(column[:count])
    return [CompileConfig(kernels=KernelConfig(tuple(sorted((k.key, column[i]) for k, column in zip(kernels, columns)))))
            for i in range(count)]


def batch_samples(program: str, batch: str, result: BatchResult, min_kernel_ns: float) -> list[KernelSample]:
    """Every timed kernel of every config of one measured batch, and of the default's replicas;
    the reference default (d0) is what they are divided by, not a sample itself."""
    reference = result.defaults[0]
    if not reference.kernel_ns:
        raise HlotuneError(f"{program}: the default was not profiled: {reference.profile_error}")
    xla = {k.name: k.partitions for k in kernels_of(reference.hlo)}
    samples = []
    for measured in [*result.defaults[1:], *result.measurements]:
        if not measured.ok or not measured.kernel_ns:
            continue
        replica = measured.config.is_default
        for kernel in kernels_of(measured.hlo):
            base, ns = reference.kernel_ns.get(kernel.name), measured.kernel_ns.get(kernel.name)
            if kernel.kind in UNTUNABLE_KINDS or base is None or ns is None or base < min_kernel_ns:
                continue
            samples.append(KernelSample(kernel.fingerprint, program, kernel.name, kernel.partitions,
                                        ns, base, batch, xla.get(kernel.name, kernel.partitions), replica))
    return samples


class TileFolder:
    """One split's tile collection: a journal of kernel samples (append-only, fsynced per
    batch, so a stopped collection loses at most the batch in flight), each kernel's module
    text, and the npz files written from them."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.samples: list[KernelSample] = []
        self.batches: set[str] = set()
        self.programs: set[str] = set()
        path = folder / JOURNAL
        if path.exists():
            for number, line in enumerate(path.read_text().splitlines(), 1):
                self._replay(line, path, number)

    def _replay(self, line: str, path: Path, number: int) -> None:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            if number == len(path.read_text().splitlines()):
                return  # the line in flight when a run was killed
            raise HlotuneError(f"{path}:{number}: corrupt journal line") from None
        if "done" in record:
            self.programs.add(record["done"])
            return
        self.batches.add(record["batch"])
        self.samples += [KernelSample(**(s | {"partitions": tuple(s["partitions"]), "xla": tuple(s["xla"])}))
                         for s in record["samples"]]

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = defaultdict(int)
        for sample in self.samples:
            counts[sample.fingerprint] += 1
        return counts

    def record(self, batch: str, samples: list[KernelSample]) -> None:
        self._append({"batch": batch, "samples": [s.to_json() for s in samples]})
        self.batches.add(batch)
        self.samples += samples

    def finish(self, program: str) -> None:
        self._append({"done": program})
        self.programs.add(program)

    def keep_module(self, kernel: Kernel, text: HloText) -> None:
        path = self.folder / KERNELS / f"{kernel.fingerprint}.hlo"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text.module_of(kernel.computation, f"kernel_{kernel.fingerprint}"))

    def _append(self, record: dict) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / JOURNAL, "a") as stream:
            stream.write(json.dumps(record) + "\n")
            stream.flush()
            os.fsync(stream.fileno())


@dataclass(frozen=True)
class TileResult:
    program: str
    kernels: int  # kernels labelled by this program
    new_kernels: int  # of which not sampled enough before
    samples: int
    failed: int  # configs that failed
    seconds: float
    resumed: bool


def _keep_modules(store: TileFolder, result: BatchResult, fingerprints: set[str]) -> None:
    """Each sampled kernel's module text, from the default's compile or, for a kernel whose
    text differs there (a large constant inside prints elided in one module and whole in the
    other), from the config's that sampled it."""
    for measured in (*result.defaults, *result.measurements):
        if not measured.hlo:
            continue
        hlo = HloText.parse(measured.hlo)
        for kernel in kernels_of(measured.hlo):
            if kernel.fingerprint in fingerprints:
                store.keep_module(kernel, hlo)
                fingerprints = fingerprints - {kernel.fingerprint}


def collect_tiles(spec: str, settings: TileSettings, folder: Path, *, progress: bool = True) -> TileResult:
    """Label the kernels of one program into `folder`'s journal (resuming batch by batch)."""
    from hlotune.compiler.spaces.kernel_space import program_kernels
    from hlotune.compiler.configs.layouts import LayoutSpace
    from hlotune.programs import load_program
    from hlotune.progress import progress_bar

    store = TileFolder(folder)
    if spec in store.programs:
        return TileResult(spec, 0, 0, 0, 0, 0.0, resumed=True)
    started = time.perf_counter()
    layouts = LayoutSpace(load_program(spec))
    kernels = program_kernels(layouts)
    counts = store.counts()
    tunable = [k for k in tunable_kernels(kernels) if counts.get(k.fingerprint, 0) < settings.enough]
    rng = random.Random(f"{settings.seed}:{spec}")
    configs = draw_kernel_configs(tunable, settings.configs, rng) if tunable else []
    batches = [configs[i:i + settings.batch] for i in range(0, len(configs), settings.batch)] or [[]]
    labelled, failed, resumed = set(), 0, False
    with Measurer(spec, settings.measure_settings()) as measurer:
        for index, batch in enumerate(progress_bar(batches, show=progress, desc=spec, unit="batch", leave=False)):
            name = f"{spec}#{index}"
            if name in store.batches:
                resumed = True
                continue
            result = measurer.measure(batch)
            samples = batch_samples(spec, name, result, settings.min_kernel_ns)
            failed += sum(not m.ok for m in result.measurements)
            _keep_modules(store, result, {s.fingerprint for s in samples})
            store.record(name, samples)
            labelled |= {s.fingerprint for s in samples}
    store.finish(spec)
    new = len(labelled - {fp for fp, n in counts.items() if n >= settings.enough})
    return TileResult(spec, len(labelled), new, sum(1 for s in store.samples if s.program == spec), failed,
                      time.perf_counter() - started, resumed)


def tile_rows(samples: list[KernelSample]) -> tuple[list[tuple[int, ...]], np.ndarray, int]:
    """(partitionings, samples (rows x s) in ns of the kernel's median default, normaliser)."""
    normalizer = statistics.median(s.default_ns for s in samples)
    by_parts: dict[tuple[int, ...], list[float]] = defaultdict(list)
    for sample in samples:
        by_parts[sample.partitions].append(sample.ns / sample.default_ns * normalizer)
    parts = sorted(by_parts)
    width = min(len(v) for v in by_parts.values())
    return parts, np.array([by_parts[p][:width] for p in parts], dtype=np.int64), int(round(normalizer))
