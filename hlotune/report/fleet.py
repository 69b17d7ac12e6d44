"""The fleet section of a tuning report: what `hlotune fleet tune` saves, per program and in
total, from the speedups verified beside jax.jit (fleet/savings.py)."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from hlotune.fleet.savings import FleetSavings
from hlotune.report.page import Page


def fleet_section(page: Page, savings: FleetSavings) -> None:
    page.heading("The fleet: what tuning saves where the programs run")
    ratio = savings.saving_over_cost
    page.paragraph(
        f"{len(savings.programs)} recorded programs run {savings.seconds_per_day:,.0f} s a day at the "
        f"recorded rate; their verified decisions save {savings.saved_per_day:,.1f} s a day, for "
        f"{savings.tuning_s:,.0f} s of tuning"
        + (f": a day's saving is {ratio:.2f}x the tuning time." if ratio is not None else "."))
    page.table(("program", "recorded s/day", "reported", "verified", "saved s/day", "tuning s", "saved/day ÷ tuning"),
               [(p.name, f"{p.seconds_per_day:,.1f}", _speedup(p.reported), _speedup(p.verified),
                 f"{p.saved_per_day:,.2f}", f"{p.tuning_s:,.0f}",
                 f"{p.saved_per_day / p.tuning_s:.2f}" if p.tuning_s else None) for p in savings.programs],
               numeric=range(1, 7))
    if savings.tuning_s:
        page.figure(_saving_curve(savings), "Saving a day against tuning time, programs taken in order of "
                    "saving per tuning second: where the curve flattens, more tuning bought little.")


def _speedup(value: float | None) -> str | None:
    return None if value is None else f"{value:.3f}x"


def _saving_curve(savings: FleetSavings) -> Figure:
    tuned = sorted((p for p in savings.programs if p.tuning_s),
                   key=lambda p: -p.saved_per_day / p.tuning_s)
    figure = Figure(figsize=(6, 3.5))
    axes = figure.subplots()
    axes.plot(np.cumsum([0] + [p.tuning_s for p in tuned]), np.cumsum([0] + [p.saved_per_day for p in tuned]),
              marker="o")
    axes.set_xlabel("tuning time (s)")
    axes.set_ylabel("saved a day (s)")
    axes.grid(alpha=0.3)
    return figure
