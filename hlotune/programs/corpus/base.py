"""What a corpus model is: a real program built by a maintained library (transformers, haiku,
equinox, flax, jax-md, MuJoCo MJX) from a configuration with random weights, at several sizes.
Nothing is downloaded: every library builds its model from code and a config object.

A model becomes a program as the zoo's workloads do (hlotune.programs.zoo.base): inference, or one
SGD-with-momentum training step on its loss. `-bf16` casts the parameters and float inputs to
bfloat16 and asks the library to compute in it, as mixed-precision users do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from importlib import metadata
from typing import Any

import jax
import jax.numpy as jnp

from hlotune.programs.zoo.base import QUICK_COMPILE, Params, example_arguments, step_arguments, train_step
from hlotune.programs.zoo.layers import softmax_cross_entropy


@dataclass(frozen=True)
class Built:
    """A model built at one size: `init(key) -> (params, x, y)`, run as one program, and
    `apply(params, x)`; `loss(apply(params, x), y)` is the training objective."""

    init: Callable[[jax.Array], tuple[Params, Any, Any]]
    apply: Callable[[Params, Any], Any]
    loss: Callable[[Any, Any], jax.Array] = softmax_cross_entropy


@dataclass(frozen=True)
class CorpusModel:
    """`sizes` maps a size name to `build`'s keywords, each with `batch`; `build(dtype,
    **size)` imports its library on first use, so naming a program imports none."""

    name: str
    description: str
    library: str  # the distribution that defines the model, whose version `zoo list` shows
    sizes: Mapping[str, Mapping[str, int]]
    build: Callable[..., Built]
    trainable: bool = True
    bf16: bool = True

    @property
    def version(self) -> str | None:
        """The installed version of `library`, None where the corpus extra is absent."""
        try:
            return metadata.version(self.library)
        except metadata.PackageNotFoundError:
            return None

    def program(
        self, size: str, *, train: bool, bf16: bool = False, batch: int | None = None, seed: int = 0,
        abstract: bool = False,
    ) -> tuple[Callable, tuple]:
        """The function and its example arguments; the same seed gives the same arguments.
        `abstract`: shapes only (zoo.base.example_arguments)."""
        shape = dict(self.sizes[size]) | ({"batch": batch} if batch else {})
        built, jitted = self._built(jnp.bfloat16 if bf16 else jnp.float32, shape)

        def finish(params, x, y):
            if bf16:
                params, x = _to_bf16(params), _to_bf16(x)
            return step_arguments(params, x, y, train=train)

        fn = partial(train_step, built.apply, built.loss) if train else built.apply
        return fn, example_arguments(built.init, jitted, finish, seed, abstract)

    def _built(self, dtype, shape: dict[str, int]) -> tuple[Built, Callable]:
        """The model built at `shape` and its jitted init, once per process: built again, its
        init is a new function, which jax compiles again (two seconds for a tiny BERT)."""
        key = (self.name, dtype, tuple(sorted(shape.items())))
        if key not in _BUILT:
            built = self.build(dtype, **shape)
            _BUILT[key] = built, jax.jit(built.init, compiler_options=QUICK_COMPILE)
        return _BUILT[key]


_BUILT: dict[tuple, tuple[Built, Callable]] = {}  # CorpusModel._built's, by model, dtype and shape


def _to_bf16(tree):
    """Float leaves in bfloat16; integers (token ids, labels) stay as they are."""
    return jax.tree_util.tree_map(_leaf_to_bf16, tree)


def _leaf_to_bf16(a: jax.Array) -> jax.Array:
    return a.astype(jnp.bfloat16) if jnp.issubdtype(a.dtype, jnp.floating) else a
