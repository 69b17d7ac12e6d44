"""The kernels of a program as XLA compiles it by default: the genes of the tile space.

They are read from the module hlotune's pass is handed (hook.py), not from the finished
executable, so a kernel's key is exactly what the pass will see when a config names it.
"""

from __future__ import annotations

from hlotune.compiler.hook import compile_with_pass
from hlotune.compiler.kernels import Kernel, kernels_of
from hlotune.compiler.layouts import DEFAULT_LAYOUT, LayoutSpace


def program_module(layouts: LayoutSpace) -> str:
    """The fused module of the program's default compile, as the pass sees it."""
    _, record = compile_with_pass(layouts.build(DEFAULT_LAYOUT).lower(*layouts.leaves))
    return record.texts[-1]


def program_kernels(layouts: LayoutSpace) -> list[Kernel]:
    """The kernels of the program's default compile, in the module's order."""
    return kernels_of(program_module(layouts))
