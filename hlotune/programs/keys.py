"""Typed PRNG keys (`jax.random.key`) crossing a program's boundary as their key data.

Everywhere hlotune keeps or checks a program's arguments and results they are arrays of
numbers: the npz files the worker loads, the fingerprint's dtypes, the output check, layout
sites. A key array has no NumPy dtype, so a function of keys is tuned as a function of their
key data (`jax.random.key_data`, uint32), which rewraps them inside and unwraps the keys it
returns; its caller converts at the edge (`KeyedFunction.caller`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def is_key(leaf: Any) -> bool:
    import jax

    dtype = getattr(leaf, "dtype", None)
    return dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)


def key_impls(tree: Any) -> tuple | None:
    """Each leaf's key implementation (None for other leaves); None where no leaf is a key."""
    import jax

    impls = tuple(jax.random.key_impl(leaf) if is_key(leaf) else None
                  for leaf in jax.tree_util.tree_leaves(tree))
    return impls if any(impls) else None


def to_data(tree: Any) -> Any:
    """`tree` with each key as its key data."""
    import jax

    return jax.tree_util.tree_map(lambda leaf: jax.random.key_data(leaf) if is_key(leaf) else leaf, tree)


def from_data(tree: Any, impls: tuple | None) -> Any:
    """`tree` with the leaves `impls` names rewrapped as keys (to_data's inverse)."""
    import jax

    if impls is None:
        return tree
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return treedef.unflatten([leaf if impl is None else jax.random.wrap_key_data(leaf, impl=impl)
                              for leaf, impl in zip(leaves, impls)])


@dataclass(frozen=True)
class KeyedFunction:
    """`fn` of arguments holding keys as a function of their key data.

    Equal for equal `fn`, so jax's trace cache serves a repeated export as it serves a repeated
    `jax.jit(fn)`: the same module, hence the same exported file. Which outputs are keys is
    seen while tracing; it is kept per function for as long as jax can reuse that trace, so
    `caller` must follow a trace of this function or an equal one (an export or a compile)."""

    fn: Callable
    name: str
    impls: tuple | None  # key_impls of the arguments

    @property
    def __name__(self) -> str:  # what jax and the exported file name it by
        return self.name

    def __call__(self, *data):
        out = self.fn(*from_data(data, self.impls))
        _OUT_IMPLS[self] = key_impls(out)
        return to_data(out)

    def caller(self, executable: Callable) -> Callable:
        """`executable` (a compile of this function) as a callable of keys: itself where
        neither its arguments nor its results hold one."""
        out_impls = _OUT_IMPLS[self]
        if self.impls is None and out_impls is None:
            return executable

        def call(*args):
            return from_data(executable(*to_data(args)), out_impls)

        return call


# Weak: an entry lives as long as the function jax keys its cached trace by.
_OUT_IMPLS: weakref.WeakKeyDictionary[KeyedFunction, tuple | None] = weakref.WeakKeyDictionary()
