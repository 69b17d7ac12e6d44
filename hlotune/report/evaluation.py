"""The evaluation report: what `hlotune eval --json` found, as one HTML page.

From the eval JSON alone: the averages, each graph's predicted scores against its measured
runtimes, the top-K error curves and the noise ceiling (how well any model could rank, from the
measurements' own repeatability). The first two need each graph's runtimes and scores, which
`hlotune eval --json --predictions` writes; without them the page shows the top-K errors at the
Ks the JSON holds and says what is missing.
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.figure import Figure

from hlotune.errors import HlotuneError
from hlotune.report.page import Page

MAX_SCATTERS = 36  # graphs drawn one by one; the table has them all
_KEYS = ("collection", "graphs", "kendall_tau", "opa", "top_k_error", "per_graph")
_COLUMNS = 4


def evaluation_report(result: dict, source: str) -> Page:
    _check(result, source)
    graphs = result["per_graph"]
    page = Page(f"hlotune evaluation report: {result['collection']}, {result['graphs']} graphs",
                f"from {source} (hlotune eval --json); runtimes are the dataset's measurements")
    _summary(page, result)
    predicted = all("scores" in g and "runtimes" in g for g in graphs)
    page.heading("Predicted against measured")
    if predicted:
        shown = graphs[:MAX_SCATTERS]
        more = f" The first {len(shown)} graphs; the table has all." if graphs[len(shown):] else ""
        page.figure(_scatters(shown),
                    "Each config of each graph: the model's score (lower = predicted faster) "
                    "against its measured runtime over the graph's fastest. A perfect ranking "
                    "rises from left to right." + more)
    else:
        page.paragraph("This JSON has no per-config predictions: run hlotune eval --json "
                       "--predictions for the scatter plots and the full top-K curves.")
    page.heading("Top-K error")
    page.figure(_top_k(graphs, result["top_k_error"], predicted),
                "The slowdown of the best of the K configs the model ranks fastest over the true "
                "best, per graph (thin) and averaged (thick): what a tuner that measures only the "
                "model's top K loses.")
    _noise_ceiling(page, result)
    _graph_table(page, graphs)
    return page


def _check(result: object, source: str) -> None:
    if not isinstance(result, dict) or any(key not in result for key in _KEYS):
        raise HlotuneError(f"{source}: not the JSON of hlotune eval --json (needs {', '.join(_KEYS)})")
    if not result["per_graph"]:
        raise HlotuneError(f"{source}: no graphs evaluated")


def _summary(page: Page, result: dict) -> None:
    ceiling = result.get("noise_ceiling_tau")
    rows = [("graphs", result["graphs"]),
            ("Kendall tau (mean over graphs)", f"{result['kendall_tau']:.3f}"),
            ("noise ceiling: Kendall tau of odd vs even samples",
             "not available (no samples kept)" if ceiling is None else f"{ceiling:.3f}"),
            ("ordered pair accuracy", f"{result['opa']:.3f}")]
    rows += [(f"top-{k} error", f"{v:.2%}") for k, v in result["top_k_error"].items()]
    page.table(("metric", "value"), rows, numeric=(1,))


def _scatters(graphs: list[dict]) -> Figure:
    rows = math.ceil(len(graphs) / _COLUMNS)
    figure = Figure(figsize=(10, 2.4 * rows + 0.3), layout="constrained")
    grid = figure.subplots(rows, _COLUMNS, squeeze=False).ravel()
    for axes, graph in zip(grid, graphs):
        runtimes = np.asarray(graph["runtimes"], dtype=np.float64)
        axes.scatter(graph["scores"], runtimes / runtimes.min(), s=6, alpha=0.6)
        axes.set_title(f"{graph['graph']}\ntau {graph['kendall_tau']:+.2f}", fontsize=8)
        axes.tick_params(labelsize=7)
    for axes in grid[len(graphs):]:
        axes.set_axis_off()
    figure.supxlabel("predicted score", fontsize=9)
    figure.supylabel("measured runtime / fastest", fontsize=9)
    return figure


def _top_k(graphs: list[dict], averaged: dict[str, float], predicted: bool) -> Figure:
    figure = Figure(figsize=(8, 3.6), layout="constrained")
    axes = figure.subplots()
    if predicted:
        curves = [_top_k_curve(g["runtimes"], g["scores"]) for g in graphs]
        longest = max(len(c) for c in curves)
        for curve in curves:
            axes.plot(np.arange(1, len(curve) + 1), 100 * curve, color="0.7", linewidth=0.8)
        # Past a graph's last config its error is 0: every config has been measured.
        padded = np.array([np.pad(c, (0, longest - len(c))) for c in curves])
        axes.plot(np.arange(1, longest + 1), 100 * padded.mean(axis=0), color="tab:blue",
                  linewidth=2, label="mean over graphs")
    else:
        for graph in graphs:
            ks = [int(k) for k in graph["top_k_error"]]
            axes.plot(ks, [100 * v for v in graph["top_k_error"].values()], "o-", color="0.7",
                      linewidth=0.8)
        axes.plot([int(k) for k in averaged], [100 * v for v in averaged.values()], "o-",
                  color="tab:blue", linewidth=2, label="mean over graphs")
    axes.set_xscale("log")
    axes.set(xlabel="K (configs measured, in the model's order)", ylabel="top-K error (%)")
    axes.legend(fontsize=8)
    return figure


def _top_k_curve(runtimes: list[float], scores: list[float]) -> np.ndarray:
    """Top-K error for every K (ties in score: the earlier config first, as metrics does)."""
    runtimes = np.asarray(runtimes, dtype=np.float64)
    order = np.argsort(np.asarray(scores, dtype=np.float64), kind="stable")
    return np.minimum.accumulate(runtimes[order]) / runtimes.min() - 1.0


def _noise_ceiling(page: Page, result: dict) -> None:
    page.heading("Noise ceiling")
    graphs = [g for g in result["per_graph"] if g.get("noise_ceiling_tau") is not None]
    if not graphs:
        page.paragraph("No graph kept its measurement samples, so the noise ceiling is unknown.")
        return
    figure = Figure(figsize=(8, 1.2 + 0.3 * len(graphs)), layout="constrained")
    axes = figure.subplots()
    y = np.arange(len(graphs))
    axes.barh(y - 0.2, [g["noise_ceiling_tau"] for g in graphs], height=0.4, color="0.7",
              label="noise ceiling (odd vs even samples)")
    axes.barh(y + 0.2, [g["kendall_tau"] for g in graphs], height=0.4, color="tab:blue",
              label="model")
    axes.set_yticks(y, [g["graph"] for g in graphs], fontsize=7)
    axes.invert_yaxis()
    axes.set_xlabel("Kendall tau against the measured runtimes")
    axes.legend(fontsize=8, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=2)
    page.figure(figure, "How well the measurements rank themselves: the Kendall tau between the "
                "medians of each config's odd and even samples. A model near its graph's ceiling "
                "ranks as well as the noise allows.")


def _graph_table(page: Page, graphs: list[dict]) -> None:
    page.heading("Per graph")
    ks = list(graphs[0]["top_k_error"])
    rows = [(g["graph"], g["configs"], f"{g['kendall_tau']:+.3f}",
             None if g.get("noise_ceiling_tau") is None else f"{g['noise_ceiling_tau']:+.3f}",
             f"{g['opa']:.3f}", *(f"{g['top_k_error'][k]:.2%}" for k in ks))
            for g in graphs]
    page.table(("graph", "configs", "Kendall tau", "noise ceiling", "OPA",
                *(f"top-{k}" for k in ks)), rows, numeric=tuple(range(1, 5 + len(ks))))
