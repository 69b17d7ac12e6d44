"""Search strategies behind one ask/tell interface (the shape of Optuna's ask-and-tell API).

The tuner asks for configs, measures them (or finds them in the database) and tells their
costs back; a strategy never measures anything itself. That split keeps strategies
deterministic for a seed: a resumed run tells the same costs in the same order (read from the
database instead of measured), so it asks the same configs and repeats no measurement.

A cost is a config's runtime relative to the default measured in the same batch (lower is
better; inf for a config that failed or gave wrong outputs), so costs from batches minutes
apart compare despite drift. The default's cost is 1 and is told before the first ask.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hlotune.compiler.configs.config import DEFAULT_CONFIG, CompileConfig


@dataclass(frozen=True)
class Trial:
    """A config and its cost, told back to the strategy that asked for it."""

    config: CompileConfig
    cost: float  # runtime / the same batch's default runtime; inf: failed or wrong output
    # profiled kernels' times / their times under the batch's default, by kernel name
    kernel_costs: Mapping[str, float] | None = None


class Strategy(ABC):
    """Asks for configs it has not asked before and learns from the costs told back."""

    name: str
    profiles = False  # whether its configs must be measured with each kernel's time (Trial.kernel_costs)

    def __init__(self) -> None:
        self.costs: dict[CompileConfig, float] = {}  # told, in order
        self._asked: dict[CompileConfig, None] = {DEFAULT_CONFIG: None}

    @abstractmethod
    def ask(self, n: int) -> list[CompileConfig]:
        """Up to `n` configs never asked before; fewer (or none) when the space runs dry."""

    def tell(self, trials: Sequence[Trial]) -> None:
        for trial in trials:
            self.costs[trial.config] = trial.cost

    def _fresh(self, config: CompileConfig) -> bool:
        """Whether `config` is new, marking it asked if so."""
        if config in self._asked:
            return False
        self._asked[config] = None
        return True
