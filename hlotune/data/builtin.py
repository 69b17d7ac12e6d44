"""The built-in dataset: hlotune's own `flags` and `layout` collections, measured here.

Addressed as `builtin:flags` or `builtin:layout`, optionally with `/train`, `/valid` or
`/test`. Splits are by architecture family, so no family is in two splits and validation
measures generalisation to unseen architectures. Regenerate it (resumable) with
`python -m hlotune.collect.builtin`; DATACARD.md beside the files says how it was measured.
"""

from __future__ import annotations

from pathlib import Path

from hlotune.errors import HlotuneError

PREFIX = "builtin:"
ROOT = Path(__file__).resolve().parent.parent / "datasets" / "builtin"
SPLITS = {
    "train": ("mlp", "cnn", "resnet", "transformer", "gpt", "lstm", "moe", "vae"),
    "valid": ("mobilenet", "gnn"),
    "test": ("unet", "vit"),
}
# Two sizes, inference and training, and a second batch shape of the training step.
VARIANTS = ("tiny", "small", "tiny-train", "tiny-b8-train")


def resolve(spec: str | Path) -> Path:
    """`builtin:layout/valid` -> its folder; any other path is returned as it is."""
    text = str(spec)
    if not text.startswith(PREFIX):
        return Path(spec)
    collection, _, split = text.removeprefix(PREFIX).partition("/")
    if collection not in ("flags", "layout") or (split and split not in SPLITS):
        raise HlotuneError(f"unknown built-in dataset {text!r}: use builtin:flags|layout[/train|valid|test]")
    folder = ROOT / collection / split if split else ROOT / collection
    if not folder.is_dir():
        raise HlotuneError(f"{text}: not collected in this installation ({folder} is missing)")
    return folder


def programs(split: str) -> list[str]:
    return [f"zoo:{family}@{variant}" for family in SPLITS[split] for variant in VARIANTS]
