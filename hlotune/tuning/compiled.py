"""A program compiled in this process under a tuned config, callable like the original.

Flags and per-kernel options are applied by `compiler.hook.compile_config`; layouts need the
program rebuilt with its layout constraints (LayoutSpace.build), which takes and returns flat
leaves, so the callable flattens the arguments, puts each in the layout the executable
expects, and rebuilds the output tree. `compiled(fn, *args, config=...)` applies an exported
config (`hlotune db export --format json`) to the user's own function, without the tuner.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from hlotune.compiler.config import CompileConfig, load_config
from hlotune.compiler.hook import compile_config as compile_lowered
from hlotune.compiler.layouts import LayoutSpace
from hlotune.errors import HlotuneError
from hlotune.programs import Program


def compile_config(program: Program, config: CompileConfig) -> Callable:
    """`program.fn` compiled with `config` for arguments shaped like `program.args`."""
    import jax

    space = LayoutSpace(program)
    space.check(config.layout)
    executable = compile_lowered(space.build(config.layout).lower(*space.leaves), config)
    in_tree = jax.tree_util.tree_structure(program.args)
    out_tree = jax.tree_util.tree_structure(jax.eval_shape(program.fn, *program.args))
    formats = executable.input_formats[0]

    def call(*args):
        leaves, tree = jax.tree_util.tree_flatten(args)
        if tree != in_tree:
            raise HlotuneError(f"{program.name}: compiled for arguments {in_tree}, called with {tree}")
        placed = [jax.device_put(leaf, f) for leaf, f in zip(leaves, formats)]
        return out_tree.unflatten(executable(*placed))

    return call


def compiled(fn: Callable, *args, config: CompileConfig | dict | str | Path) -> Callable:
    """`fn` compiled for arguments shaped like `args` with `config`: a CompileConfig, its dict,
    or what `hlotune db export --format json` printed (the JSON text, a file of it, or its
    parsed dict, whose "config" is used)."""
    return compile_config(Program(getattr(fn, "__name__", "function"), fn, args), load_config(config))
