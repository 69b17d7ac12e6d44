"""The tuning report: what the tuning database knows about each program, as one HTML page.

A section per program, from its records on this machine and compiler (every config measured,
with its samples) and the latest decision: the best-so-far speedup against configs evaluated
beside the noise floor, every config's runtime with its spread, which choices matter
(importance.py) and the chosen config against the default, with the ways to apply it; with
`profile_runs`, where the time of both goes, kernel by kernel (profile.py).
"""

from __future__ import annotations

import math
import numpy as np
from matplotlib.figure import Figure

from hlotune.report.importance import ChoiceEffect, choice_effects, choices
from hlotune.report.page import Page
from hlotune.report.profile import profile_section
from hlotune.tuning.storage import Decision, Record, TuningDatabase

TOP_CHOICES = 20  # in the importance figure and table
_DEFAULT, _CHOSEN, _OTHER = "tab:orange", "tab:green", "tab:blue"


def tuning_report(db: TuningDatabase, fingerprints: list[str], profile_runs: int = 0) -> Page:
    """The page; `profile_runs` > 0 profiles each program as it is written (0: no profile)."""
    machine = db.machine
    what = db.name_of(fingerprints[0]) if len(fingerprints) == 1 else f"{len(fingerprints)} programs"
    page = Page(
        f"hlotune tuning report: {what}",
        f"{db.location} on {machine.fingerprint[:12]} (jax {machine.jax}, jaxlib {machine.jaxlib}); "
        "every runtime here was measured on that machine",
    )
    for fingerprint in fingerprints:
        _program_section(page, db, fingerprint, profile_runs)
    return page


def _program_section(page: Page, db: TuningDatabase, fingerprint: str, profile_runs: int) -> None:
    name, records, decision = db.name_of(fingerprint), db.records(fingerprint), db.best(fingerprint)
    page.heading(f"{name} ({fingerprint[:12]})")
    noise = _noise(records, decision)
    failed = sum(not r.ok for r in records)
    page.paragraph(f"{len(records)} configs measured ({failed} failed); "
                   f"noise floor {noise:.1%}. " + _decision_text(decision))
    page.figure(_best_so_far(records, decision, noise),
                "Best speedup found so far over XLA's default, after each config evaluated (in "
                "the order measured, across every tune of the program here); dots are single "
                "configs. Inside the shaded noise band a gain is indistinguishable from the "
                "default; the dashed line is the chosen config's speedup, measured beside it "
                "after it was chosen.")
    healthy = sorted((r for r in records if r.ok), key=_cost)
    page.figure(_spread(healthy, decision),
                "Every healthy config's samples relative to the median of the default measured "
                "in the same batch, fastest first: the dot is the median, the thick bar the "
                "middle half of the samples, the thin bar all of them.")
    _records_table(page, records)
    _importance(page, records, noise)
    _chosen(page, db, fingerprint, decision)
    if profile_runs:
        profile_section(page, name, fingerprint, decision, profile_runs)


def _cost(record: Record) -> float:
    """As the tuner counts it: the default's is 1 by definition (its record's own median
    differs from its batch's reference by the noise)."""
    return 1.0 if record.config.is_default and record.ok else record.cost


def _noise(records: list[Record], decision: Decision | None) -> float:
    """The decision's noise floor, else the median of the batches'."""
    if decision is not None and decision.noise_floor is not None:
        return decision.noise_floor
    floors = [r.noise_floor for r in records if r.noise_floor is not None]
    return float(np.median(floors)) if floors else 0.0


def _decision_text(decision: Decision | None) -> str:
    if decision is None:
        return "No tune of this program has finished here: nothing chosen yet."
    if decision.kept_default:
        return (f"The latest tune ({decision.strategy}, {decision.space} space) kept XLA's "
                "default: its best candidate did not beat it beyond the noise when re-measured.")
    found = ("" if decision.found_speedup is None else
             f" (the search had measured {decision.found_speedup:.3f}x: the best of many noisy "
             "measurements flatters the winner)")
    return (f"The latest tune ({decision.strategy}, {decision.space} space) chose a config "
            f"{decision.speedup:.3f}x faster than XLA's default, measured beside it after it "
            f"was chosen{found}.")


def _best_so_far(records: list[Record], decision: Decision | None, noise: float) -> Figure:
    figure = Figure(figsize=(8, 3.6), layout="constrained")
    axes = figure.subplots()
    speedups = np.array([1 / _cost(r) if r.ok else np.nan for r in records])
    evaluated = np.arange(1, len(records) + 1)
    axes.axhspan(1 / (1 + noise), 1 + noise, color="0.85", label=f"noise floor ±{noise:.1%}")
    axes.scatter(evaluated, speedups, s=12, color="0.45", label="a config")
    best = np.fmax.accumulate(np.nan_to_num(speedups, nan=0.0))
    axes.step(evaluated, np.where(best > 0, best, np.nan), where="post", color=_OTHER,
              linewidth=2, label="best so far")
    if decision is not None and not decision.kept_default:
        axes.axhline(decision.speedup, color=_CHOSEN, linestyle="--",
                     label=f"chosen, measured after choosing: {decision.speedup:.3f}x")
    axes.set(xlabel="configs evaluated", ylabel="speedup over the default (x)")
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return figure


def _spread(healthy: list[Record], decision: Decision | None) -> Figure:
    figure = Figure(figsize=(8, 3.6), layout="constrained")
    axes = figure.subplots()
    chosen = None if decision is None else decision.chosen.key
    for x, record in enumerate(healthy):
        samples = np.asarray(record.samples, dtype=np.float64) / record.default_ns
        low, q1, median, q3, high = np.percentile(samples, [0, 25, 50, 75, 100])
        colour = (_DEFAULT if record.config.is_default
                  else _CHOSEN if record.config_key == chosen else _OTHER)
        axes.vlines(x, low, high, color=colour, linewidth=0.8)
        axes.vlines(x, q1, q3, color=colour, linewidth=3)
        axes.plot(x, median, "o", color=colour, markersize=3)
    kept = decision is None or decision.kept_default
    for colour, label in ((_DEFAULT, "XLA's default"), (_CHOSEN, "chosen"), (_OTHER, "other")):
        if not (kept and label == "chosen"):
            axes.plot([], [], "o", color=colour, label=label)
    axes.axhline(1.0, color="0.6", linewidth=0.8)
    axes.set_yscale("log")  # a shared machine's stragglers reach many times the median
    axes.set(xlabel="configs, fastest median first",
             ylabel="runtime / default's median\n(same batch)")
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return figure


def _records_table(page: Page, records: list[Record]) -> None:
    page.heading("Every measured config", 3)
    rows = []
    for rank, record in enumerate(sorted(records, key=_cost), 1):
        samples = np.asarray(record.samples, dtype=np.float64)
        ok = record.ok and len(samples) > 0
        q1, q3 = np.percentile(samples, [25, 75]) if ok else (math.nan, math.nan)
        rows.append((
            rank,
            f"{1 / _cost(record):.3f}x" if record.ok else None,
            f"{record.median_ns / 1e6:.4f}" if ok else None,
            f"{(q3 - q1) / record.median_ns:.1%}" if ok else None,
            len(samples),
            record.status + (f": {record.reason}" if record.reason else ""),
            ", ".join(choices(record.config)) or "XLA's default",
        ))
    page.table(("#", "speedup", "median ms", "IQR / median", "samples", "status", "config"),
               rows, numeric=(0, 1, 2, 3, 4))


def _importance(page: Page, records: list[Record], noise: float) -> None:
    page.heading("Which choices matter", 3)
    effects = choice_effects(records)
    if not any(e.effect is not None for e in effects):
        page.paragraph("Too few healthy configs to estimate any choice's effect.")
        return
    page.paragraph(
        "Each choice's effect is the runtime change it goes with when the other choices are held "
        "fixed: a ridge regression of log(runtime / default) on which choices each healthy "
        "config makes (hlotune.report.importance says why this estimator). Effects within the "
        f"noise floor ({noise:.1%}) are not told apart from none; these are associations among "
        "the configs measured, not controlled experiments.")
    top = [e for e in effects if e.effect is not None][:TOP_CHOICES]
    page.figure(_effects_figure(top, noise),
                f"The {len(top)} largest effects (negative: faster); the shaded band is the noise "
                "floor; n is how many healthy configs made the choice.")
    page.table(("choice", "effect on runtime", "configs with it", "failed with it"),
               [(e.choice, None if e.effect is None else f"{e.effect:+.1%}", e.configs, e.failed)
                for e in effects[:TOP_CHOICES]] + _failed_only(effects[TOP_CHOICES:]),
               numeric=(1, 2, 3))


def _failed_only(rest: list[ChoiceEffect]) -> list[tuple]:
    """Choices past the top that only ever failed: worth listing, they are to be avoided."""
    return [(e.choice, None, e.configs, e.failed) for e in rest if e.effect is None]


def _effects_figure(effects: list[ChoiceEffect], noise: float) -> Figure:
    figure = Figure(figsize=(8, 1.2 + 0.28 * len(effects)), layout="constrained")
    axes = figure.subplots()
    values = [100 * e.effect for e in effects]
    axes.axvspan(-100 * noise, 100 * noise, color="0.85")
    axes.barh(range(len(effects)), values,
              color=[_CHOSEN if v < 0 else "tab:red" for v in values])
    axes.set_yticks(range(len(effects)),
                    [f"{e.choice} (n={e.configs})" for e in effects], fontsize=7)
    axes.invert_yaxis()
    axes.axvline(0, color="0.3", linewidth=0.8)
    axes.set_xlabel("estimated effect on runtime (%)")
    return figure


def _chosen(page: Page, db: TuningDatabase, fingerprint: str, decision: Decision | None) -> None:
    page.heading("The chosen config and how to apply it", 3)
    if decision is None:
        page.paragraph("Run hlotune tune on the program to choose one.")
        return
    chosen_ns = decision.default_ns if decision.kept_default else decision.candidate_ns
    page.table(("", "XLA's default", "chosen"), [
        ("runtime, re-measured together (ms)", f"{decision.default_ns / 1e6:.4f}",
         f"{chosen_ns / 1e6:.4f}"),
        ("speedup", "1.000x", f"{decision.speedup:.3f}x"),
        ("settings", "XLA's own", ", ".join(choices(decision.chosen)) or "XLA's own (kept)"),
        ("numerics", "XLA's own", "changed by design (searched with --allow-numerics-change)"
         if decision.chosen.flags.changes_numerics else "preserved"),
    ])
    if decision.kept_default and not decision.candidate.is_default:
        measured = ("failed when re-measured" if decision.candidate_ns is None else
                    f"measured {decision.default_ns / decision.candidate_ns:.3f}x when re-measured")
        page.paragraph(f"The best candidate ({', '.join(choices(decision.candidate))}) {measured}, "
                       "not beyond the noise floor: hlotune keeps the default.")
    short, where = fingerprint[:12], f" --db {db.location}"
    page.paragraph("From the command line (only the JSON export keeps layouts):")
    page.code("\n".join(f"hlotune db export {short} --format {fmt}{where}"
                         for fmt in ("json", "compiler_options", "xla_flags")))
    flags = db.export(fingerprint, "xla_flags")
    page.paragraph("As the XLA_FLAGS environment variable of a process that runs the program"
                   + (f" (note: {flags.note})" if flags.note else "") + ":")
    page.code(f'XLA_FLAGS="{flags.text}" python my_program.py' if flags.text
              else "nothing to set: the chosen flags are XLA's defaults")
    page.paragraph("In Python: result.compiled() after hlotune.tune(...), or from the export:")
    page.code(
        f"# hlotune db export {short} --format json{where} > tuned.json\n"
        "import json, hlotune\n"
        "from hlotune.compiler.configs.config import CompileConfig\n"
        "from hlotune.tuning.compiled import compile_program\n"
        'tuned = json.load(open("tuned.json"))\n'
        'fast = compile_program(hlotune.load_program(tuned["program"]), '
        'CompileConfig.from_dict(tuned["config"]))'
    )
