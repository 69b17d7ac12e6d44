"""The fleet section of a tuning report: what `hlotune fleet tune` saves, per program and in
total, over the recorded window, from the field's trials or the verifications beside jax.jit
(fleet/savings.py)."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from hlotune.fleet.savings import FleetSavings
from hlotune.report.page import Page


def fleet_section(page: Page, savings: FleetSavings) -> None:
    page.heading("The fleet: what tuning saves where the programs run")
    ratio = savings.saving_over_cost
    page.paragraph(
        f"{len(savings.programs)} recorded programs ran {savings.recorded_s:,.1f} s over the "
        f"{savings.window_s / 3600:.2f} h their counts span; their decisions saved {savings.saved_s:,.2f} s "
        f"of it, for {savings.tuning_s:,.0f} s of tuning"
        + (f": the saving is {ratio:.3f}x the tuning time." if ratio is not None else "."))
    page.table(("program", "recorded s", "reported", "verified", "saved s", "from", "tuning s", "saved ÷ tuning"),
               [(p.name, f"{p.recorded_s:,.2f}", _speedup(p.reported), _speedup(p.verified),
                 f"{p.saved_s:,.2f}", p.source, f"{p.tuning_s:,.0f}",
                 f"{p.saved_s / p.tuning_s:.3f}" if p.tuning_s else None) for p in savings.programs],
               numeric=(1, 2, 3, 4, 6, 7))
    if savings.tuning_s:
        page.figure(_saving_curve(savings), "Time saved over the recorded window against tuning time, "
                    "programs taken in order of saving per tuning second: where the curve flattens, more "
                    "tuning bought little.")


def _speedup(value: float | None) -> str | None:
    return None if value is None else f"{value:.3f}x"


def _saving_curve(savings: FleetSavings) -> Figure:
    tuned = sorted((p for p in savings.programs if p.tuning_s),
                   key=lambda p: -p.saved_s / p.tuning_s)
    figure = Figure(figsize=(6, 3.5))
    axes = figure.subplots()
    axes.plot(np.cumsum([0] + [p.tuning_s for p in tuned]), np.cumsum([0] + [p.saved_s for p in tuned]),
              marker="o")
    axes.set_xlabel("tuning time (s)")
    axes.set_ylabel("saved over the window (s)")
    axes.grid(alpha=0.3)
    return figure
