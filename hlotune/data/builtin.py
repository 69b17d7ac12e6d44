"""The built-in dataset: hlotune's own `flags`, `layout` and `tile` collections, measured here.

Addressed as `builtin:flags`, `builtin:layout` or `builtin:tile`, optionally with `/train`,
`/valid` or `/test`. Splits are by architecture family, so no family is in two splits and validation
measures generalisation to unseen architectures. The files live outside the package, as shards
unpacked on first use (hlotune.data.store); regenerate them (resumable) with
`hlotune rebuild dataset`; datasets/DATACARD.md says how they were measured.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from hlotune.data.collections import BUILTIN
from hlotune.data.store import Store
from hlotune.errors import HlotuneError

PREFIX = "builtin:"
SLOW = 3.0  # a family over this many times the median family's seconds per program waits


@dataclass(frozen=True)
class Edition:
    """One edition of the built-in dataset: which families each split holds (program specs
    before `@`), the variants collected of each source, and how it is measured."""

    splits: dict[str, tuple[str, ...]]
    variants: dict[str, tuple[str, ...]]  # a source ("zoo", "corpus") or a family -> its variants
    configs: int  # drawn per program, beside the default
    noise_target: float | None  # each config's median known within this (95% CI), or None

    @property
    def root(self) -> Path:
        """The unpacked tree, every part of it (collectors write here; `hlotune data pack`
        makes shards of it again)."""
        return Store.find().unpacked_all()

    def programs(self, split: str) -> list[str]:
        return [f"{family}@{variant}" for family in self.splits[split] for variant in self.variants_of(family)]

    def variants_of(self, family: str) -> tuple[str, ...]:
        return self.variants.get(family) or self.variants[family.partition(":")[0]]

    def order(self, seconds: Mapping[str, float] | None = None) -> list[tuple[str, str]]:
        """(split, program) in collection order: one variant of every family before a second
        of any, the held-out splits first, so a collection stopped early is already useful;
        within those, the families that took fewest `seconds` per program so far first, so a
        target count is reached soonest. A slow family (over `SLOW` times the median family's
        seconds) gets its later variants only after every quick family has all of its own."""
        cost = seconds or {}
        slow = SLOW * statistics.median(cost.values()) if cost else math.inf
        splits = ("test", "valid", "train")
        programs = [(i, split, family, variants[i])
                    for i in range(max(len(v) for v in self.variants.values()))
                    for split in splits for family in self.splits[split]
                    if i < len(variants := self.variants_of(family))]

        def rank(program: tuple[int, str, str, str]) -> tuple[bool, int, int, float]:
            i, split, family, _ = program
            seconds = cost.get(family, 0.0)
            return i > 0 and seconds > slow, i, splits.index(split), seconds
        return [(split, f"{family}@{variant}") for _, split, family, variant in sorted(programs, key=rank)]


EDITION = Edition(  # the second: the first had 48 programs of the 12 zoo families, 64 configs each
    splits={
        "train": tuple(f"zoo:{f}" for f in ("mlp", "cnn", "resnet", "transformer", "gpt", "lstm", "moe", "vae"))
        + tuple(f"corpus:{f}" for f in (
            "hf-bert", "hf-roberta", "hf-albert", "hf-distilbert", "hf-roformer", "hf-gpt2",
            "hf-gpt-neo", "hf-gpt-j", "hf-opt", "hf-bloom", "hf-xglm", "hf-llama", "hf-gemma",
            "hf-bart", "hf-mbart", "hf-pegasus", "hf-marian", "hf-beit", "hf-resnet", "hf-clip",
            "hf-wav2vec2", "haiku-resnet", "mjx-bodies")),
        "valid": ("zoo:mobilenet", "zoo:gnn", "corpus:hf-electra", "corpus:hf-regnet", "corpus:haiku-mobilenet"),
        # held out: speech, vision, a decoder LLM and physics, five of the seven from the corpus
        "test": ("zoo:unet", "zoo:vit", "corpus:hf-whisper", "corpus:hf-dinov2", "corpus:hf-mistral",
                 "corpus:hf-vit", "corpus:jaxmd-lj"),
    },
    variants={"zoo": ("tiny", "small", "tiny-train", "tiny-b8-train"),  # two sizes, a step, a batch
              "corpus": ("tiny", "small", "tiny-train", "tiny-bf16"),
              # physics steps: no training step, f32 only
              "corpus:jaxmd-lj": ("tiny", "small", "base", "tiny-b8"),
              "corpus:mjx-bodies": ("tiny", "small", "base", "tiny-b8")},
    configs=48, noise_target=0.02,
)
# The tile collection labels kernels, and the edition's small programs share most of theirs
# (about 9 distinct kernels a program), so it goes on past the edition's programs with variants
# of its own, after all of those: the small size's backward pass first (training steps added 29-54
# new kernels a minute, the large size 9), then the large size, whose kernels are where
# partitions matter (most kernels under 10 us run fastest on one thread), then bf16 (or larger
# batches, for the families without them).
TILE_VARIANTS = {"zoo": ("small-train", "base", "small-b32"), "corpus": ("small-train", "base", "small-bf16"),
                 "corpus:jaxmd-lj": ("small-b4", "base-b4"), "corpus:mjx-bodies": ("small-b32", "base-b8")}
TILE_EDITION = replace(EDITION, variants={key: variants + TILE_VARIANTS[key] for key, variants in EDITION.variants.items()})
# the families of each split as files and `hlotune inspect` name them: without the source
SPLITS = {split: tuple(f.partition(":")[2] for f in families) for split, families in EDITION.splits.items()}


def resolve(spec: str | Path) -> Path:
    """`builtin:layout/valid` -> its folder; any other path is returned as it is."""
    text = str(spec)
    if not text.startswith(PREFIX):
        return Path(spec)
    collection, _, split = text.removeprefix(PREFIX).partition("/")
    if collection not in BUILTIN or (split and split not in SPLITS):
        raise HlotuneError(f"unknown built-in dataset {text!r}: use builtin:{'|'.join(BUILTIN)}[/train|valid|test]")
    folder = Store.find().unpacked(collection)
    folder = folder / split if split else folder
    if not folder.is_dir():
        raise HlotuneError(f"{text}: not collected in this installation ({folder} is missing)")
    return folder


def __getattr__(name: str) -> Path:
    """`ROOT`: the unpacked tree, found (and unpacked) on first use rather than at import."""
    if name == "ROOT":
        return EDITION.root
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
