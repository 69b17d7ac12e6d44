"""A call of a JAX function split as jax.jit splits it: traced arguments and static ones.

jax.jit traces array arguments and bakes static ones (`static_argnums`, `static_argnames`) into
the program, one executable per static value. hlotune exports, stores, measures and compiles
programs of positional arrays, so a call is bound into positional order (inspect.signature: a
jitted function takes keywords too), its static values are closed over, and its other
keyword arguments follow the positional ones. Each distinct static value is thus its own
program, as it is under jax.jit; its typed PRNG keys cross as key data (keys.py).

As with jax.jit, `static_argnames` names positional parameters too and `static_argnums` the
names of the parameters at those positions, so a parameter is static however it is passed.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from hlotune.errors import HlotuneError
from hlotune.programs.keys import KeyedFunction, key_impls, to_data

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


@dataclass(frozen=True)
class BoundCall:
    """One call: the static values baked in, the traced arguments, in positional order."""

    jit: JitFunction
    static: tuple[tuple[int | str, Any], ...]  # (position or keyword, value): hashable
    traced: tuple  # pytrees: the positional arguments, then those passed by keyword `names`
    names: tuple[str, ...]

    @property
    def function(self) -> Callable:
        """`fn` as a function of the traced arguments (closing over the static ones only)."""
        static = self.static
        return WithStatics(self.jit.fn, tuple((k, v) for k, v in static if isinstance(k, int)),
                           tuple((k, v) for k, v in static if isinstance(k, str)), self.names)

    def keyed(self) -> KeyedFunction:
        """The program's function: of the traced arguments, keys given as key data."""
        return KeyedFunction(self.function, self.jit.name, key_impls(self.traced))

    @property
    def data(self) -> tuple:
        """The traced arguments with keys as key data: the program's example arguments."""
        return to_data(self.traced)

    def donated(self, argnums: Iterable[int], argnames: Iterable[str]) -> tuple[int, ...]:
        """The positions among `traced` of the arguments jax.jit's `donate_argnums` and
        `donate_argnames` name (an argument is donated however it was passed)."""
        params = [] if self.jit.signature is None else list(self.jit.signature.parameters)
        argnums, argnames = set(argnums), set(argnames)
        static = {key for key, _ in self.static if isinstance(key, int)}
        positional = [i for i in range(len(self.traced) - len(self.names) + len(static)) if i not in static]
        named = [(i, params[i] if i < len(params) else None) for i in positional]
        named += [(params.index(n) if n in params else None, n) for n in self.names]
        return tuple(t for t, (i, name) in enumerate(named) if i in argnums or name in argnames)

    def caller(self, call: Callable) -> Callable:
        """`call` (a function of the traced arguments) as a function of the user's call, for
        this call's static values only, as a jax.jit executable is compiled for its own."""
        jit, static = self.jit, self.static  # not the example arguments: callers outlive them
        plain = not static and not jit.positions  # a positional call binds as it is given

        def user_call(*args, **kwargs):
            if plain and not kwargs:
                return call(*args)
            bound = jit.bind(args, kwargs)
            if bound.static != static:
                raise HlotuneError(f"{jit.name}: compiled for static arguments {jit.show(static)}, "
                                   f"called with {jit.show(bound.static)}")
            return call(*bound.traced)

        return user_call


@dataclass(frozen=True)
class WithStatics:
    """`fn` of its traced arguments, the static ones put back: equal for equal values, so jax
    reuses its trace of an equal call as it does under jax.jit."""

    fn: Callable
    positions: tuple[tuple[int, Any], ...]  # ascending
    keywords: tuple[tuple[str, Any], ...]
    names: tuple[str, ...]  # keywords of the last traced arguments

    def __call__(self, *traced):
        split = len(traced) - len(self.names)
        positional = list(traced[:split])
        for position, value in self.positions:  # ascending: each lands where it was
            positional.insert(position, value)
        return self.fn(*positional, **dict(self.keywords), **dict(zip(self.names, traced[split:])))


@dataclass(frozen=True)
class JitFunction:
    """`fn` with jax.jit's static arguments, checked against its signature."""

    fn: Callable
    name: str
    positions: frozenset[int]  # static positions; a negative one counts from the call's end
    keywords: frozenset[str]  # static parameters passed by keyword
    signature: inspect.Signature | None  # None where inspect cannot read one

    def bind(self, args: tuple, kwargs: dict) -> BoundCall:
        """The call `fn(*args, **kwargs)`, bound as jax.jit binds it."""
        if not kwargs and not self.positions:
            return BoundCall(self, (), args, ())
        if self.signature is not None:
            try:
                bound = self.signature.bind(*args, **kwargs)
            except TypeError as error:
                raise HlotuneError(f"{self.name}: {error}") from None
            args, kwargs = bound.args, bound.kwargs
        positions = {p + len(args) if p < 0 else p for p in self.positions}
        static = tuple((i, arg) for i, arg in enumerate(args) if i in positions) + tuple(
            (name, value) for name, value in kwargs.items() if name in self.keywords)
        for key, value in static:
            _check_hashable(f"{self._label(key)!r} of {self.name}", value)
        names = tuple(name for name in kwargs if name not in self.keywords)
        traced = tuple(arg for i, arg in enumerate(args) if i not in positions)
        return BoundCall(self, static, traced + tuple(kwargs[n] for n in names), names)

    def _label(self, key: int | str) -> str:
        params = [] if self.signature is None else list(self.signature.parameters.values())
        if isinstance(key, int) and key < len(params) and params[key].kind in _POSITIONAL:
            return params[key].name
        return str(key)

    def show(self, static: tuple) -> str:
        """`static` as the user named them."""
        return ", ".join(f"{self._label(key)}={value!r}" for key, value in static) or "none"


def jit_function(fn: Callable, static_argnums: int | Iterable[int] | None = None,
                 static_argnames: str | Iterable[str] | None = None) -> JitFunction:
    """`fn` with jax.jit's `static_argnums` and `static_argnames`: each completed from the
    other through fn's signature, which must have the parameters they name."""
    positions = _as_tuple(static_argnums, int, "static_argnums")
    keywords = _as_tuple(static_argnames, str, "static_argnames")
    name = getattr(fn, "__name__", type(fn).__name__)
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin or C callable: taken as given
        return JitFunction(fn, name, frozenset(positions), frozenset(keywords), None)
    params = list(signature.parameters.values())
    named = [p for p in params if p.kind in _POSITIONAL]
    _check_parameters(name, params, named, positions, keywords)
    # completed as jax.jit completes them: parameters passed either way, non-negative positions
    either = [(i, p.name) for i, p in enumerate(named) if p.kind == inspect.Parameter.POSITIONAL_OR_KEYWORD]
    inferred = {i for i, param in either if param in keywords}
    by_position = {param for i, param in either if i in positions}
    return JitFunction(fn, name, frozenset(positions) | inferred, frozenset(keywords) | by_position,
                       signature)


def _check_parameters(name: str, params: list, named: list, positions: tuple, keywords: tuple) -> None:
    kinds = {p.kind for p in params}
    if inspect.Parameter.VAR_POSITIONAL not in kinds:
        for i in positions:
            if not -len(named) <= i < len(named):
                raise HlotuneError(f"static_argnums: {name} takes {len(named)} positional "
                                   f"arguments, so {i} is out of range")
    if inspect.Parameter.VAR_KEYWORD not in kinds:
        by_keyword = {p.name for p in params if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                          inspect.Parameter.KEYWORD_ONLY)}
        for keyword in keywords:
            if keyword not in by_keyword:
                raise HlotuneError(f"static_argnames: {name} has no parameter {keyword!r} "
                                   "passed by keyword")


def _as_tuple(value: Any, kind: type, option: str) -> tuple:
    values = () if value is None else (value,) if isinstance(value, kind) else tuple(value)
    if not all(isinstance(v, kind) and not isinstance(v, bool) for v in values):
        raise HlotuneError(f"{option} must be {'ints' if kind is int else 'strings'}, got {value!r}")
    return values


def _check_hashable(label: str, value: Any) -> None:
    try:
        hash(value)
    except TypeError:
        raise HlotuneError(f"static argument {label} must be hashable (as jax.jit requires), "
                           f"got {type(value).__name__}") from None

