"""What a zoo workload is, and how one becomes a program: inference or a full training step.

A workload supplies parameters, a batch and a forward pass in plain JAX. The training step adds
the loss, its gradient and an SGD-with-momentum update, so the graph holds the backward pass
and optimizer as real training graphs do. Not Adam: its first step is `g / (|g| + eps)`, whose
sign flips for gradients near zero under any reordering of float sums, so two correct
compilations would disagree in their outputs and hlotune's output check could not tell a
correct config from a wrong one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

Params = Any  # a pytree of arrays
# Compiler options for a program compiled to compute values, not to be measured (example
# arguments, tests): LLVM at level 0 and XLA's legacy fusion emitters, which every supported
# jaxlib (0.8-0.10) has. The MLIR emitters build a pass pipeline per fusion: with them, the four
# `tiny` inits of unet, vit, mobilenet and gpt take 10.8 s of CPU, with the legacy ones 5.4 s.
QUICK_COMPILE = {"xla_backend_optimization_level": 0, "xla_cpu_use_fusion_emitters": False}


@dataclass(frozen=True)
class Workload:
    """A real architecture at several sizes. `sizes` maps a size name to `init`'s keywords;
    each has `batch`, so a caller can build other batch shapes with `size | {"batch": n}`.
    Zoo workloads are f32 programs with a loss (the variant grammar reads `trainable` and
    `bf16`, hlotune.programs.variants)."""

    name: str
    description: str
    sizes: Mapping[str, Mapping[str, int]]
    init: Callable[..., tuple[Params, Any, Any]]  # (key, **size) -> params, x, y
    apply: Callable[[Params, Any], Any]  # x and the output may be pytrees, not just arrays
    loss: Callable[[Any, Any], jax.Array]
    trainable = True
    bf16 = False

    def program(
        self, size: str, *, train: bool, batch: int | None = None, seed: int = 0, abstract: bool = False
    ) -> tuple[Callable, tuple]:
        """The function and its example arguments (another `batch` gives another batch shape);
        the same seed gives the same arguments. `abstract`: shapes only (`example_arguments`)."""
        shape = dict(self.sizes[size]) | ({"batch": batch} if batch else {})
        # jitted over `self.init` itself: jax's caches know a function by its identity, so a second
        # program of this shape neither traces nor compiles init again
        jitted = jax.jit(self.init, static_argnames=tuple(shape), compiler_options=QUICK_COMPILE)
        arguments = example_arguments(partial(self.init, **shape), partial(jitted, **shape),
                                      partial(step_arguments, train=train), seed, abstract)
        return (self.train_step if train else self.apply), arguments

    def train_step(self, params: Params, velocity, x, y):
        return train_step(self.apply, self.loss, params, velocity, x, y)


def train_step(apply, loss, params: Params, velocity, x, y):
    """One SGD-with-momentum step on `loss(apply(params, x), y)`."""
    value, grads = jax.value_and_grad(lambda p: loss(apply(p, x), y))(params)
    params, velocity = momentum_update(params, grads, velocity)
    return params, velocity, value


def example_arguments(
    init: Callable[[jax.Array], tuple], jitted: Callable[[jax.Array], tuple], finish: Callable[..., tuple],
    seed: int, abstract: bool,
) -> tuple:
    """`finish(*init(PRNGKey(seed)))`. For values, `init` runs as one program, `jitted` at a low
    optimisation level (QUICK_COMPILE): op by op, it would compile a random-number kernel for
    every parameter shape, which takes longer than the model. `abstract`: only traced, for
    shapes (jax.ShapeDtypeStruct), with nothing compiled or run, for a caller that only lowers
    the program."""
    if abstract:
        return jax.eval_shape(lambda: finish(*init(jax.random.PRNGKey(seed))))
    return finish(*jitted(jax.random.PRNGKey(seed)))


def step_arguments(params: Params, x, y, *, train: bool) -> tuple:
    """The arguments of `apply`, or of `train_step` with zero velocity."""
    return (params, momentum_init(params), x, y) if train else (params, x)


def momentum_init(params: Params):
    """Zeros shaped as `params`: made by numpy, since jnp.zeros_like outside a jit compiles a
    kernel for each parameter shape; traced where `params` are (`example_arguments`' shapes,
    which must not allocate a large model's worth of zeros)."""
    return jax.tree_util.tree_map(_zeros_like, params)


def _zeros_like(p):
    if isinstance(p, jax.core.Tracer):
        return jnp.zeros_like(p)
    return jax.device_put(np.zeros(p.shape, p.dtype))


def momentum_update(params, grads, velocity, lr=1e-2, momentum=0.9):
    velocity = jax.tree_util.tree_map(lambda v, g: momentum * v + g, velocity, grads)
    params = jax.tree_util.tree_map(lambda p, v: p - lr * v, params, velocity)
    return params, velocity
