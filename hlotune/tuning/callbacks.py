"""Side effects of a tune, kept out of the search (as MetaSchedule's measure callbacks): each
callback sees every batch of trials as it lands, and the end of the run.

`tune()` installs `ProgressBar` and, with `fine_tune_every`, `UpdateCostModel`; users add
their own (logging, plots, early stopping by raising).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from hlotune.progress import progress_bar
from hlotune.tuning.strategies.base import Trial

if TYPE_CHECKING:
    from hlotune.tuning.loop import Tuner
    from hlotune.tuning.models.base import CostModel


class Callback:
    """Hooks of one tune; every hook does nothing unless overridden."""

    def on_start(self, tuner: Tuner) -> None: ...

    def after_batch(self, tuner: Tuner, trials: Sequence[Trial]) -> None: ...

    def on_end(self, tuner: Tuner) -> None: ...


class ProgressBar(Callback):
    """A bar of configs evaluated, with the best speedup so far (only on a terminal)."""

    def __init__(self, budget: int | None) -> None:
        self._budget, self._bar = budget, None

    def on_start(self, tuner: Tuner) -> None:
        self._bar = progress_bar(total=self._budget, desc=tuner.program.name, unit="config",
                                 leave=False, initial=len(tuner.trials))

    def after_batch(self, tuner: Tuner, trials: Sequence[Trial]) -> None:
        self._bar.update(len(trials))
        self._bar.set_postfix(best=f"{max(1 / t.cost for t in tuner.trials):.3f}x")

    def on_end(self, tuner: Tuner) -> None:
        self._bar.close()


class UpdateCostModel(Callback):
    """Teaches a cost model (the tuner's, unless `model` names another) the program's
    measurements each time `every` more configs have been evaluated: after every batch for a
    model that refits in microseconds, at intervals for one that trains (a GNN)."""

    def __init__(self, every: int, model: CostModel | None = None) -> None:
        self.every, self.model = every, model
        self._done_at = 1  # the default alone teaches nothing

    def after_batch(self, tuner: Tuner, trials: Sequence[Trial]) -> None:
        model = self.model or tuner.cost_model
        ready = model is not None and tuner.default_ns is not None
        if ready and len(tuner.trials) - self._done_at >= self.every:
            self._done_at = len(tuner.trials)
            model.update(tuner.trials, tuner.default_ns)
