"""The config space of one program, flags x layouts x kernel options, as independent genes: the
one space that collection (`hlotune collect`) and tuning (`hlotune tune`) both draw from.

Every strategy edits configs the same way: a config is a genome with one gene per XLA option,
one per sampled HLO pass (disabled or not), one per layout site (a minor-to-major permutation,
or None for the compiler's choice) and one per tunable kernel (its outer-dimension partitions,
or None for XLA's choice: the "tile" space; or its fusion decision: the "fusion" space,
compiler/spaces/fusion_space.py). A kernel space may stand on a `base` config: its kernels are those
XLA made under the base's flags and layouts, and every config it makes keeps them (how the
"all" space tunes kernels after flags and layouts, tuning/strategies/staged.py). Independent genes are what mutation,
crossover and Optuna's categorical parameters need. The one dependency among XLA's options
(the fast-math sub-options mean nothing without fast math) is repaired when a genome becomes a
config: setting a sub-option turns fast math on. So is one
between flags and layouts: XLA:CPU cannot run a module with a layout constraint on an
equation's result (`e<k>` sites) once `algsimp` is disabled ("No registered implementation for
untyped custom call to LayoutConstraint", jaxlib 0.10.2), so such a config keeps `algsimp`.
The flag genes are those of flags.py that the installed XLA takes (xla_support.py).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hlotune.compiler.configs.config import DEFAULT_CONFIG, CompileConfig
from hlotune.compiler.configs.flags import (
    FAST_MATH,
    FAST_MATH_ONLY,
    FLAG_OPTIONS,
    NUMERICS_CHANGING,
    OPTIONS_BY_NAME,
    SAMPLED_PASSES,
    FlagConfig,
)
from hlotune.compiler.configs.kernel_config import KernelConfig
from hlotune.compiler.configs.layouts import LayoutConfig, LayoutSpace
from hlotune.compiler.configs.xla_support import xla_support
from hlotune.compiler.xla.kernels import Kernel
from hlotune.errors import HlotuneError
from hlotune.lazy import renamed_attributes

KERNEL_SPACES = ("tile", "fusion")  # whose genes are kernels of one compile
_PASS, _SITE, _KERNEL, _FUSION = "pass:", "layout:", "kernel:", "fusion:"
# Partitions offered per kernel: one thread, up to 8x this machine's 2 cores (XLA's own choice
# is the default value, None).
PARTITION_CHOICES = ((1,), (2,), (4,), (8,), (16,))
# Library fusions (YNNPACK, oneDNN) thread themselves: XLA's partitions do not reach them.
UNTUNABLE_KINDS = ("kCustom",)
_ALGSIMP = "algsimp"

Genome = dict[str, Any]


def tunable_kernels(kernels: Sequence[Kernel]) -> list[Kernel]:
    """The kernels whose partitions XLA lets us choose, in their order."""
    return [kernel for kernel in kernels if kernel.kind not in UNTUNABLE_KINDS]


@dataclass(frozen=True)
class Gene:
    """One independent choice: its name and its values, the default first."""

    name: str  # an XLA option, `pass:NAME` or `layout:SITE`
    values: tuple


class SearchSpace:
    """The genes of `kind` (a key of GENES) for one program. Options that change results by
    design (fast math, ...) are genes only with `allow_numerics_change`. The tile space needs
    the program's `kernels`, the fusion space its `fusion` choices (fusion_space.fusion_choices),
    both as XLA compiles the `base` config (the default unless given), which every config of
    theirs extends. "all" holds the flag and layout genes: its kernels are tuned in stages
    after them (tuning/strategies/staged.py), since a kernel key holds only under the flags it came from."""

    def __init__(
        self, kind: str, layouts: LayoutSpace | None = None, *, allow_numerics_change: bool = False,
        kernels: list[Kernel] | None = None, fusion: dict[str, tuple[str, ...]] | None = None,
        base: CompileConfig = DEFAULT_CONFIG,
    ) -> None:
        if kind not in GENES:
            raise HlotuneError(f"unknown space {kind!r}: use {', '.join(GENES)}")
        if not base.is_default and kind not in KERNEL_SPACES:
            raise HlotuneError(f"only the {' and '.join(KERNEL_SPACES)} spaces stand on a base config, not {kind}")
        self.kind, self.allow_numerics_change, self.base = kind, allow_numerics_change, base
        parts = _Parts(layouts, kernels, fusion, allow_numerics_change)
        self.genes: tuple[Gene, ...] = tuple(gene for genes_of in GENES[kind] for gene in genes_of(parts))

    def config(self, genome: Genome) -> CompileConfig:
        """The config of a genome (absent genes keep their defaults)."""
        options, passes, layouts, kernels, fusion = {}, [], {}, {}, {}
        for gene in self.genes:
            value = genome.get(gene.name, gene.values[0])
            if gene.name.startswith(_PASS):
                if value:
                    passes.append(gene.name.removeprefix(_PASS))
            elif gene.name.startswith(_SITE):
                if value is not None:
                    layouts[gene.name.removeprefix(_SITE)] = value
            elif gene.name.startswith(_KERNEL):
                if value is not None:
                    kernels[gene.name.removeprefix(_KERNEL)] = value
            elif gene.name.startswith(_FUSION):
                if value is not None:
                    fusion[gene.name.removeprefix(_FUSION)] = value
            elif value != gene.values[0]:
                options[gene.name] = value
        if any(name in options for name in FAST_MATH_ONLY):
            options[FAST_MATH] = True
        if any(site.startswith("e") for site in layouts) and _ALGSIMP in passes:
            passes.remove(_ALGSIMP)
        kernel_config = KernelConfig(tuple(sorted((dict(self.base.kernels.partitions) | kernels).items())),
                                     tuple(sorted((dict(self.base.kernels.fusion) | fusion).items())))
        if self.kind in KERNEL_SPACES:
            return CompileConfig(self.base.flags, self.base.layout, kernel_config)
        flags = FlagConfig(tuple(sorted(options.items())), tuple(sorted(passes)))
        return CompileConfig(flags, LayoutConfig.from_dict(layouts), kernel_config)

    def genome(self, config: CompileConfig) -> Genome:
        """The genome of a config; HlotuneError if the config sets something outside the space
        (for a kernel space: anything but kernels that its base does not set)."""
        if (config.flags, config.layout) != (self.base.flags, self.base.layout) and self.kind in KERNEL_SPACES:
            raise HlotuneError(f"the {self.kind} space keeps its base's flags and layouts; this config changes them")
        genes = {gene.name: gene for gene in self.genes}
        base = _choices(self.base)
        genome = {name: value for name, value in _choices(config).items()
                  if name in genes or base.get(name, _UNSET) != value}
        for name, value in genome.items():
            if name not in genes:
                why = " (it changes numerics: allow_numerics_change)" if name in NUMERICS_CHANGING else ""
                raise HlotuneError(f"{name} is not part of the {self.kind} search space{why}")
            if name in OPTIONS_BY_NAME and value not in genes[name].values:
                raise HlotuneError(f"{name}={value!r} is not part of the {self.kind} search space "
                                   "(the installed XLA lacks it)")
        return genome

    def random_config(self, rng: random.Random, rate: float = 0.25) -> CompileConfig:
        """Each gene moves to a random non-default value with probability `rate` (fast-math
        sub-options only when fast math moved, so they do not force it on most of the time)."""
        genome: Genome = {}
        for gene in self.genes:
            if gene.name in FAST_MATH_ONLY and not genome.get(FAST_MATH):
                continue
            if rng.random() < rate:
                genome[gene.name] = rng.choice(gene.values[1:])
        return self.config(genome)

    def covering(self, rng: random.Random, n: int, most: int = 4) -> list[CompileConfig] | None:
        """`n` configs that between them move every gene to each of its values once, about
        equally many moves each (a covering design: a first generation in which no choice goes
        unmeasured, however a prior ranks it); None where that takes more than `most` moves a
        config (a layout space's permutations) or a gene has more values than `n` configs."""
        moves = [(gene.name, value) for gene in self.genes for value in gene.values[1:]]
        if not moves or len(moves) > most * n or any(len(gene.values) - 1 > n for gene in self.genes):
            return None
        rng.shuffle(moves)
        genomes: list[Genome] = [{} for _ in range(n)]
        for name, value in moves:
            free = [genome for genome in genomes if name not in genome]
            fewest = min(map(len, free))
            rng.choice([genome for genome in free if len(genome) == fewest])[name] = value
        return [self.config(genome) for genome in genomes]

    def near_default(self, rng: random.Random, most: int = 3) -> CompileConfig:
        """One to `most` genes moved from the default: TpuGraphs' "default" layout search, which
        perturbs the compiler's choice."""
        genes = rng.sample(self.genes, min(len(self.genes), rng.randint(1, most)))
        return self.config({gene.name: rng.choice(gene.values[1:]) for gene in genes})

    def mutate(self, config: CompileConfig, rng: random.Random) -> CompileConfig:
        """One gene (two, 30 % of the time) moved to another of its values, the default included."""
        genome = self.genome(config)
        changes = 2 if rng.random() < 0.3 else 1
        for gene in rng.sample(self.genes, min(changes, len(self.genes))):
            current = genome.get(gene.name, gene.values[0])
            genome[gene.name] = rng.choice([v for v in gene.values if v != current])
        return self.config(genome)

    def crossover(self, a: CompileConfig, b: CompileConfig, rng: random.Random) -> CompileConfig:
        """Uniform crossover: each gene from either parent."""
        first, second = self.genome(a), self.genome(b)
        genome = {}
        for gene in self.genes:
            parent = first if rng.random() < 0.5 else second
            if gene.name in parent:
                genome[gene.name] = parent[gene.name]
        return self.config(genome)

    def count_within(self, depth: int) -> int:
        """How many genomes differ from the default in 1 to `depth` genes."""
        # Elementary symmetric sums of the genes' non-default value counts.
        sums = [1] + [0] * depth
        for gene in self.genes:
            for k in range(depth, 0, -1):
                sums[k] += sums[k - 1] * (len(gene.values) - 1)
        return sum(sums[1:])

    def levels(self, depth: int) -> list[list[CompileConfig]]:
        """Distinct non-default configs, by how many genes differ from the default (1 to
        `depth`); `count_within(depth)` says how many genomes that enumerates."""
        seen = {DEFAULT_CONFIG, self.config({})}
        levels: list[list[CompileConfig]] = []
        for k in range(1, depth + 1):
            level = []
            for genes in itertools.combinations(self.genes, k):
                for values in itertools.product(*(gene.values[1:] for gene in genes)):
                    config = self.config({g.name: v for g, v in zip(genes, values)})
                    if config not in seen:
                        seen.add(config)
                        level.append(config)
            levels.append(level)
        return levels


_UNSET = object()


@dataclass(frozen=True)
class _Parts:
    """What a space's genes are made from: the program's layouts, kernels and fusions."""

    layouts: LayoutSpace | None
    kernels: list[Kernel] | None
    fusion: dict[str, tuple[str, ...]] | None
    allow_numerics_change: bool

    @property
    def name(self) -> str:
        return self.layouts.program.name if self.layouts is not None else "the program"


def _flag_genes(parts: _Parts) -> list[Gene]:
    """A gene per option with values the installed XLA takes (numerics-changing ones where
    allowed), one per sampled pass it runs."""
    support = xla_support()
    genes = []
    for option in FLAG_OPTIONS:
        values = tuple(v for v in option.values[1:] if support.takes(option.name, v))
        if values and (parts.allow_numerics_change or option.name not in NUMERICS_CHANGING):
            genes.append(Gene(option.name, (option.default, *values)))
    return genes + [Gene(_PASS + name, (False, True)) for name in SAMPLED_PASSES if support.runs(name)]


def _layout_genes(parts: _Parts) -> list[Gene]:
    """A gene per layout site: the compiler's choice, or a minor-to-major permutation."""
    if parts.layouts is None or not parts.layouts.sites:
        raise HlotuneError(f"{parts.name}: no configurable layout sites to tune")
    return [Gene(_SITE + site.key, (None, *itertools.permutations(range(site.rank)))) for site in parts.layouts.sites]


def _tile_genes(parts: _Parts) -> list[Gene]:
    """A gene per tunable kernel: XLA's partitions, or one of PARTITION_CHOICES."""
    if parts.kernels is None:
        raise HlotuneError("the tile space needs the program's kernels (compiler.kernel_space)")
    tunable = tunable_kernels(parts.kernels)
    if not tunable:
        raise HlotuneError(f"{parts.name}: no kernel whose partitions XLA lets us choose")
    return [Gene(_KERNEL + k.key, (None, *PARTITION_CHOICES)) for k in tunable]


def _fusion_genes(parts: _Parts) -> list[Gene]:
    """A gene per loop or input fusion: XLA's decision, or a split or merge."""
    if not parts.fusion:
        raise HlotuneError(f"{parts.name}: no loop or input fusion to split or merge")
    return [Gene(_FUSION + key, (None, *values)) for key, values in parts.fusion.items()]


# Each space's genes, in order: "all" holds the flags and the layouts (its kernels are tuned in
# stages after them).
GENES = {"flags": (_flag_genes,), "layout": (_layout_genes,), "tile": (_tile_genes,), "fusion": (_fusion_genes,),
         "all": (_flag_genes, _layout_genes)}


def _choices(config: CompileConfig) -> Genome:
    """Every choice `config` makes, by gene name."""
    genome: Genome = dict(config.flags.options)
    genome |= {_PASS + name: True for name in config.flags.disabled_passes}
    genome |= {_SITE + site: dims for site, dims in config.layout.layouts}
    genome |= {_KERNEL + key: parts for key, parts in config.kernels.partitions}
    genome |= {_FUSION + key: decision for key, decision in config.kernels.fusion}
    return genome


__getattr__ = renamed_attributes(__name__, {"SPACES": "GENES"})  # the space kinds, its keys: for one release
