"""Module-level XLA:CPU options as a search space: the curated flags, configs and features.

Each option is a scalar field of XLA's DebugOptions, set per compilation through
`Lowered.compile(compiler_options=...)`; no environment variable, so configs of one program can
be compiled side by side in one process. The set was chosen from what changes performance on
XLA:CPU (docs/compiler.md). XLA adds, renames and removes options between releases: this table
declares them all, with the jaxlib releases known to have them (`since`/`until`), and
xla_support.py checks the rest against the installed XLA, leaving out what it rejects. A test
compiles every value with the jaxlib CI pins (constraints.txt).

`xla_cpu_use_thunk_runtime=false`, the by-hand fix for the thunk runtime's slowdowns, is not
here: DebugOptions lost it in jaxlib 0.7, before the oldest release hlotune supports (0.8).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from hlotune.data.schema import DISABLE_PASSES, flag_column
from hlotune.errors import HlotuneError

FAST_MATH = "xla_cpu_enable_fast_math"


@dataclass(frozen=True)
class FlagOption:
    """One DebugOptions field: its values (the first is XLA's default) and why it matters.

    `changes_numerics`: a value other than XLA's default changes results by design (docs/
    compiler.md says why for each), so tuning searches it only when the user allows it.
    `since`/`until`: the first jaxlib release with the option and the first without it ("" for
    none known). `columns`: the values with a config_feat column, those of the shipped data and
    models (all by default); to those models a value without one reads as the default.
    """

    name: str
    values: tuple
    doc: str
    changes_numerics: bool = False
    since: str = ""
    until: str = ""
    columns: tuple | None = None

    @property
    def default(self):
        return self.values[0]

    def in_release(self, jaxlib: str) -> bool:
        """Whether jaxlib `jaxlib` is declared to have this option."""
        version = _release(jaxlib)
        return (not self.since or version >= _release(self.since)) and (
            not self.until or version < _release(self.until))

    @property
    def featured(self) -> tuple:
        """The non-default values that have a config_feat column."""
        return self.values[1:] if self.columns is None else self.columns


def _release(version: str) -> tuple[int, ...]:
    """'0.10.2' -> (0, 10, 2); a local or dev suffix ('0.10.2.dev20260601') is ignored."""
    return tuple(int(part) for part in version.split(".")[:3] if part.isdigit())


# Pass names that `xla_disable_hlo_passes` accepts here. XLA ignores unknown names silently, so
# hlotune checks them. The sampler draws from SAMPLED_PASSES only: disabling the others makes
# XLA:CPU abort on common programs (seen on 0.10.2), which measurement survives but wastes time.
SAMPLED_PASSES = (
    "fusion",
    "dot-library-rewriter",
    "algsimp",
    "cse",
    "transpose-folding",
    "reshape-mover",
    "tree_reduction_rewriter",
    "fusion-merger",
    "multi_output_fusion",
)
KNOWN_PASSES = SAMPLED_PASSES + ("gather_simplifier", "dot_decomposer", "layout-assignment")
# XLA:CPU runs neither (jaxlib 0.8 to 0.10.2): disabling them changes nothing. They stay, and
# xla_support.py does not check them, so that the shipped portfolio, models and results do.
INERT_PASSES = ("fusion-merger", "multi_output_fusion")

# Library fusion types for YNNPACK, as compiler options take them: exact enum names (XLA_FLAGS
# also takes edits such as `-reduce`; compiler options do not, up to 0.10.2 at least). One type
# alone, as the shipped models know them; then XLA's default list (jaxlib 0.9 to 0.10.2:
# INDIVIDUAL_DOT, INDIVIDUAL_CONVOLUTION, REDUCE) less one type each, the first being the
# by-hand fix `-reduce` for the 2x slowdown of jax's issue tracker.
_YNN = "LIBRARY_FUSION_TYPE_"
YNN_FUSION_TYPES = (f"{_YNN}DOT", f"{_YNN}ELTWISE", f"{_YNN}REDUCE")
YNN_DEFAULT_LESS_ONE = (
    f"{_YNN}INDIVIDUAL_DOT,{_YNN}INDIVIDUAL_CONVOLUTION",
    f"{_YNN}INDIVIDUAL_DOT,{_YNN}REDUCE",
    f"{_YNN}INDIVIDUAL_CONVOLUTION,{_YNN}REDUCE",
)

FLAG_OPTIONS: tuple[FlagOption, ...] = (
    FlagOption("xla_backend_optimization_level", (3, 0, 1, 2), "LLVM optimisation level"),
    FlagOption("xla_cpu_use_fusion_emitters", (True, False), "MLIR fusion emitters vs legacy"),
    FlagOption("xla_cpu_use_xnnpack", (True, False), "offload to XNNPACK"),
    FlagOption("xla_cpu_experimental_ynn_fusion_type", ("", *YNN_FUSION_TYPES, *YNN_DEFAULT_LESS_ONE),
               "which ops YNNPACK library fusions take ('' = XLA's default list)",
               columns=YNN_FUSION_TYPES),
    FlagOption(FAST_MATH, (False, True), "unsafe fast math (outputs are checked)", True),
    FlagOption("xla_cpu_fast_math_honor_division", (True, False), "fast math: keep true division", True),
    FlagOption("xla_cpu_fast_math_honor_functions", (True, False), "fast math: exact functions", True),
    FlagOption("xla_cpu_prefer_vector_width", (256, 128, 512), "preferred SIMD width in bits"),
    FlagOption("xla_cpu_max_isa", ("", "SSE4_2", "AVX", "AVX2", "AVX512"), "newest ISA to emit"),
    FlagOption("xla_cpu_opt_preset", ("CPU_OPT_PRESET_DEFAULT", "CPU_OPT_PRESET_FAST_RUNTIME",
                                      "CPU_OPT_PRESET_FAST_COMPILE"), "optimisation preset", since="0.10"),
    FlagOption("xla_cpu_multi_thread_eigen", (True, False), "multi-threaded Eigen calls"),
    FlagOption("xla_cpu_enable_fast_min_max", (True, False), "min/max that may drop NaNs", True),
)
OPTIONS_BY_NAME: dict[str, FlagOption] = {option.name: option for option in FLAG_OPTIONS}
NUMERICS_CHANGING = frozenset(option.name for option in FLAG_OPTIONS if option.changes_numerics)
# Options that only mean something under fast math (XLA ignores them otherwise).
FAST_MATH_ONLY = ("xla_cpu_fast_math_honor_division", "xla_cpu_fast_math_honor_functions")


def _feature_names() -> tuple[str, ...]:
    names: list[str] = []
    for option in FLAG_OPTIONS:
        if all(isinstance(v, (bool, int)) for v in option.values):
            names.append(flag_column(option.name))
        else:  # strings: one-hot over the non-default values with a column
            names += [flag_column(option.name, v) for v in option.featured]
    return (*names, *(flag_column(DISABLE_PASSES, p) for p in KNOWN_PASSES))


FLAG_FEATURE_NAMES: tuple[str, ...] = _feature_names()
# Per config_feat column: whether it belongs to a numerics-changing option (the files say so).
FLAG_FEATURE_NUMERICS: tuple[bool, ...] = tuple(
    name.partition("=")[0] in NUMERICS_CHANGING for name in FLAG_FEATURE_NAMES
)


@dataclass(frozen=True)
class FlagConfig:
    """A set of option values that differ from XLA's defaults (empty = the default config).

    Immutable and hashable; `key` is its canonical JSON, stable across runs and machines.
    """

    options: tuple[tuple[str, Any], ...] = ()
    disabled_passes: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> FlagConfig:
        """Build and check a config; unknown or contradictory options are a HlotuneError."""
        values = dict(values)
        passes = values.pop(DISABLE_PASSES, ())
        if isinstance(passes, str):
            passes = [p for p in passes.split(",") if p]
        options = []
        for name, value in values.items():
            option = OPTIONS_BY_NAME.get(name)
            if option is None:
                raise HlotuneError(f"unknown XLA option {name!r}; known: {', '.join(OPTIONS_BY_NAME)}")
            if value not in option.values or type(value) is not type(option.default):
                raise HlotuneError(f"{name}={value!r} is not one of {list(option.values)}")
            if value != option.default:
                options.append((name, value))
        config = cls(tuple(sorted(options)), tuple(sorted(set(passes))))
        config.check()
        return config

    def check(self) -> None:
        unknown = sorted(set(self.disabled_passes) - set(KNOWN_PASSES))
        if unknown:
            raise HlotuneError(f"unknown HLO pass {unknown[0]!r}; known: {', '.join(KNOWN_PASSES)}")
        values = dict(self.options)
        if not values.get(FAST_MATH) and any(name in values for name in FAST_MATH_ONLY):
            raise HlotuneError(f"{'/'.join(FAST_MATH_ONLY)} need {FAST_MATH}=True")

    def to_dict(self) -> dict[str, Any]:
        values = dict(self.options)
        if self.disabled_passes:
            values[DISABLE_PASSES] = list(self.disabled_passes)
        return values

    @property
    def key(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @property
    def is_default(self) -> bool:
        return not self.options and not self.disabled_passes

    @property
    def changes_numerics(self) -> bool:
        """Whether it sets an option that changes results by design (fast math, ...)."""
        return any(name in NUMERICS_CHANGING for name, _ in self.options)

    def compiler_options(self) -> dict[str, Any]:
        """What `Lowered.compile(compiler_options=...)` takes."""
        values = dict(self.options)
        if self.disabled_passes:
            values[DISABLE_PASSES] = ",".join(self.disabled_passes)
        return values

    def xla_flags(self) -> str:
        """The same config as an `XLA_FLAGS` string, for users who set it in the environment."""
        def text(value):
            return str(value).lower() if isinstance(value, bool) else str(value)
        return " ".join(f"--{name}={text(value)}" for name, value in self.compiler_options().items())

    def features(self) -> np.ndarray:
        """One config_feat row, aligned with FLAG_FEATURE_NAMES."""
        values = dict(self.options)
        row: list[float] = []
        for option in FLAG_OPTIONS:
            value = values.get(option.name, option.default)
            if all(isinstance(v, (bool, int)) for v in option.values):
                row.append(float(value))
            else:
                row += [float(value == v) for v in option.featured]
        row += [float(p in self.disabled_passes) for p in KNOWN_PASSES]
        return np.array(row, np.float32)


DEFAULT_FLAGS = FlagConfig()
