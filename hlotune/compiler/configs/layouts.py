"""Per-tensor layouts of a JAX program as a search space (the TpuGraphs layout collection).

A user's function is used as it is: hlotune traces it to a jaxpr and re-interprets the jaxpr,
adding `with_layout_constraint` after each configured equation and an entry `Format` for each
configured parameter. Nested `jit` calls are inlined so their equations are configurable too;
other higher-order primitives (scan, custom_vjp, ...) stay opaque.

Configurable sites (docs/compiler.md): entry parameters and the results of dot_general,
conv_general_dilated, transpose and reshape, of rank 2 to 6. Each takes a minor-to-major
permutation or "compiler default". Every configured equation runs inside a named scope
`hlotune_site_<k>`, so the HLO instruction of each site is found by its metadata.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from hlotune.errors import HlotuneError
from hlotune.hlo.graph import HloGraph
from hlotune.programs import Program

SITE_OPCODES = {
    "dot_general": "dot",
    "conv_general_dilated": "convolution",
    "transpose": "transpose",
    "reshape": "reshape",
}
MIN_RANK, MAX_RANK = 2, 6
_FEATURE_SLOTS = 6  # node_config_feat: (output, input, kernel) x 6
_SCOPE = "hlotune_site_"


@dataclass(frozen=True)
class LayoutSite:
    """A tensor whose layout is configurable: `p<i>` entry parameter i, `e<k>` equation site k."""

    key: str
    opcode: str  # HLO opcode of its instruction
    rank: int
    node: int  # node index in the program's featurized graph


@dataclass(frozen=True)
class LayoutConfig:
    """Minor-to-major layouts of some sites; every other site keeps the compiler's default."""

    layouts: tuple[tuple[str, tuple[int, ...]], ...] = ()

    @classmethod
    def from_dict(cls, layouts: Mapping[str, list[int] | tuple[int, ...]]) -> LayoutConfig:
        return cls(tuple(sorted((site, tuple(int(d) for d in dims)) for site, dims in layouts.items())))

    def to_dict(self) -> dict[str, list[int]]:
        return {site: list(dims) for site, dims in self.layouts}

    @property
    def key(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @property
    def is_default(self) -> bool:
        return not self.layouts


DEFAULT_LAYOUT = LayoutConfig()


class LayoutSpace:
    """The layout sites of one program, and how to build the program under a layout config."""

    def __init__(self, program: Program) -> None:
        import jax

        self.program = program
        self.leaves, self._treedef = jax.tree_util.tree_flatten(program.args)
        self._jaxpr, shapes = jax.make_jaxpr(self._call_user, return_shape=True)(*self.leaves)
        self._out_tree = jax.tree_util.tree_structure(shapes)

    def _call_user(self, *leaves):
        return self.program.fn(*self._treedef.unflatten(leaves))

    @cached_property
    def graph(self) -> HloGraph:
        """The program's graph as featurized: the default build, lowered before optimisation."""
        from hlotune.hlo.sources import from_jax

        return from_jax(self.build(DEFAULT_LAYOUT), *self.leaves, name=self.program.name)

    @cached_property
    def sites(self) -> list[LayoutSite]:
        """Configurable sites in node order (TpuGraphs' node_config_ids are increasing)."""
        sites = self._parameter_sites() + self._equation_sites()
        return sorted(sites, key=lambda site: site.node)

    def _parameter_sites(self) -> list[LayoutSite]:
        """`p<i>`: argument leaf i. jit drops unused leaves from the HLO, so parameter numbers
        skip them; each parameter's metadata names its leaf (`leaves[i]`), which is what an
        entry layout is given to (`entry_formats`)."""
        entry = next(c for c in self.graph.computations if c.id == self.graph.entry_computation_id)
        start = self.graph.instructions.index(entry.instructions[0])
        sites = []
        for offset, inst in enumerate(entry.instructions):
            rank = len(inst.shape.dims)
            if inst.opcode == "parameter" and MIN_RANK <= rank <= MAX_RANK:
                leaf = re.fullmatch(r"leaves\[(\d+)\]", inst.op_name)
                index = int(leaf.group(1)) if leaf else inst.parameter_number
                sites.append(LayoutSite(f"p{index}", "parameter", rank, start + offset))
        return sites

    def _equation_sites(self) -> list[LayoutSite]:
        nodes: dict[str, int] = {}
        for index, inst in enumerate(self.graph.instructions):
            scope = _site_scope(inst.op_name)
            if scope is not None and inst.opcode == self._site_opcodes.get(scope):
                nodes[scope] = index  # the last matching instruction carries the result
        return [
            LayoutSite(key, self._site_opcodes[key], self._site_ranks[key], node)
            for key, node in nodes.items()
        ]

    @cached_property
    def _site_opcodes(self) -> dict[str, str]:
        return {key: opcode for key, opcode, _ in self._equations}

    @cached_property
    def _site_ranks(self) -> dict[str, int]:
        return {key: rank for key, _, rank in self._equations}

    @cached_property
    def _equations(self) -> list[tuple[str, str, int]]:
        """(key, HLO opcode, rank) of each equation site, found by an abstract evaluation."""
        import jax

        found: list[tuple[str, str, int]] = []

        def record(key, eqn, rank):
            found.append((key, SITE_OPCODES[eqn.primitive.name], rank))

        jax.eval_shape(lambda *leaves: _interpret(self._jaxpr, leaves, record), *self.leaves)
        return found

    def check(self, config: LayoutConfig) -> None:
        if not config.layouts:
            return  # the default: nothing to check, so the sites are not looked for
        ranks = {site.key: site.rank for site in self.sites}
        for key, dims in config.layouts:
            if key not in ranks:
                raise HlotuneError(f"{self.program.name}: no layout site {key!r}")
            if sorted(dims) != list(range(ranks[key])):
                raise HlotuneError(f"{self.program.name}: {key}: {list(dims)} is not a permutation of 0..{ranks[key] - 1}")

    def build(self, config: LayoutConfig) -> Callable:
        """The program with `config` applied, as a jitted function of the flat argument leaves."""
        import jax

        return jax.jit(self._configured(config), in_shardings=tuple(self.entry_formats(config)))

    def build_like_program(self, config: LayoutConfig, donate_argnums: tuple[int, ...] = ()) -> Callable:
        """`build(config)` as a jitted function of the program's own arguments, returning its
        own outputs: the same module (parameter names aside), whose compiled executable a user
        calls as the original, jax dispatching the pytrees in C++ with no Python per call; the
        arguments at `donate_argnums` are donated, as jax.jit donates them."""
        import jax

        flat = self._configured(config)

        def configured(*args):  # named as build's, so the module is too
            return self._out_tree.unflatten(flat(*jax.tree_util.tree_leaves(args)))

        formats = self._treedef.unflatten(self.entry_formats(config))
        return jax.jit(configured, in_shardings=formats, donate_argnums=donate_argnums)

    def _configured(self, config: LayoutConfig) -> Callable:
        from jax.experimental.layout import Layout, with_layout_constraint

        layouts = dict(config.layouts)

        def constrain(key: str, value):
            dims = layouts.get(key)
            return value if dims is None else with_layout_constraint(value, Layout(dims[::-1]))

        def configured(*leaves):
            return _interpret(self._jaxpr, leaves, None, constrain)

        return configured

    def placed_args(self, config: LayoutConfig) -> list:
        """The argument leaves, placed in the config's entry layouts (so calls time no relayout)."""
        import jax

        formats = self.entry_formats(config)
        return [leaf if f is None else jax.device_put(leaf, f) for leaf, f in zip(self.leaves, formats)]

    def entry_formats(self, config: LayoutConfig) -> list:
        """Per flat argument, its entry Format under `config` (None: the compiler's choice)."""
        import jax
        from jax.experimental.layout import Format, Layout

        sharding = jax.sharding.SingleDeviceSharding(jax.devices("cpu")[0])
        layouts = dict(config.layouts)
        return [
            Format(Layout(layouts[f"p{i}"][::-1]), sharding) if f"p{i}" in layouts else None
            for i in range(len(self.leaves))
        ]

    def node_config_feat(self, configs: list[LayoutConfig]) -> np.ndarray:
        """(c, nc, 18): the output layout of each site, -1 where the compiler decides.

        hlotune configures result layouts only, so the input and kernel slots stay -1.
        """
        feat = np.full((len(configs), len(self.sites), 3 * _FEATURE_SLOTS), -1, np.float32)
        column = {site.key: i for i, site in enumerate(self.sites)}
        for c, config in enumerate(configs):
            for key, dims in config.layouts:
                feat[c, column[key], : len(dims)] = dims
        return feat

    @property
    def node_config_ids(self) -> np.ndarray:
        return np.array([site.node for site in self.sites], np.int64)


def _site_scope(op_name: str) -> str | None:
    """`jit(f)/hlotune_site_e12/dot_general` -> `e12`."""
    start = op_name.find(_SCOPE)
    if start < 0:
        return None
    return op_name[start + len(_SCOPE) :].split("/", 1)[0]


def _interpret(closed_jaxpr, args, on_site=None, constrain=None):
    """Evaluate a closed jaxpr, inlining nested jits; each site runs in its named scope.

    `on_site(key, eqn, rank)` sees every site in order; `constrain(key, value)` may replace a
    site's result.
    """
    return _eval(closed_jaxpr.jaxpr, closed_jaxpr.consts, list(args), itertools.count(), on_site, constrain)


def _eval(jaxpr, consts, args, counter, on_site, constrain):
    from jax.extend.core import Literal

    env = {}
    read = lambda var: var.val if isinstance(var, Literal) else env[var]
    env.update(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))
    for eqn in jaxpr.eqns:
        inputs = [read(v) for v in eqn.invars]
        if eqn.primitive.name in ("jit", "pjit"):
            inner = eqn.params["jaxpr"]
            outputs = _eval(inner.jaxpr, inner.consts, inputs, counter, on_site, constrain)
        else:
            outputs = _bind_site(eqn, inputs, counter, on_site, constrain)
        env.update(zip(eqn.outvars, outputs))
    return [read(v) for v in jaxpr.outvars]


def _bind_site(eqn, inputs, counter, on_site, constrain):
    """Bind one equation as `jax.core.eval_jaxpr` does; a site gets its scope and constraint.

    The equation keeps its own traceback (jax's private `user_context`, in every supported jax),
    so the module's metadata points at the user's source lines, not at this interpreter
    (`hlotune profile` shows them)."""
    import jax
    from jax._src.source_info_util import user_context

    params = eqn.primitive.get_bind_params(eqn.params)
    if isinstance(params, tuple):  # jax 0.8: (subfunctions, params), as eval_jaxpr binds them
        subfuns, params = params
        inputs = [*subfuns, *inputs]
    rank = len(eqn.outvars[0].aval.shape) if len(eqn.outvars) == 1 else 0
    if eqn.primitive.name not in SITE_OPCODES or not MIN_RANK <= rank <= MAX_RANK:
        with eqn.ctx.manager, user_context(eqn.source_info.traceback):
            outputs = eqn.primitive.bind(*inputs, **params)
        return outputs if eqn.primitive.multiple_results else [outputs]
    key = f"e{next(counter)}"
    if on_site is not None:
        on_site(key, eqn, rank)
    with jax.named_scope(_SCOPE + key), eqn.ctx.manager, user_context(eqn.source_info.traceback):
        output = eqn.primitive.bind(*inputs, **params)
    return [output if constrain is None else constrain(key, output)]
