"""A kernel as a TpuGraphs tile sample: what the tile collection writes and a tile model ranks.

The graph is the kernel's fused computation standing alone (hlo/text.py HloText.module_of),
featurized with the same 140 features as every hlotune graph; each config is one partitioning
of its outer dimensions. Collection (kernels/tile_files.py) labels the configs with measured
runtimes; the tile tuner (tuning/strategies/kernelwise.py) asks a model to rank them unlabelled.
"""

from __future__ import annotations

import numpy as np

from hlotune.compiler.configs.flags import (
    DEFAULT_FLAGS,
    FAST_MATH,
    FLAG_FEATURE_NAMES,
    FlagConfig,
)
from hlotune.data.sample import GraphSample, TileConfigArrays
from hlotune.hlo.costs import roofline
from hlotune.hlo.graph import HloGraph

TILE_FEATURES = 24  # config_feat width of the TpuGraphs tile collection
MAX_DIMS = 6  # partitions per outer dimension in config_feat[:, :6]
OPTIONS_AT = MAX_DIMS + 2  # config_feat[:, 8:22]: the code-generation options (codegen_options)
CODEGEN = ("xla_backend_optimization_level", "xla_cpu_use_fusion_emitters", FAST_MATH,
           "xla_cpu_fast_math_honor_division", "xla_cpu_fast_math_honor_functions", "xla_cpu_prefer_vector_width",
           "xla_cpu_max_isa", "xla_cpu_opt_preset", "xla_cpu_multi_thread_eigen", "xla_cpu_enable_fast_min_max")
CODEGEN_COLUMNS = tuple(i for i, name in enumerate(FLAG_FEATURE_NAMES) if name.partition("=")[0] in CODEGEN)


def kernel_sample(hlo: HloGraph, parts: list[tuple[int, ...]], xla: tuple[int, ...], *,
                  runtimes: np.ndarray | None = None, normalizer: int = 1, name: str = "kernel") -> GraphSample:
    """One kernel as a TpuGraphs tile sample: its fused computation (a module of its own)
    featurized, one config per partitioning; with `runtimes` (c, s) measured, without them
    unlabelled, for a model to rank (the tile tuner)."""
    from hlotune.hlo.featurize import featurize  # its tables load on first use

    configs = tile_configs(hlo, config_features(parts, xla), runtimes, normalizer)
    return GraphSample(featurize(hlo, progress=False), configs, name, f"kernel {name}")


def tile_configs(hlo: HloGraph, config_feat: np.ndarray, runtimes: np.ndarray | None,
                 normalizer: int = 1) -> TileConfigArrays:
    """A kernel's configs apart from its graph: a kernel featurized once serves every config
    list a program model asks about."""
    labelled = runtimes is not None
    return TileConfigArrays(
        config_feat=config_feat,
        config_runtime=np.median(runtimes, axis=1).round().astype(np.int64) if labelled
        else np.zeros(len(config_feat), dtype=np.int64),
        config_runtime_normalizers=np.full(len(config_feat), normalizer, dtype=np.int64),
        config_runtime_samples=runtimes,
        kernel_roofline=kernel_roofline(hlo),
    )


def kernel_roofline(hlo: HloGraph) -> np.ndarray:
    """The kernel's flops and bytes (operands read, outputs written), counted by hlo/costs.py's
    HloCostAnalysis-like rules: the analytical baseline's roofline inputs."""
    return np.array(roofline(hlo))


def codegen_options(flags: FlagConfig) -> np.ndarray:
    """The module-level options that act inside every kernel (ISA, vector width, fast math,
    LLVM's level...), as FlagConfig.features gives them less XLA's defaults (so a tile sample's
    zeros mean XLA's defaults); the rest (passes, library offload) change which kernels exist,
    which the compiled module already shows."""
    return (flags.features() - DEFAULT_FLAGS.features())[list(CODEGEN_COLUMNS)]


def compiled_features(parts: list[tuple[int, ...]], flags: FlagConfig) -> np.ndarray:
    """config_feat rows of kernels as one config compiled them: XLA's own partitions (`parts`,
    a kernel each) and that config's code-generation options."""
    return config_features(parts, None, np.repeat(codegen_options(flags)[None], len(parts), axis=0))


def config_features(parts: list[tuple[int, ...]], xla_choice: tuple[int, ...] | None,
                    options: np.ndarray | None = None) -> np.ndarray:
    """config_feat (c, 24): partitions per outer dimension [0:6] (0 past the last), their
    product [6], 1 where the row is XLA's own choice [7] (`xla_choice` None: every row is, as
    compiled), the code-generation options [8:22] (codegen_options; 0, XLA's defaults, where
    `options` is None); the rest 0."""
    feat = np.zeros((len(parts), TILE_FEATURES), dtype=np.float32)
    for row, part in enumerate(parts):
        feat[row, :min(len(part), MAX_DIMS)] = part[:MAX_DIMS]
        feat[row, MAX_DIMS] = float(np.prod(part)) if part else 1.0
        feat[row, MAX_DIMS + 1] = float(xla_choice is None or part == xla_choice)
    if options is not None:
        feat[:, OPTIONS_AT:OPTIONS_AT + len(CODEGEN_COLUMNS)] = options
    return feat
