"""A tile folder's journal -> one TpuGraphs tile file per kernel (`FINGERPRINT.npz`), with
`FINGERPRINT.json` beside it: the programs and families the kernel came from, its names there,
its noise floor and XLA's own choice.

The graph is the kernel's fused computation standing alone (hlo/text.py HloText.module_of),
featurized with the same 140 features as every hlotune graph.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hlotune.data.npz import write_sample
from hlotune.kernels.sample import kernel_sample
from hlotune.kernels.tile_collection import KERNELS, KernelSample, TileFolder, tile_rows


@dataclass(frozen=True)
class TileSummary:
    kernels: int  # files written
    samples: int  # kernel-config samples in them
    programs: int
    families: int
    noise_floor: float  # median over kernels of |replica / reference - 1|
    skipped: int  # kernels with fewer than two partitionings, one sample a row, or no module text


def write_tile_files(folder: Path) -> TileSummary:
    """Write each kernel's files from the folder's journal; a kernel whose card already counts
    all of its samples is left as it is (featurizing thousands of kernels again after every
    program would cost minutes)."""
    from hlotune.hlo.sources import from_text

    store = TileFolder(folder)
    by_kernel: dict[str, list[KernelSample]] = defaultdict(list)
    for sample in store.samples:
        by_kernel[sample.fingerprint].append(sample)
    kernels, samples, noise, skipped = 0, 0, [], 0
    for fingerprint, kernel_samples in sorted(by_kernel.items()):
        parts, runtimes, normalizer = tile_rows(kernel_samples)
        module = folder / KERNELS / f"{fingerprint}.hlo"
        if len(parts) < 2 or runtimes.shape[1] < 2 or not module.exists():
            skipped += 1
            continue
        replicas = [abs(s.ns / s.default_ns - 1) for s in kernel_samples if s.replica]
        noise += [statistics.median(replicas)] if replicas else []
        kernels, samples = kernels + 1, samples + runtimes.size
        card = _card(fingerprint, kernel_samples, parts, replicas)
        card_path = folder / f"{fingerprint}.json"
        if card_path.exists() and _measured(json.loads(card_path.read_text())) == card:
            continue
        sample = kernel_sample(from_text(module.read_text()), parts, kernel_samples[0].xla, runtimes=runtimes,
                               normalizer=normalizer, name=fingerprint)
        write_sample(folder / f"{fingerprint}.npz", sample)
        flops, nbytes = (float(v) for v in sample.configs.kernel_roofline)
        card_path.write_text(json.dumps(card | {"flops": flops, "bytes": nbytes}, indent=1))
    programs = {s.program for s in store.samples}
    return TileSummary(kernels, samples, len(programs), len({family_of(p) for p in programs}),
                       float(np.median(noise)) if noise else float("nan"), skipped)


def family_of(program: str) -> str:
    return program.partition("@")[0]


def _measured(card: dict) -> dict:
    """A card without what the module text gives (its roofline): what the journal decides."""
    return {key: value for key, value in card.items() if key not in ("flops", "bytes")}


def _card(fingerprint: str, samples: list[KernelSample], parts: list, replicas: list[float]) -> dict:
    return {
        "fingerprint": fingerprint,
        "programs": sorted({s.program for s in samples}),
        "families": sorted({family_of(s.program) for s in samples}),
        "names": sorted({s.name for s in samples}),
        "xla_partitions": list(samples[0].xla),
        "partitionings": [list(p) for p in parts],
        "samples": len(samples),
        "noise_floor": statistics.median(replicas) if replicas else None,
    }
