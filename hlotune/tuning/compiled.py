"""A program compiled in this process under a tuned config, callable like the original.

Flags and per-kernel options are applied by `compiler.hook.compile_config`; layouts need the
program rebuilt with its layout constraints (LayoutSpace.build_like_program), which takes and
returns the program's own pytrees. What the user calls costs what the raw executable does:
where no argument changes layout `compile_program` gives jax's Compiled object itself (C++
dispatch, nothing added per call); where some do, a wrapper puts only those arguments into their
layout, unless they are in it already (a previous call's `device_put`). `compiled(fn, *args,
config=...)` applies an exported config (`hlotune db export --format json`) to the user's own
function, without the tuner; it is called as the function is under jax.jit, keywords, static
values and typed keys included (programs/calls.py), which costs one Python call more where the
call is all positional and nothing is static. benchmarks/compiled_overhead_bench.py times the
cost against `jax.jit`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hlotune.compiler.configs.config import CompileConfig, load_config
from hlotune.compiler.xla.hook import compile_config as compile_lowered
from hlotune.compiler.configs.layouts import LayoutSpace
from hlotune.errors import HlotuneError
from hlotune.lazy import renamed_attributes
from hlotune.programs import Program


def compile_program(program: Program, config: CompileConfig, donate_argnums: tuple[int, ...] = ()) -> Callable:
    """`program.fn` compiled with `config` for arguments shaped like `program.args`, donating
    those at `donate_argnums`."""
    import jax

    space = LayoutSpace(program)
    space.check(config.layout)
    lowered = space.build_like_program(config.layout, donate_argnums).lower(*program.args)
    executable = compile_lowered(lowered, config)
    formats = jax.tree_util.tree_leaves(executable.input_formats[0])  # as arrays report theirs
    moved = [(i, formats[i]) for i, f in enumerate(space.entry_formats(config.layout)) if f is not None]
    if not moved:
        return executable
    return _relayout(program.name, executable, jax.tree_util.tree_structure(program.args), moved)


def _relayout(name: str, executable: Any, in_tree: Any, moved: list) -> Callable:
    """`executable`, called with the arguments of flat index i in `moved` put into their Format
    (a committed array in another layout is refused by jax, an uncommitted one is moved at
    more cost than a put)."""
    import jax

    def call(*args):
        leaves, tree = jax.tree_util.tree_flatten(args)
        if tree != in_tree:
            raise HlotuneError(f"{name}: compiled for arguments {in_tree}, called with {tree}")
        for i, target in moved:
            if getattr(leaves[i], "format", None) != target:
                leaves[i] = jax.device_put(leaves[i], target)
        return executable(*tree.unflatten(leaves))

    return call


def compiled(fn: Callable, *args, config: CompileConfig | dict | str | Path | None = None,
             static_argnums: int | Sequence[int] | None = None,
             static_argnames: str | Sequence[str] | None = None, **kwargs) -> Callable:
    """`fn` compiled for calls like `fn(*args, **kwargs)` with `config`: a CompileConfig, its
    dict, or what `hlotune db export --format json` printed (the JSON text, a file of it, or its
    parsed dict, whose "config" is used). As under jax.jit, `static_argnums` and
    `static_argnames` are baked in: the result is called with the same static values."""
    from hlotune.programs.calls import jit_function
    from hlotune.tuning.keywords import split_keywords

    _, arguments = split_keywords(kwargs, compiled, (), fn)
    if config is None:
        raise HlotuneError("hlotune.compiled needs config=, the config to compile with")
    call = jit_function(fn, static_argnums, static_argnames).bind(args, arguments)
    keyed = call.keyed()
    executable = compile_program(_as_tuned(keyed, call.data), load_config(config))
    return call.caller(keyed.caller(executable))


def _as_tuned(fn: Callable, args: tuple) -> Program:
    """`fn` in the form the tuner measured: its jax.export module, where it exports. The
    export is not jax.jit's lowering: a call wraps it and its repeated constants are shared
    (jacobi2d's 0.25, once per sweep in jax.jit's). Under a config that drops passes (the
    fast-compile preset) XLA fuses the two differently (jacobi2d: 60 and 39 grid-sized
    fusions), and jacobi2d's tuned config ran 1.52x on the export, 1.00x on the lowering."""
    from hlotune.programs.function_program import function_program

    try:
        return function_program(fn, args, Path("programs")).user  # named only; nothing is written
    except HlotuneError:  # jax.export refuses it: as jax.jit lowers it
        return Program(fn.__name__, fn, args)


__getattr__ = renamed_attributes(__name__, {"compile_config": "compile_program"})  # hook's has the name
