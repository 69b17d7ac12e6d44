"""The all space: flags x layouts, then the kernels of the best config so far, in stages
(strategies/staged.py)."""

from __future__ import annotations

import time

from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.spaces.fusion_space import fusion_choices
from hlotune.compiler.xla.hook import require_hook
from hlotune.compiler.spaces.kernel_space import program_module
from hlotune.compiler.xla.kernels import kernels_of
from hlotune.compiler.spaces.space import SearchSpace
from hlotune.errors import HlotuneError
from hlotune.progress import note
from hlotune.tuning.models.roofline import ModuleRoofline
from hlotune.tuning.recipes.base import Recipe
from hlotune.tuning.recipes.build import Build
from hlotune.tuning.recipes.tile import kernelwise_search
from hlotune.tuning.strategies.base import Strategy
from hlotune.tuning.strategies.exhaustive import Exhaustive
from hlotune.tuning.strategies.staged import Stage, Staged


class AllRecipe(Recipe):
    """The search over flags and layouts, then, with `kernel_stages`, the tile space's and the
    fusion space's searches on the kernels of the best config so far."""

    def __init__(self, build: Build) -> None:
        super().__init__(build)
        self._modules: dict[tuple, str] = {}  # both kernel stages stand on the same flags and layouts

    def staged(self, search: Strategy) -> Strategy:
        """`search`, then, with `kernel_stages` and a jax whose XLA takes per-kernel options, the
        kernel stages, an eighth of the budget each (what the tile search, `per_kernel` rounds
        and their combination, leaves goes to fusion). With only a time budget, the shares are
        of the seconds left."""
        options = self.options
        if not options.kernel_stages:
            return search
        try:
            require_hook()
        except HlotuneError as why:  # an older jax: flags and layouts alone, and the note says so
            note(f"{self.build.program.name}: no kernel stages: {why}", show=self.build.show)
            return search
        if options.budget is not None:
            kernels = options.budget // 8
            shares = [(options.budget - 2 * kernels, None), (kernels, None), (kernels, None)]
        else:
            left = options.time_s - (time.monotonic() - self.build.started)
            shares = [(None, 0.75 * left), (None, 0.125 * left), (None, 0.125 * left)]
        builders = (lambda base: search, self._tile_stage, self._fusion_stage)
        return Staged([Stage(name, configs, seconds, build)
                       for name, (configs, seconds), build in zip((search.name, "tile", "fusion"), shares, builders)])

    def _module(self, base: CompileConfig) -> str:
        key = (base.flags, base.layout)
        if key not in self._modules:
            self._modules[key] = program_module(self.build.layouts, base)
        return self._modules[key]

    def _tile_stage(self, base: CompileConfig) -> Strategy | None:
        """XTAT's kernel-by-kernel search on the kernels XLA makes under `base`; None if none is
        tunable."""
        module = self._module(base)
        try:
            space = SearchSpace("tile", self.build.layouts, kernels=kernels_of(module), base=base)
        except HlotuneError:  # no kernel whose partitions XLA lets us choose
            return None
        note(f"{self.build.program.name}: tile stage, the partitions of {len(space.genes)} kernels of the "
             "best config so far", show=self.build.show)
        return kernelwise_search(self.options, space, module)

    def _fusion_stage(self, base: CompileConfig) -> Strategy | None:
        """Every single fusion decision on `base`'s module, the module roofline's favourites
        first; None if XLA made no fusion to split or merge."""
        module = self._module(base)
        choices = fusion_choices(module)
        if not choices:
            return None
        note(f"{self.build.program.name}: fusion stage, {len(choices)} kernels of the best config so far to "
             "split or merge", show=self.build.show)
        space = SearchSpace("fusion", self.build.layouts, fusion=choices, base=base)
        roofline = None if self.options.ranking_model is None else ModuleRoofline(module)
        return Exhaustive(space.levels(1)[0], roofline)
