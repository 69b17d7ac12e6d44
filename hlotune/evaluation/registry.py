"""The models `hlotune eval`, `predict` and `tune --model` name, each with what loads it, imported
when a model is loaded: the command line lists them without importing any.

A key is a name, or a prefix ending in ":" (`baseline:` for `baseline:NAME`); FOLDER takes every
name no other key does: a model folder. The tuner's own names (`pretrained`, `transfer`, `none`)
are tuning/models/registry.py's, beside these.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hlotune.lazy import Imported
from hlotune.models.files import PRETRAINED

FOLDER = "FOLDER"
BASELINES = ("random", "analytical", "gbdt", "gbdt@DIR", "gbdt-rank", "gbdt-rank@DIR")


@dataclass(frozen=True)
class ModelKind:
    """How a model name is loaded (`load(name)`; None: the name of no model), what it is in one
    line of --help, and what the name takes after "@" (`transfer@DIR`), if anything."""

    load: Callable[..., Any] | None
    description: str
    at: str | None = None


def model_kind(models: Mapping[str, ModelKind], name: str) -> ModelKind | None:
    """The kind `name` is in `models`: its own key's, NAME@ARG's for a kind that takes an ARG,
    else its prefix's; None where no key takes it."""
    if name in models:
        return models[name]
    base, at, _ = name.partition("@")
    if at and base in models and models[base].at is not None:
        return models[base]
    prefix, colon, _ = name.partition(":")
    return models.get(prefix + colon) if colon else None


def described(models: Mapping[str, ModelKind]) -> dict[str, str]:
    """Each kind's spelling (`baseline:NAME`, `transfer[@DIR]`) and what it is: its --help line."""
    return {key + "NAME" if key.endswith(":") else f"{key}[@{kind.at}]" if kind.at else key: kind.description
            for key, kind in models.items()}


def _scorer(name: str) -> Imported:
    return Imported("hlotune.evaluation.scorers", name)


MODELS: dict[str, ModelKind] = {
    "pretrained:": ModelKind(_scorer("pretrained_scorer"), f"a model shipped in the package: "
                             f"{', '.join(PRETRAINED)} (kernels scores each config by the kernels XLA "
                             "compiles for it: docs/cost_model.md)"),
    "baseline:": ModelKind(_scorer("baseline_scorer"), f"no GNN: {', '.join(BASELINES)} (the trees "
                           "train on builtin:COLLECTION/train when first asked for, or on DIR)"),
    FOLDER: ModelKind(_scorer("folder_scorer"),
                      "a model folder hlotune train, ensemble or rebuild kernel-model wrote"),
}
