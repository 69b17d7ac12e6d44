"""The hyper-parameters and data shape of a cost model, stored as `config.json` beside its weights.

A model file must rebuild its network without code, so everything that decides the shapes of
the weights lives here and round-trips through JSON. The data fields (collection and feature
widths) may be left as None by a user choosing hyper-parameters; the trainer fills them from the
data with `with_data`, and a model can only be built once they are known.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from hlotune.data.collections import LEARNED
from hlotune.errors import HlotuneError
from hlotune.lazy import renamed_attributes

CONVS = ("sage", "gat", "gin", "gps")
JOINS = ("early", "late")
LAYOUT_JOINS = ("nodes", "late", "sites")
LAYOUT_CONFIG_DIM = 18  # minor-to-major of output, input and kernel: 6 slots each


@dataclass(frozen=True)
class ModelSettings:
    """What a GraphCostModel is: its data and its architecture.

    `join` places graph-level configs (tile, flags): "early" adds them to every node before
    message passing, "late" concatenates them with the pooled graph embedding, so the GNN runs
    once per graph. Layout configs belong to nodes: `layout_join` "nodes" adds them at the
    configurable nodes before message passing, "late" meets each with its node's final
    (config-free) embedding after it, so the GNN runs once per graph and a config costs only
    its sites (fast ranking, no propagation of layouts through the graph); "sites" is late with
    the sites of each config attending to each other first, so layouts meet other layouts.
    `prune_hops` (layout, "nodes"): propagate the config-dependent part only within that many
    hops of the configurable nodes; with prune_hops >= num_layers this is exact, below it an
    approximation.
    `config_layers` (configs joined before message passing): configs join before only the last
    that many layers; the first ones run once per graph without them. Layout configs then
    reach only nodes within config_layers hops, so those layers run on that neighbourhood
    alone (pruned exactly, unless a smaller prune_hops asks for less): ranking costs a
    fraction of the full join, while layouts still meet their neighbours and each other.
    `drop_edge`: the fraction of edges each training step removes at random (DropEdge).
    `residual` adds each graph layer's input to its output; `instance_norm` standardises each
    layer's output per feature over the nodes of the graph (learnt scale and shift), as the
    Kaggle winners did. The statistics are the whole graph's, so it cannot be pruned.
    `config_softmax`: each config's pooled embedding also sees a softmax-weighted summary of
    the batch's configs along the config axis, its sharpness a learnt temperature (the Kaggle
    winner's cross-config attention; `cross_config_attention` is multi-head attention).
    `test_group_size`/`test_permutations`: with either cross-config layer a score depends on
    the configs scored beside it; inference then scores random groups of this many configs
    (the training batch), drawn `test_permutations` times, and averages (test-time averaging).
    `analytical_prior`: a config's score is the network's plus a learnt multiple of the
    analytical baseline's cost (`baselines/analytical.py`), so the network learns what the
    hand-written rule misses instead of relearning what it knows, from few graphs.
    `conv` picks the graph layer (`convs.py`); model files from before it existed used "sage".
    `collapse_chains`: the model reads graphs with their chains of plain nodes collapsed
    (`compress.py`), in training and inference alike.
    """

    collection: str | None = None
    node_feat_dim: int | None = None
    config_dim: int | None = None
    config_feat_names: tuple[str, ...] = ()  # flags: column names, checked against the data
    hidden_dim: int = 64
    opcode_dim: int = 32
    num_layers: int = 3
    conv: str = "sage"
    join: str = "late"
    layout_join: str = "nodes"
    cross_config_attention: bool = False
    attention_heads: int = 4
    prune_hops: int | None = None
    config_layers: int | None = None
    collapse_chains: bool = False
    dropout: float = 0.0
    drop_edge: float = 0.0
    residual: bool = False
    instance_norm: bool = False
    config_softmax: bool = False
    test_group_size: int | None = None
    test_permutations: int = 1
    analytical_prior: bool = False

    def __post_init__(self) -> None:
        problem = self._problem()
        if problem:
            raise HlotuneError(f"model config: {problem}")

    def _problem(self) -> str | None:
        if self.collection is not None and self.collection not in LEARNED:
            return f"collection must be one of {', '.join(LEARNED)}, got {self.collection!r}"
        if self.conv not in CONVS:
            return f"conv must be one of {', '.join(CONVS)}, got {self.conv!r}"
        layout_config_layers = self.config_layers is not None and self.collection == "layout"
        if self.conv != "sage" and (self.prune_hops is not None or layout_config_layers):
            return (
                "pruning (prune_hops, or config_layers on layouts) needs conv 'sage', whose "
                "summed messages can be precomputed"
            )
        if self.join not in JOINS:
            return f"join must be 'early' or 'late', got {self.join!r}"
        if self.instance_norm and self.pruning_hops is not None and self.collection == "layout":
            return "instance_norm normalises over the whole graph, so it cannot be pruned " \
                "(prune_hops, config_layers)"
        if self.layout_join not in LAYOUT_JOINS:
            return f"layout_join must be one of {', '.join(LAYOUT_JOINS)}, got {self.layout_join!r}"
        if self.layout_join != "nodes" and self.prune_hops is not None:
            return "prune_hops applies to layout_join 'nodes' (late join propagates no configs)"
        if self.config_layers is not None and not 1 <= self.config_layers <= self.num_layers:
            return f"config_layers must be in 1..num_layers, got {self.config_layers}"
        if self.config_layers is not None and self.collection is not None and self.joins_late:
            return "config_layers applies to configs joined before message passing, not late"
        if self.collection == "layout" and self.config_dim not in (None, LAYOUT_CONFIG_DIM):
            return f"layout configs have {LAYOUT_CONFIG_DIM} columns, not {self.config_dim}"
        positive = ("hidden_dim", "opcode_dim", "num_layers", "attention_heads", "test_permutations",
                    "test_group_size")
        for name in positive + ("node_feat_dim", "config_dim"):
            value = getattr(self, name)
            if value is not None and value < (1 if name in positive else 0):
                return f"{name} must be positive, got {value}"
        heads_used = (
            self.cross_config_attention or self.layout_join == "sites" or self.conv in ("gat", "gps")
        )
        if heads_used and self.hidden_dim % self.attention_heads:
            return f"hidden_dim {self.hidden_dim} is not divisible by {self.attention_heads} heads"
        if self.prune_hops is not None and self.prune_hops < 0:
            return f"prune_hops must be >= 0 or None, got {self.prune_hops}"
        for name in ("dropout", "drop_edge"):
            if not 0.0 <= getattr(self, name) < 1.0:
                return f"{name} must be in [0, 1), got {getattr(self, name)}"
        if self.config_feat_names and len(self.config_feat_names) != self.config_dim:
            names = len(self.config_feat_names)
            return f"{names} config_feat_names for config_dim {self.config_dim}"
        return None

    @property
    def joins_late(self) -> bool:
        """Whether this collection's configs join after message passing (`join`/`layout_join`)."""
        return (self.layout_join if self.collection == "layout" else self.join) in ("late", "sites")

    @property
    def pruning_hops(self) -> int | None:
        """Hops that config-dependent layers run within: prune_hops, else config_layers."""
        return self.prune_hops if self.prune_hops is not None else self.config_layers

    @property
    def complete(self) -> bool:
        """Whether the data fields are known, so a model can be built."""
        return None not in (self.collection, self.node_feat_dim, self.config_dim)

    def with_data(
        self,
        collection: str,
        node_feat_dim: int,
        config_dim: int,
        config_feat_names: tuple[str, ...] = (),
    ) -> ModelSettings:
        """This config with the data fields filled; a field already set must agree with the data."""
        data = {
            "collection": collection,
            "node_feat_dim": node_feat_dim,
            "config_dim": config_dim,
            "config_feat_names": tuple(config_feat_names),
        }
        for name, value in data.items():
            mine = getattr(self, name)
            if mine not in (None, ()) and mine != value:
                raise HlotuneError(f"model config: {name} is {mine!r} but the data has {value!r}")
        return replace(self, **data)

    def without_data(self) -> ModelSettings:
        """The architecture alone, its data fields cleared for other data to fill."""
        return replace(self, collection=None, node_feat_dim=None, config_dim=None,
                       config_feat_names=())

    def to_dict(self) -> dict[str, Any]:
        values = asdict(self)
        values["config_feat_names"] = list(self.config_feat_names)
        return values

    @classmethod
    def from_dict(cls, values: Any) -> ModelSettings:
        """Rebuild from `to_dict`'s output, with a one-line HlotuneError for anything else."""
        if not isinstance(values, dict):
            raise HlotuneError("model config: expected a JSON object")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise HlotuneError(f"model config: unknown keys {', '.join(unknown)}")
        for name, value in values.items():
            if not _type_ok(name, value):
                raise HlotuneError(f"model config: {name} has the wrong type ({value!r})")
        values = dict(values)
        if "config_feat_names" in values:
            values["config_feat_names"] = tuple(values["config_feat_names"])
        return cls(**values)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (_is_int(value) or isinstance(value, float)) and math.isfinite(value)


_TYPE_CHECKS = {
    "collection": lambda v: v is None or isinstance(v, str),
    "node_feat_dim": lambda v: v is None or _is_int(v),
    "config_dim": lambda v: v is None or _is_int(v),
    "config_feat_names": lambda v: isinstance(v, list) and all(isinstance(n, str) for n in v),
    "conv": lambda v: isinstance(v, str),
    "join": lambda v: isinstance(v, str),
    "layout_join": lambda v: isinstance(v, str),
    "cross_config_attention": lambda v: isinstance(v, bool),
    "collapse_chains": lambda v: isinstance(v, bool),
    "residual": lambda v: isinstance(v, bool),
    "instance_norm": lambda v: isinstance(v, bool),
    "config_softmax": lambda v: isinstance(v, bool),
    "analytical_prior": lambda v: isinstance(v, bool),
    "test_group_size": lambda v: v is None or _is_int(v),
    "prune_hops": lambda v: v is None or _is_int(v),
    "config_layers": lambda v: v is None or _is_int(v),
    "dropout": _is_number,
    "drop_edge": _is_number,
}


def _type_ok(name: str, value: Any) -> bool:
    return _TYPE_CHECKS.get(name, _is_int)(value)


__getattr__ = renamed_attributes(__name__, {"ModelConfig": "ModelSettings"})  # for one release
