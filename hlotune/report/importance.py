"""Which flags and layout choices matter, estimated from one program's measurements.

The method: a ridge regression of log(cost) on one indicator per choice (an XLA option at a
non-default value, an HLO pass disabled, a tensor's layout set), over the program's healthy
records; a choice's effect is exp(coefficient) - 1, the runtime change it goes with when the
other choices are held fixed. Why this and not Optuna's importance evaluators (fANOVA, PED-ANOVA):

- it reads the tuning database of any strategy, not only the optuna strategy's study, and
  needs no optional dependency;
- an effect has a sign and a unit, per cent of runtime, comparable with the noise floor,
  where an importance is a share of variance that cannot say "faster" or "slower";
- unlike comparing the configs with and without a choice, the regression separates choices
  that a search moved together (evolutionary children share their parents' genes).

The ridge penalty (RIDGE, in configs) pulls the effects of choices seen in few configs towards
zero. Effects are associations among the configs measured, not controlled experiments: one
within the noise floor is no effect, and a report says so. Failed configs cannot enter a
regression on runtime; each choice counts the failed configs that carried it instead.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hlotune.tuning.models.online import choices
from hlotune.tuning.models.online import ridge as fit_ridge
from hlotune.tuning.storage import Record

RIDGE = 1.0


@dataclass(frozen=True)
class ChoiceEffect:
    choice: str  # e.g. "xla_cpu_use_xnnpack=False", "disable pass fusion", "layout e3=(1, 0)"
    configs: int  # healthy configs measured with it
    failed: int  # failed configs that carried it
    effect: float | None  # runtime change it goes with (-0.1: 10% faster); None: never healthy


def choice_effects(records: Sequence[Record], ridge: float = RIDGE) -> list[ChoiceEffect]:
    """The effect of every choice found in `records`, largest first (failed-only ones last)."""
    healthy = [r for r in records if r.ok and math.isfinite(r.cost)]
    names = sorted({c for r in records for c in choices(r.config)})
    column = {name: j for j, name in enumerate(names)}
    x = np.zeros((len(healthy), len(names)))
    for i, record in enumerate(healthy):
        x[i, [column[c] for c in choices(record.config)]] = 1.0
    y = np.log([r.cost for r in healthy])
    coefficients = fit_ridge(x, y, ridge) if len(healthy) > 1 else np.zeros(len(names))
    failed = [c for r in records if not r.ok for c in choices(r.config)]
    effects = [
        ChoiceEffect(name, int(x[:, j].sum()), failed.count(name),
                     float(np.expm1(coefficients[j])) if x[:, j].any() else None)
        for j, name in enumerate(names)
    ]
    return sorted(effects, key=lambda e: -1.0 if e.effect is None else abs(e.effect), reverse=True)
