"""Training losses over the configs of one graph, selectable and combinable by a spec string.

Convention everywhere: `scores` are the model's predictions of log runtime, so lower = faster,
and `targets` are true log runtimes (the trainer's `log_targets`). A ranking loss therefore
wants `s_i > s_j` whenever config i is slower (`y_i > y_j`), which is the seeds' slide as is:

    L = sum_i sum_j [y_i > y_j] * phi(s_i - s_j) / (n (n - 1) / 2)

with phi decreasing: hinge `max(0, 1 - z)` (wants a margin of 1) or logistic `log(1 + e^-z)`.
Ranking losses ignore the scores' offset and scale, which is all the ranking metrics judge and
why the Kaggle winners preferred them to MSE; MSE also anchors the scores to real runtimes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor
from torch.nn import functional as F

from hlotune.errors import HlotuneError

LossFn = Callable[[Tensor, Tensor], Tensor]


def mse_loss(scores: Tensor, targets: Tensor) -> Tensor:
    """Mean squared error between predicted and true log runtimes."""
    return F.mse_loss(scores, targets)


def pairwise_loss(scores: Tensor, targets: Tensor, phi: Callable[[Tensor], Tensor]) -> Tensor:
    """The slide's pairwise rank loss over all ordered pairs of the n configs (see module doc)."""
    n = scores.shape[0]
    if n < 2:
        return scores.sum() * 0.0
    slower = targets[:, None] > targets[None, :]  # [y_i > y_j]
    margins = scores[:, None] - scores[None, :]  # s_i - s_j
    return phi(margins[slower]).sum() / (n * (n - 1) / 2)


def pairwise_hinge_loss(scores: Tensor, targets: Tensor) -> Tensor:
    return pairwise_loss(scores, targets, lambda z: F.relu(1.0 - z))


def pairwise_logistic_loss(scores: Tensor, targets: Tensor) -> Tensor:
    return pairwise_loss(scores, targets, lambda z: F.softplus(-z))


def listmle_loss(scores: Tensor, targets: Tensor) -> Tensor:
    """ListMLE (Xia et al. 2008): the negative log-likelihood of the true order, fastest first,
    under a Plackett-Luce model with utilities `-scores`; averaged over the n positions.

    For the configs sorted fastest first, `sum_k logsumexp(u_k..u_n) - u_k`, `u = -scores`.
    Tied runtimes are taken in their given order.
    """
    order = torch.argsort(targets, stable=True)
    utilities = -scores[order]
    tails = torch.logcumsumexp(utilities.flip(0), dim=0).flip(0)  # logsumexp(u_k..u_n)
    return (tails - utilities).mean()


LOSSES: dict[str, LossFn] = {
    "mse": mse_loss,
    "pairwise_hinge": pairwise_hinge_loss,
    "pairwise_logistic": pairwise_logistic_loss,
    "listmle": listmle_loss,
}


@dataclass(frozen=True)
class CombinedLoss:
    """A weighted sum of named losses; `str()` gives back the spec it was parsed from."""

    terms: tuple[tuple[str, float], ...]

    @classmethod
    def parse(cls, spec: str) -> CombinedLoss:
        """`"mse:1,pairwise_hinge:0.5"` or `"listmle"` (weight 1); HlotuneError when malformed."""
        terms = []
        for part in spec.split(","):
            name, _, weight_text = part.strip().partition(":")
            if name not in LOSSES:
                known = ", ".join(LOSSES)
                raise HlotuneError(f"loss {spec!r}: unknown loss {name!r} (use {known})")
            try:
                weight = float(weight_text) if weight_text else 1.0
            except ValueError:
                raise HlotuneError(f"loss {spec!r}: weight of {name} is not a number") from None
            if not math.isfinite(weight) or weight <= 0:
                raise HlotuneError(f"loss {spec!r}: weight of {name} must be positive")
            terms.append((name, weight))
        if len({name for name, _ in terms}) != len(terms):
            raise HlotuneError(f"loss {spec!r}: a loss is named twice")
        return cls(tuple(terms))

    def __call__(self, scores: Tensor, targets: Tensor) -> Tensor:
        total = scores.new_zeros(())
        for name, weight in self.terms:
            total = total + weight * LOSSES[name](scores, targets)
        return total

    def __str__(self) -> str:
        return ",".join(f"{name}:{weight:g}" for name, weight in self.terms)
