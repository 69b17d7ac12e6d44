"""XTAT's tile autotuner on XLA:CPU: every kernel tuned on its own, the model choosing what to
measure.

A kernel's candidates are XLA's outer-dimension partitions (compiler/spaces/space.py's
PARTITION_CHOICES). A tile model named by the user ranks each kernel's candidates from the
kernel's own graph (kernels/sample.py: the TpuGraphs tile format `pretrained:tile` was trained
on); by default they come in a random order (seeded), which keeps more of the kernel time that
measuring every candidate saves than the shipped model's order: 51% at one candidate and 73% at
two, against its 34% and 58%, on the held-out kernels (docs/results/kernels.md).
Since one profiled run times every kernel at once (compiler/profiles/kernel_profile.py), round r measures
one program config in which every kernel takes its r-th favourite: `per_kernel` program
measurements try that many candidates of every kernel. Each kernel's time is read relative to
the same batch's default (`Trial.kernel_costs`), and the last config asked gives every kernel
its fastest candidate, where that beat XLA's choice. The tuner then confirms whole programs
beside the default, as in any space, so per-kernel gains that do not add up are not kept.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.xla.kernels import Kernel
from hlotune.compiler.spaces.space import PARTITION_CHOICES, SearchSpace, tunable_kernels
from hlotune.errors import HlotuneError
from hlotune.evaluation.scorers import Scorer
from hlotune.hlo.text import HloText
from hlotune.kernels.sample import kernel_sample
from hlotune.tuning.strategies.base import Strategy, Trial

KERNEL_GENE = "kernel:"  # compiler/spaces/space.py's prefix of a kernel's gene
# A kernel's candidate is taken only this much faster than XLA's choice in its batch: a default
# replica's kernel time is off by 4.2% at the median but 31% at the 90th percentile, and a
# kernel's neighbours move it further (docs/kernels.md).
KERNEL_NOISE = 0.1


@dataclass(frozen=True)
class KernelCandidates:
    kernel: Kernel
    ranked: tuple[tuple[int, ...], ...]  # its partitions, the model's favourite first


def rank_candidates(module: str, kernels: Sequence[Kernel], scorer: Scorer | None,
                    seed: int = 0) -> list[KernelCandidates]:
    """Each tunable kernel of the default compile's `module` text with its candidates ranked by
    `scorer`, or without one in a random order of the `seed` and the kernel's key."""
    from hlotune.hlo.sources import from_texts

    tunable = tunable_kernels(kernels)
    graphs = [None] * len(tunable)
    if scorer is not None:
        hlo = HloText.parse(module)
        graphs = from_texts([hlo.module_of(k.computation, f"kernel_{k.fingerprint}") for k in tunable])
    ranked = []
    for kernel, graph in zip(tunable, graphs):
        order = list(PARTITION_CHOICES)
        if graph is None:
            random.Random(f"{seed}:{kernel.key}").shuffle(order)
        else:
            scores = np.asarray(scorer(kernel_sample(graph, order, kernel.partitions, name=kernel.key)))
            order = [order[i] for i in np.argsort(scores, kind="stable")]
        ranked.append(KernelCandidates(kernel, tuple(order)))
    return ranked


class Kernelwise(Strategy):
    """Round r gives every kernel its r-th ranked candidate; after `per_kernel` rounds, one
    config of each kernel's fastest measured candidate; then nothing more to ask."""

    name = "kernelwise"
    profiles = True

    def __init__(self, space: SearchSpace, candidates: Sequence[KernelCandidates], per_kernel: int = 2) -> None:
        super().__init__()
        if per_kernel < 1:
            raise HlotuneError(f"per_kernel must be at least 1, got {per_kernel}")
        self._space, self._candidates = space, list(candidates)
        self._rounds = min(per_kernel, max((len(c.ranked) for c in self._candidates), default=0))
        self._round = 0
        self._costs: dict[str, dict[tuple[int, ...], float]] = {c.kernel.key: {} for c in self._candidates}
        self._combined = False

    def ask(self, n: int) -> list[CompileConfig]:
        configs: list[CompileConfig] = []
        while len(configs) < n and self._round < self._rounds:
            config = self._round_config(self._round)
            self._round += 1
            if self._fresh(config):
                configs.append(config)
        if not configs and not self._combined:  # every round told: the combination
            self._combined = True
            config = self.best_config()
            if not config.is_default and self._fresh(config):
                configs.append(config)
        return configs

    def tell(self, trials: Sequence[Trial]) -> None:
        super().tell(trials)
        for trial in trials:
            chosen = dict(trial.config.kernels.partitions)
            for candidates in self._candidates:
                key, name = candidates.kernel.key, candidates.kernel.name
                cost = (trial.kernel_costs or {}).get(name)
                if key in chosen and cost is not None and np.isfinite(trial.cost):
                    self._costs[key][chosen[key]] = cost

    def best_config(self) -> CompileConfig:
        """Each kernel's fastest measured candidate where it ran faster than XLA's choice in
        its batch by more than the kernel noise; XLA's choice elsewhere."""
        genome = {}
        for key, costs in self._costs.items():
            if costs:
                parts, cost = min(costs.items(), key=lambda item: item[1])
                if cost < 1.0 - KERNEL_NOISE:
                    genome[KERNEL_GENE + key] = parts
        return self._space.config(genome)

    def _round_config(self, r: int) -> CompileConfig:
        return self._space.config({KERNEL_GENE + c.kernel.key: c.ranked[r]
                                   for c in self._candidates if r < len(c.ranked)})
