"""The variant grammar `PREFIX NAME[@SIZE[-bBATCH][-train][-bf16]]` that the zoo (`zoo:`), the
corpus (`corpus:`) and GO's graphs (`go:`) share, each resolving against its own table of
workloads. A workload offers `-train` where it has a loss (`trainable`) and `-bf16` where it
runs in bfloat16 (`bf16`); the zoo's and GO's are f32."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hlotune.errors import HlotuneError

TRAIN_SUFFIX = "-train"
BF16_SUFFIX = "-bf16"


def zoo_variants(name: str) -> list[str]:
    """The variants of a zoo workload at its own batch sizes (any `-bN` works too)."""
    from hlotune.programs.zoo import WORKLOADS

    return _variants(WORKLOADS[name])


def corpus_variants(name: str) -> list[str]:
    """The variants of a corpus model (any `-bN` works too)."""
    from hlotune.programs.corpus import CORPUS

    return _variants(CORPUS[name])


def numerics_variants(name: str) -> list[str]:
    """The sizes of a numerics program (it has no batch, training step or bf16)."""
    from hlotune.programs.numerics import NUMERICS

    return _variants(NUMERICS[name])


@dataclass(frozen=True)
class WorkloadVariant:
    """A `PREFIX NAME[@SIZE[-bBATCH][-train][-bf16]]` spec resolved against a table of workloads."""

    name: str  # the program's name: the spec with its variant spelt out
    workload: Any  # hlotune.programs.zoo.base.Workload
    size: str
    batch: int | None
    train: bool
    bf16: bool


def resolve_workload(spec: str, prefix: str, workloads: Mapping[str, Any], kind: str) -> WorkloadVariant:
    """Look up the workload and variant a spec names (default: the first size); `kind` names
    the table in errors ("zoo program", "GO graph")."""
    name, _, variant = spec.removeprefix(prefix).partition("@")
    if name not in workloads:
        raise HlotuneError(f"unknown {kind} {name!r}; known: {', '.join(sorted(workloads))}")
    workload = workloads[name]
    variant = variant or next(iter(workload.sizes))
    size, batch, train, bf16 = _parse_variant(variant)
    known = _variants(workload)
    if size + TRAIN_SUFFIX * train + BF16_SUFFIX * bf16 not in known:
        raise HlotuneError(
            f"unknown variant {variant!r} of {prefix}{name}; known: "
            f"{', '.join(known)} (SIZE[-bBATCH][-train][-bf16])"
        )
    return WorkloadVariant(f"{prefix}{name}@{variant}", workload, size, batch, train, bf16)


def _variants(workload) -> list[str]:
    """Every size for inference, then as a training step, then both in bf16, as the workload has them."""
    suffixes = [""] + [TRAIN_SUFFIX] * workload.trainable
    suffixes += [suffix + BF16_SUFFIX for suffix in suffixes] * workload.bf16
    return [size + suffix for suffix in suffixes for size in workload.sizes]


_VARIANT = re.compile(
    r"(?P<size>[a-z0-9_]+)(?:-b(?P<batch>[1-9][0-9]*))?(?P<train>-train)?(?P<bf16>-bf16)?"
)


def _parse_variant(variant: str) -> tuple[str, int | None, bool, bool]:
    """`small-b32-train-bf16` -> ("small", 32, True, True); an unknown form gives the size ""."""
    match = _VARIANT.fullmatch(variant)
    if match is None:
        return "", None, False, False
    batch = match["batch"]
    return match["size"], int(batch) if batch else None, bool(match["train"]), bool(match["bf16"])
