"""The tuning report's "Where the time goes": XLA's default and the chosen config, kernel by kernel.

The database keeps runtimes, not profiles, so the report profiles the program as it is written:
the default and the chosen config in one batch on this machine (compiler/profiles/program_profile.py),
so the two tables compare like for like. The database knows a program by fingerprint and name;
the name is loaded again, so its fingerprint is checked first: a program that no longer loads,
or that now computes something else, gets a one-line note instead of a stranger's profile.
"""

from __future__ import annotations

from hlotune.compiler.configs.config import DEFAULT_CONFIG
from hlotune.compiler.profiles.program_profile import (
    ProgramProfile, headline, more_kernels, profile_configs, short_ops,
)
from hlotune.errors import HlotuneError
from hlotune.report.page import Page
from hlotune.tuning.storage import Decision

PROFILE_RUNS = 5  # profiled runs per profile round: a report is no benchmark
TOP_KERNELS = 20


def profile_section(page: Page, name: str, fingerprint: str, decision: Decision | None,
                    runs: int = PROFILE_RUNS) -> None:
    page.heading("Where the time goes", 3)
    chosen = decision is not None and not decision.kept_default
    configs = [DEFAULT_CONFIG, decision.chosen] if chosen else [DEFAULT_CONFIG]
    try:
        _check_same_program(name, fingerprint)
        profiles = profile_configs(name, configs, runs=runs)
    except HlotuneError as error:
        page.paragraph(f"No profile: {error}")
        return
    page.paragraph(
        "Each kernel's own time per run (kernels nested in a loop not counted twice), profiled "
        f"while writing this report: {runs} runs per profile round, after the batch's timed "
        "rounds, the median over rounds. ms a run comes from those timed rounds, not from the "
        "tune's, so it can differ from the figures above by the machine's drift."
        + ("" if chosen else " The default is the chosen config: one table."))
    for label, profile in zip(("XLA's default", "The chosen config"), profiles):
        page.paragraph(f"{label}: {headline(profile)}.")
        _kernel_table(page, profile)


def _check_same_program(name: str, fingerprint: str) -> None:
    from hlotune.programs import load_program
    from hlotune.tuning.fingerprint import program_fingerprint

    if program_fingerprint(load_program(name, abstract=True)) != fingerprint:
        raise HlotuneError(f"{name} no longer computes what was tuned (its fingerprint changed)")


def _kernel_table(page: Page, profile: ProgramProfile) -> None:
    rows = [(row.name, f"{row.ms:.4f}", f"{row.share:.1%}", row.calls, short_ops(row),
             "; ".join(row.sources)) for row in profile.kernels[:TOP_KERNELS]]
    if len(profile.kernels) > TOP_KERNELS:
        rows.append((more_kernels(profile, TOP_KERNELS), None, None, None, None, None))
    page.table(("kernel", "ms", "share", "calls", "HLO ops", "source lines"), rows, numeric=(1, 2, 3))
