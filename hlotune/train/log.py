"""The training curves: one row per epoch, kept as a CSV after each epoch and drawn as a PNG
(`Curves`)."""

from __future__ import annotations

import csv
import io
import math
import time
from dataclasses import astuple, dataclass, fields
from pathlib import Path

from hlotune.atomic import write_bytes_atomic


@dataclass
class EpochLog:
    epoch: int
    train_loss: float
    valid_tau: float | None  # None without a validation set
    valid_opa: float | None
    lr: float  # at the epoch's last step
    seconds: float


def write_csv(path: Path, history: list[EpochLog]) -> None:
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(f.name for f in fields(EpochLog))
    for row in history:
        writer.writerow("" if value is None else value for value in astuple(row))
    write_bytes_atomic(path, text.getvalue().encode())


class Curves:
    """The PNG of a run's curves, redrawn at most every `every_s` seconds and after the last
    epoch: a draw takes 0.3 s of CPU (the first, with matplotlib's import, 1.3 s), more than
    a small model's whole epoch, while someone watching a long run still sees it move."""

    def __init__(self, path: Path, every_s: float = 30.0) -> None:
        self.path, self.every_s = path, every_s
        self._drawn = -math.inf

    def update(self, history: list[EpochLog], last: bool) -> None:
        if last or time.monotonic() - self._drawn >= self.every_s:
            plot_curves(self.path, history)
            self._drawn = time.monotonic()


def plot_curves(path: Path, history: list[EpochLog]) -> None:
    """Training loss on the left, validation tau and OPA on the right (Agg: no display needed,
    and no pyplot global state touched). matplotlib is imported here: whatever reads a run's
    log (checkpoints, the trainer's import) should not wait for it."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    figure = Figure(figsize=(10, 4), layout="constrained")
    loss_axes, valid_axes = figure.subplots(1, 2)
    epochs = [row.epoch for row in history]
    loss_axes.plot(epochs, [row.train_loss for row in history], marker="o")
    loss_axes.set(xlabel="epoch", ylabel="training loss", title="training")
    if all(row.train_loss > 0 for row in history):  # losses fall by orders of magnitude
        loss_axes.set_yscale("log")
    validated = [row for row in history if row.valid_tau is not None]
    for name in ("valid_tau", "valid_opa"):
        values = [getattr(row, name) for row in validated]
        valid_axes.plot([row.epoch for row in validated], values, marker="o", label=name)
    valid_axes.set(xlabel="epoch", title="validation")
    if validated:
        valid_axes.legend()
    for axes in (loss_axes, valid_axes):
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    buffer = io.BytesIO()
    FigureCanvasAgg(figure).print_png(buffer)
    write_bytes_atomic(path, buffer.getvalue())
