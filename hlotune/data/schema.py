"""The npz schema of hlotune's four collections, written down as data.

Each collection is a table of keys: dtype kind, shape in symbols shared across keys (`n` nodes,
`m` edges, `c` configs, ...), whether the key is required, and the value rules a reader
enforces. The reader (npz.py), docs/format.md and the tests all follow these tables, so a new
key is one row here, not a new branch in the reader. The rule types carry their own small check
so that a rule and its meaning stay in one place.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from hlotune.errors import HlotuneError

SYMBOLS: Mapping[str, str] = {
    "n": "nodes",
    "m": "edges",
    "k": "node split points",
    "c": "configurations",
    "nc": "configurable nodes",
    "f": "named config features",
    "s": "runtime samples per configuration",
}

# dtype kind -> (numpy dtype kinds accepted on read, canonical dtype; None keeps the stored one)
DTYPE_KINDS: Mapping[str, tuple[str, np.dtype | None]] = {
    "float": ("f", np.dtype(np.float32)),
    "int": ("iu", np.dtype(np.int64)),
    "uint8": ("iu", np.dtype(np.uint8)),
    "unicode": ("U", None),
}

Dims = dict[str, int]  # symbol -> size, bound by the first key that uses the symbol


@dataclass(frozen=True)
class AtLeast:
    """A dimension with a minimum size: node_feat grows when extended features are on."""

    size: int

    def __str__(self) -> str:
        return f">={self.size}"


Dim = int | str | AtLeast


@dataclass(frozen=True)
class Bounds:
    """Every value lies in an interval (the high end may be a symbol such as `n`) or in `extra`."""

    low: float | None = None
    high: float | str | None = None
    low_open: bool = False
    high_open: bool = False
    extra: tuple[float, ...] = ()  # values allowed outside the interval, e.g. the -1 padding

    def describe(self) -> str:
        if self.high is None:
            interval = f"{'>' if self.low_open else '>='} {self.low}"
        elif self.low is None:
            interval = f"{'<' if self.high_open else '<='} {self.high}"
        else:
            left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
            interval = f"in {left}{self.low}, {self.high}{right}"
        return " or ".join([interval, *(f"{value:g}" for value in self.extra)])

    def violation(self, values: np.ndarray, dims: Dims) -> str | None:
        high = dims.get(self.high) if isinstance(self.high, str) else self.high
        if values.size == 0 or (self.high is not None and high is None):
            return None
        ok = np.ones(values.shape, dtype=bool)
        if self.low is not None:
            ok &= values > self.low if self.low_open else values >= self.low
        if high is not None:
            ok &= values < high if self.high_open else values <= high
        for value in self.extra:
            ok |= values == value
        if ok.all():
            return None
        at = np.unravel_index(np.argmin(ok), ok.shape)
        return (
            f"expected values {self.describe()}{bound_symbols([self.high], dims)}, "
            f"got {values[at].item()} at {list(map(int, at))}"
        )


@dataclass(frozen=True)
class Increasing:
    """Values, flattened, never decrease (or, when strict, always increase)."""

    strict: bool = True

    def violation(self, values: np.ndarray, dims: Dims) -> str | None:
        flat = values.reshape(-1)
        steps = np.diff(flat)
        bad = np.flatnonzero(steps <= 0 if self.strict else steps < 0)
        if bad.size == 0:
            return None
        i = int(bad[0]) + 1
        order = "strictly increasing" if self.strict else "non-decreasing"
        return f"expected {order} values, got {flat[i].item()} after {flat[i - 1].item()} at {i}"


@dataclass(frozen=True)
class Unique:
    """No value repeats (config feature names are column names)."""

    def violation(self, values: np.ndarray, dims: Dims) -> str | None:
        names, counts = np.unique(values, return_counts=True)
        repeated = names[counts > 1]
        if repeated.size == 0:
            return None
        return f"expected unique values, got {repeated[0].item()!r} more than once"


Rule = Bounds | Increasing | Unique


@dataclass(frozen=True)
class KeySpec:
    """One array of an npz file."""

    name: str
    kind: str  # a key of DTYPE_KINDS
    shape: tuple[Dim, ...]
    meaning: str
    required: bool = True
    rules: tuple[Rule, ...] = ()

    @property
    def canonical_dtype(self) -> np.dtype | None:
        return DTYPE_KINDS[self.kind][1]

    def dtype_error(self, dtype: np.dtype) -> str | None:
        accepted, canonical = DTYPE_KINDS[self.kind]
        if dtype.kind in accepted:
            return None
        got = "object (pickled data is never loaded)" if dtype.hasobject else str(dtype)
        read_as = f" (read as {canonical})" if canonical is not None else ""
        return f"expected a {self.kind} dtype{read_as}, got {got}"

    def shape_error(self, shape: tuple[int, ...], dims: Dims) -> str | None:
        """Check `shape`, binding this key's unbound symbols to its sizes."""
        if len(shape) == len(self.shape) and all(
            _dim_fits(want, got, dims) for want, got in zip(self.shape, shape)
        ):
            return None
        return (
            f"expected shape {format_shape(self.shape)}{bound_symbols(self.shape, dims)}, "
            f"got {tuple(shape)}"
        )

    def value_error(self, values: np.ndarray, dims: Dims) -> str | None:
        return next((v for rule in self.rules if (v := rule.violation(values, dims))), None)


def _dim_fits(want: Dim, got: int, dims: Dims) -> bool:
    if isinstance(want, str):
        return dims.setdefault(want, got) == got
    if isinstance(want, AtLeast):
        return got >= want.size
    return got == want


def format_shape(shape: tuple[Dim, ...]) -> str:
    inner = ", ".join(map(str, shape))
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


def bound_symbols(dims_used: Iterable[object], dims: Dims) -> str:
    """' with n=3163, c=20' for the symbols among `dims_used` that have a size already."""
    known = [f"{d}={dims[d]}" for d in dict.fromkeys(dims_used) if isinstance(d, str) and d in dims]
    return f" with {', '.join(known)}" if known else ""


NON_NEGATIVE = Bounds(low=0)
NODE_INDEX = Bounds(low=0, high="n", high_open=True)

GRAPH_KEYS: tuple[KeySpec, ...] = (
    KeySpec("node_feat", "float", ("n", AtLeast(140)),
            "per-node features: the 140 TpuGraphs features, then hlotune's extended ones"),
    KeySpec("node_opcode", "uint8", ("n",), "HLO opcode id per node (tpugraphs_opcodes.tsv)",
            rules=(Bounds(low=0, high=120),)),
    KeySpec("edge_index", "int", ("m", 2), "edge [u, v]: node u consumes the output of node v",
            rules=(NODE_INDEX,)),
    KeySpec("node_splits", "int", (1, "k"),
            "first node of each computation group, then the node count",
            required=False, rules=(Bounds(low=0, high="n"), Increasing(strict=False))),
)

# hlotune's own collections keep every measured sample behind each median.
RUNTIME_SAMPLES = KeySpec("config_runtime_samples", "int", ("c", "s"),
                          "every measured runtime in ns", required=False, rules=(NON_NEGATIVE,))

CONFIG_KEYS: Mapping[str, tuple[KeySpec, ...]] = {
    "tile": (
        KeySpec("config_feat", "float", ("c", 24), "tile sizes of each configuration"),
        KeySpec("config_runtime", "int", ("c",), "runtime in ns (all 0 in test splits)",
                rules=(NON_NEGATIVE,)),
        KeySpec("config_runtime_normalizers", "int", ("c",),
                "runtime in ns of the default tile configuration",
                rules=(Bounds(low=0, low_open=True),)),
        RUNTIME_SAMPLES,
        KeySpec("kernel_roofline", "float", (2,),
                "flops and bytes of an XLA:CPU kernel, whose config_feat are partitions",
                required=False, rules=(NON_NEGATIVE,)),
    ),
    "layout": (
        KeySpec("node_config_ids", "int", ("nc",), "the configurable nodes",
                rules=(NODE_INDEX, Increasing(strict=True))),
        KeySpec("node_config_feat", "float", ("c", "nc", 18),
                "minor-to-major layouts of output, input, kernel; -1 pads",
                rules=(Bounds(low=0, high=5, extra=(-1,)),)),
        KeySpec("config_runtime", "int", ("c",), "runtime in ns (all 0 in test splits)",
                rules=(NON_NEGATIVE,)),
        RUNTIME_SAMPLES,
    ),
    "fusion": (
        KeySpec("node_config_ids", "int", ("nc",), "the kernels (fusion instructions) with fusion choices",
                rules=(NODE_INDEX, Increasing(strict=True))),
        KeySpec("node_config_feat", "float", ("c", "nc", 5),
                "one-hot decision: keep, merge, split at the 1st, 2nd or 3rd offered point",
                rules=(Bounds(low=0, high=1),)),
        KeySpec("config_runtime", "int", ("c",), "median runtime in ns", rules=(NON_NEGATIVE,)),
        RUNTIME_SAMPLES,
        KeySpec("node_config_choices", "int", ("nc", 5),
                "the node each decision acts on (the kernel, or the split's instruction); -1 if not offered",
                rules=(Bounds(low=0, high="n", high_open=True, extra=(-1,)),)),
    ),
    "flags": (
        KeySpec("config_feat", "float", ("c", "f"), "one row of named option values per config"),
        KeySpec("config_feat_names", "unicode", ("f",), "the name of each config_feat column",
                rules=(Unique(),)),
        KeySpec("config_runtime", "int", ("c",), "median runtime in ns", rules=(NON_NEGATIVE,)),
        RUNTIME_SAMPLES,
        KeySpec("config_feat_numerics", "int", ("f",),
                "1 where the column's option changes results by design (fast math, ...)",
                required=False, rules=(Bounds(low=0, high=1),)),
    ),
}

# How a flags file names its config_feat columns (config_feat_names), so that models read
# configs without knowing the compiler: `OPTION` holds a boolean or numeric option's value,
# `OPTION=VALUE` is 1 where a string option takes VALUE, and `xla_disable_hlo_passes=PASS` is 1
# where PASS is disabled.
DISABLE_PASSES = "xla_disable_hlo_passes"


def flag_column(option: str, value: object | None = None) -> str:
    """The column name of `option` (numeric), or of `option` taking `value` (one-hot)."""
    return option if value is None else f"{option}={value}"


# The keys whose presence says which collection a file belongs to. A fusion file is a layout
# file plus node_config_choices: a collection whose markers include another's outranks it.
MARKERS: Mapping[str, tuple[str, ...]] = {
    "tile": ("config_runtime_normalizers",),
    "layout": ("node_config_feat",),
    "flags": ("config_feat_names",),
    "fusion": ("node_config_feat", "node_config_choices"),
}


def detect_collection(keys: Iterable[str]) -> str | None:
    """The collection whose markers are present; None for a graph without configs."""
    present = set(keys)
    found = [name for name, markers in MARKERS.items() if present.issuperset(markers)]
    found = [name for name in found if not any(set(MARKERS[name]) < set(MARKERS[other]) for other in found)]
    if len(found) > 1:
        markers = ", ".join(dict.fromkeys(key for name in found for key in MARKERS[name]))
        raise HlotuneError(f"keys of several collections ({markers}): cannot tell which it is")
    return found[0] if found else None


def keys_of(collection: str | None) -> tuple[KeySpec, ...]:
    """Every key a file of `collection` may hold (None: a graph without configs)."""
    return GRAPH_KEYS + (CONFIG_KEYS[collection] if collection else ())


# The arrays of the public TpuGraphs files, and where their official layout keeps each split:
# what `hlotune data export` writes, for tools that expect exactly those files.
TPUGRAPHS_KEYS: Mapping[str, tuple[str, ...]] = {
    "tile": ("node_feat", "node_opcode", "edge_index", "config_feat", "config_runtime",
             "config_runtime_normalizers"),
    "layout": ("node_feat", "node_opcode", "edge_index", "node_config_feat", "node_config_ids",
               "node_splits", "config_runtime"),
}
TPUGRAPHS_FOLDERS: Mapping[str, str] = {"tile": "npz/tile/xla", "layout": "npz/layout/xla/random"}
TPUGRAPHS_FEATURES = 140  # node_feat columns of the public files; hlotune's extended ones follow
