"""The kernels of a program as XLA compiles it (by default, or under a config's flags and
layouts): the genes of the tile and fusion spaces.

They are read from the module hlotune's pass is handed (hook.py), not from the finished
executable, so a kernel's key is exactly what the pass will see when a config names it. A
config's own kernel options are not applied here: its keys name kernels of this module.
"""

from __future__ import annotations

from hlotune.compiler.configs.config import DEFAULT_CONFIG, CompileConfig
from hlotune.compiler.xla.hook import compile_with_pass
from hlotune.compiler.xla.kernels import Kernel, kernels_of
from hlotune.compiler.configs.layouts import LayoutSpace


def program_module(layouts: LayoutSpace, config: CompileConfig = DEFAULT_CONFIG) -> str:
    """The fused module of the program compiled with `config`'s flags and layouts, as the pass
    sees it."""
    lowered = layouts.build(config.layout).lower(*layouts.leaves)
    _, record = compile_with_pass(lowered, compiler_options=config.flags.compiler_options())
    return record.texts[-1]


def program_kernels(layouts: LayoutSpace) -> list[Kernel]:
    """The kernels of the program's default compile, in the module's order."""
    return kernels_of(program_module(layouts))
