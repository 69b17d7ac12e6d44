"""The analytical baseline: rules a compiler engineer would write down, with nothing trained.

What a learned model must beat to be worth its training. One rule per collection, each
scoring a config's predicted cost (lower = faster):

- layout: the elements moved by layout changes (`layout_changes.py`): every tensor of a
  configured site whose layout is not row-major costs its size, half of it when the minor-most
  dimension stays. Fewer and smaller transposes rank faster.
- tile: minus the log of the tile sizes (the products of the kernel, output and input bounds):
  a kernel runs one step per tile, and each step pays a fixed overhead, so tiles doing more
  work per step rank faster. Blind to the memory limit that makes too large a tile spill.
- tile, hlotune's XLA:CPU kernels (config_feat = outer-dimension partitions): a roofline. The
  kernel's busy time (the slower of its flops and its bytes, as opt/costs.py counts them) is
  shared by min(partitions, cores) threads, and each partition pays a dispatch overhead.
- flags: penalties, in log-runtime units, for options that take optimisations away: no LLVM
  optimisation, each disabled HLO pass, no XNNPACK, single-threaded Eigen. Options whose
  effect depends on the machine (ISA, vector width, fast math) get none. The penalties are
  guesses of the effects' sizes, not fitted.

For whole programs a roofline from flops and bytes was the other candidate, but no flag or
layout changes a program's flops, and only layouts change its bytes, which the layout rule
already counts; a kernel's partitions change how many threads share its roofline time.
"""

from __future__ import annotations

import os

import numpy as np

from hlotune.data.sample import FlagConfigArrays, GraphSample, LayoutConfigArrays, TileConfigArrays
from hlotune.data.schema import DISABLE_PASSES, flag_column
from hlotune.errors import HlotuneError
from hlotune.hlo.costs import LAUNCH_S, core_seconds
from hlotune.models.baselines.layout_changes import transpose_costs

TILE_PRODUCTS = (7, 15, 23)  # config_feat: product of the kernel, output and input bounds
PARTITIONS = 6  # config_feat of an XLA:CPU kernel: the product of its partitions

# (column, value, penalty): a config whose column holds value pays the penalty.
FLAG_PENALTIES = (
    ("xla_backend_optimization_level", 0.0, 1.0),
    ("xla_cpu_use_xnnpack", 0.0, 0.25),
    ("xla_cpu_multi_thread_eigen", 0.0, 0.25),
)
DISABLED_PASS_PENALTY = 0.25


def analytical_scores(sample: GraphSample) -> np.ndarray:
    """One predicted cost per config of the sample, lower = faster."""
    configs = sample.configs
    if isinstance(configs, LayoutConfigArrays):
        return np.log1p(transpose_costs(sample).sum(axis=(1, 2)))
    if isinstance(configs, TileConfigArrays) and configs.kernel_roofline is not None:
        return np.log(_partitioned_seconds(configs))
    if isinstance(configs, TileConfigArrays):
        return -np.log1p(np.maximum(configs.config_feat[:, TILE_PRODUCTS], 0)).sum(axis=1)
    if isinstance(configs, FlagConfigArrays):
        return _flag_penalties(configs)
    raise HlotuneError(f"{sample.name or 'graph'}: the graph has no configs to score")


def _partitioned_seconds(configs: TileConfigArrays) -> np.ndarray:
    """Each config's roofline seconds: the kernel's busy time over the threads its partitions
    can use (this machine's cores), plus an overhead per partition."""
    flops, nbytes = (float(v) for v in configs.kernel_roofline)
    partitions = np.maximum(configs.config_feat[:, PARTITIONS], 1.0)
    threads = np.minimum(partitions, os.cpu_count() or 1)
    return core_seconds(flops, nbytes) / threads + partitions * LAUNCH_S


def _flag_penalties(configs: FlagConfigArrays) -> np.ndarray:
    """Columns are found by name, so files measuring other options score what they share."""
    columns = {str(name): j for j, name in enumerate(configs.config_feat_names)}
    feat = configs.config_feat
    total = np.zeros(len(feat))
    for name, value, penalty in FLAG_PENALTIES:
        if name in columns:
            total += penalty * (feat[:, columns[name]] == value)
    for name, j in columns.items():
        if name.startswith(flag_column(DISABLE_PASSES, "")):
            total += DISABLED_PASS_PENALTY * feat[:, j]
    return total
