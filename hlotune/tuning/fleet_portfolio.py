"""The fleet's own portfolio: the configs a database's other programs chose, in the order that
keeps most of what they gained there, tried first on the next program (the warm start).

The shipped portfolio (portfolio.py) is chosen greedily from the built-in collection's programs;
a fleet has measured its own. Each other program that has a decision has records under some of
the winners (its own, and the ones warm-started on it), so a programs x winners matrix of log
speedups over the default is known where measured; where a program never measured a winner, it
counts as no gain, as a program that kept its default does. The same greedy choice as the
shipped portfolio's orders the winners by what they add to the mean best log speedup; those it
does not choose follow, newest first, as `Database.winners` lists them. Only the newest
PROGRAMS deciders are read, so a large shared database costs a bounded read.
"""

from __future__ import annotations

import math

import numpy as np

from hlotune.compiler.configs.config import CompileConfig
from hlotune.tuning.storage.base import Database, winners_among

PROGRAMS = 64


def fleet_portfolio(database: Database, fingerprint: str, size: int) -> list[CompileConfig]:
    """Up to `size` winners of the other programs here (their flags), the fleet's greedy order
    first."""
    from hlotune.tuning.portfolio import greedy

    decided = database.decided_elsewhere(fingerprint)
    winners = _flags_only(winners_among(decided))
    deciders = list(dict.fromkeys(program for program, _ in decided))[:PROGRAMS]
    if len(winners) <= 1 or not deciders:
        return winners[:size]
    gains = [_log_speedups(database, program) for program in deciders]
    matrix = np.array([[gain.get(winner.key, 0.0) for winner in winners] for gain in gains])
    chosen = greedy(matrix, size)
    rest = [winner for i, winner in enumerate(winners) if i not in chosen]
    return ([winners[i] for i in chosen] + rest)[:size]


def _flags_only(configs: list[CompileConfig]) -> list[CompileConfig]:
    """The configs' flags (a layout names another program's tensors), each once, in order."""
    seen: dict[str, CompileConfig] = {}
    for config in configs:
        flags = CompileConfig(flags=config.flags)
        seen.setdefault(flags.key, flags)
    return list(seen.values())


def _log_speedups(database: Database, fingerprint: str) -> dict[str, float]:
    """The program's best log speedup over its batch's default under each flags config measured."""
    best: dict[str, float] = {}
    for record in database.records(fingerprint):
        if record.ok:
            key = CompileConfig(flags=record.config.flags).key
            best[key] = max(best.get(key, -math.inf), -math.log(record.cost))
    return best
