"""A portfolio of flag configs to try first on a new program (Auto-sklearn 2.0's greedy portfolio).

On one machine many XLA options help or hurt most programs alike, so a few configs that won on
other programs keep most of what a search of many would find. The built-in dataset measured its
flags programs under the same configs (drawn with seed 0), so a program x config matrix of log
speedups over the default is known; the portfolio is built greedily from it, each config the
one that most raises the mean over programs of the best log speedup so far, floored at the
default (a program keeps its default when nothing beats it). Leave-one-family-out, it is
scored by the share of each held-out program's best gain among all shared configs that its
first k configs keep, beside k shared configs drawn at random. On edition 2's 103 training
programs (31 families, 48 shared configs) 4 configs keep a median 0.80 of it (random: 0.31)
and 7 keep all of it (8 random: 0.48); fitted and scored on the same programs, 4 kept 0.93,
which flatters. The first one or two keep less than random ones on the median program (0.05
and 0.14 against 0.09 and 0.17): what the greedy choice raises is the mean log speedup, not
the median share.

`hlotune rebuild portfolio` rebuilds the shipped file (portfolios/flags.json) from
builtin:flags/train and prints that evaluation; `first_generation="portfolio"` asks its
configs first (strategies/registry.py).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hlotune.atomic import write_bytes_atomic
from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.spaces.space import SearchSpace
from hlotune.data.builtin import resolve
from hlotune.errors import HlotuneError
from hlotune.spellings import moved, python_m
from hlotune.tuning.models.transfer import collection_examples

SOURCE = "builtin:flags/train"
SHIPPED = Path(__file__).resolve().parent / "portfolios" / "flags.json"
SIZE = 8  # configs in the shipped portfolio: one first generation of the evolutionary search
DRAWS = 200  # random portfolios the greedy one is compared with
REBUILD = "hlotune rebuild portfolio"
# The file's two portfolios: of every shared config, and of the numerics-preserving ones.
LISTS = ("configs", "numerics_preserving")


@dataclass(frozen=True)
class Gains:
    """Each program's log speedup over its default under each config every program was
    measured with (-inf where the config failed on that program: no gain there)."""

    programs: tuple[str, ...]  # program specs, e.g. zoo:cnn@small
    configs: tuple[CompileConfig, ...]
    log_speedups: np.ndarray  # programs x configs

    @property
    def families(self) -> np.ndarray:
        """Each program's family: its spec before `@`."""
        return np.array([program.partition("@")[0] for program in self.programs])

    def preserving(self) -> Gains:
        """The numerics-preserving configs alone: what a tune that does not allow the others
        can ask."""
        columns = [i for i, config in enumerate(self.configs) if config.numerics == "preserving"]
        return Gains(self.programs, tuple(self.configs[i] for i in columns), self.log_speedups[:, columns])


def shared_gains(source: str | Path = SOURCE) -> Gains:
    """The collected programs under `source` (NAME.npz beside NAME.json) and the configs drawn
    for every one of them, in the first program's drawing order."""
    folder = resolve(source)
    files = sorted(npz for npz in folder.glob("*.npz") if npz.with_suffix(".json").is_file())
    if not files:
        raise HlotuneError(f"{folder}: no collected programs (NAME.npz beside NAME.json)")
    programs, drawn, healthy = [], [], []
    for npz in files:
        healthy.append({config: -math.log(cost) for config, cost in collection_examples([npz])})
        summary = json.loads(npz.with_suffix(".json").read_text())  # read (and checked) just now
        programs.append(summary["program"])
        drawn.append([CompileConfig.from_dict(record["config"]) for record in summary["configs"]])
    shared = [config for config in drawn[0] if all(config in configs for configs in drawn[1:])]
    if not shared:
        raise HlotuneError(f"{folder}: no config was drawn for every program")
    matrix = np.array([[gains.get(config, -np.inf) for config in shared] for gains in healthy])
    return Gains(tuple(programs), tuple(shared), matrix)


def kept(log_speedups: np.ndarray, columns: Sequence[int]) -> np.ndarray:
    """Each program's best log speedup among `columns`, floored at 0 (it keeps its default)."""
    return np.max(log_speedups[:, list(columns)], axis=1, initial=0.0)


def greedy(log_speedups: np.ndarray, size: int) -> list[int]:
    """Up to `size` columns, each the one that most raises the mean over programs of `kept`;
    fewer when no column raises it any more."""
    best, chosen = np.zeros(len(log_speedups)), []
    for _ in range(size):
        means = np.maximum(log_speedups, best[:, None]).mean(axis=0)
        column = int(np.argmax(means))
        if means[column] <= best.mean():
            break
        chosen.append(column)
        best = np.maximum(best, log_speedups[:, column])
    return chosen


@dataclass(frozen=True)
class HeldOutShares:
    """Leave-one-family-out, for k = 1..size: the median over held-out programs with a gain of
    the share of their best log gain among all shared configs that k configs keep: the first k
    of the greedy portfolio fitted without their family, and k shared configs drawn at random
    (each program's mean share over `draws` draws)."""

    greedy: tuple[float, ...]
    random: tuple[float, ...]
    programs: int  # held-out programs with a gain, each held out once
    families: int
    draws: int
    seed: int

    def table(self) -> str:
        title = (f"leave-one-family-out over {self.families} families, {self.programs} held-out programs "
                 "with a gain: median share of the best-of-shared log gain kept")
        lines = [title, f"{'k':>3}  {'greedy':>7}  {'random':>7}"]
        lines += [f"{k:>3}  {g:>7.2f}  {r:>7.2f}" for k, (g, r) in enumerate(zip(self.greedy, self.random), 1)]
        return "\n".join(lines)


def leave_one_family_out(gains: Gains, size: int = SIZE, draws: int = DRAWS, seed: int = 0) -> HeldOutShares:
    """The HeldOutShares of portfolios of up to `size` configs."""
    matrix, families = gains.log_speedups, gains.families
    held = np.zeros((len(matrix), size))
    for family in np.unique(families):
        out = families == family
        held[out] = _by_k(matrix[out], greedy(matrix[~out], size), size)
    rng = np.random.default_rng(seed)
    drawn = np.mean([_by_k(matrix, rng.permutation(matrix.shape[1]), size) for _ in range(draws)], axis=0)
    best = kept(matrix, range(matrix.shape[1]))
    return HeldOutShares(_median_shares(held, best), _median_shares(drawn, best), int((best > 0).sum()),
                      len(np.unique(families)), draws, seed)


def _by_k(log_speedups: np.ndarray, order: Sequence[int], size: int) -> np.ndarray:
    """Programs x k: what the first k = 1..size configs of `order` keep of each program."""
    return np.stack([kept(log_speedups, order[:k]) for k in range(1, size + 1)], axis=1)


def _median_shares(kept_by_k: np.ndarray, best: np.ndarray) -> tuple[float, ...]:
    """Per k, the median over programs with a gain of the share of their `best` gain kept."""
    gained = best > 0
    return tuple(np.median(kept_by_k[gained] / best[gained, None], axis=0).round(3).tolist())


@dataclass(frozen=True)
class Portfolio:
    """Configs to try first, in order: built from every shared config, and from the
    numerics-preserving ones alone (for tunes that do not allow the others: the first of every
    config's portfolio changes numerics, and skipping it cost held-out programs most of what
    the next few configs kept); and where they came from."""

    configs: tuple[CompileConfig, ...]
    preserving: tuple[CompileConfig, ...]
    provenance: Mapping[str, Any]

    def within(self, space: SearchSpace) -> list[CompileConfig]:
        """The configs for `space`'s numerics that it can express, in order: not one that sets
        an option the space lacks (flags in a layout or kernel space)."""
        usable = []
        for config in self.configs if space.allow_numerics_change else self.preserving:
            try:
                usable.append(space.config(space.genome(config)))
            except HlotuneError:
                continue
        return usable


def load_portfolio(path: str | Path = SHIPPED) -> Portfolio:
    """A portfolio file as `build` writes it."""
    try:
        values = json.loads(Path(path).read_text())
        configs, preserving = ([CompileConfig.from_dict(c) for c in values[name]] for name in LISTS)
        return Portfolio(tuple(configs), tuple(preserving), values["provenance"])
    except OSError as error:
        raise HlotuneError(f"{path}: cannot read the portfolio ({error.strerror})") from None
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise HlotuneError(f"{path}: not a portfolio file ({type(error).__name__}: {error})") from None


def build(source: str = SOURCE, size: int = SIZE, draws: int = DRAWS, seed: int = 0,
          path: str | Path = SHIPPED) -> dict[str, HeldOutShares]:
    """Write the greedy portfolios of `size` configs (of every shared config, and of the
    numerics-preserving ones) of the programs under `source` to `path`, with their provenance
    and leave-one-family-out evaluations, which it returns."""
    if size < 1 or draws < 1:
        raise HlotuneError(f"size and draws must be at least 1, got {size} and {draws}")
    gains = shared_gains(source)
    views = dict(zip(LISTS, (gains, gains.preserving())))
    orders = {name: greedy(view.log_speedups, size) for name, view in views.items()}
    evaluations = {name: leave_one_family_out(view, size, draws, seed) for name, view in views.items()}
    provenance = {
        "source": str(source), "programs": len(gains.programs), "families": len(np.unique(gains.families)),
        "shared_configs": {name: len(view.configs) for name, view in views.items()},
        "k": {name: len(order) for name, order in orders.items()},
        "objective": "mean over programs of log(best-of-portfolio speedup over the default, floored at 1)",
        "train_mean_log_speedup": {name: [round(float(kept(views[name].log_speedups, order[:k]).mean()), 4)
                                          for k in range(1, len(order) + 1)] for name, order in orders.items()},
        "leave_one_family_out": {name: asdict(evaluation) for name, evaluation in evaluations.items()},
        "rebuild": f"{REBUILD} --source {source} --size {size} --draws {draws} --seed {seed}",
    }
    lists = {name: [views[name].configs[i].to_dict() for i in order] for name, order in orders.items()}
    write_bytes_atomic(Path(path), (json.dumps(lists | {"provenance": provenance}, indent=1) + "\n").encode())
    return evaluations


def main(argv: list[str]) -> int:
    """`hlotune rebuild portfolio ARGS`; ARGS may begin with `build`, its old spelling's word."""
    if argv[:1] == ["build"]:
        moved("hlotune rebuild portfolio build", REBUILD)
        argv = argv[1:]
    parser = argparse.ArgumentParser(prog=REBUILD, description="rebuild the portfolio file and print its evaluation")
    parser.add_argument("--source", default=SOURCE, help=f"collected programs (default {SOURCE})")
    parser.add_argument("--size", type=int, default=SIZE, help=f"configs in a portfolio (default {SIZE})")
    parser.add_argument("--draws", type=int, default=DRAWS, help=f"random portfolios compared (default {DRAWS})")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=SHIPPED, help="the file to write (default: the shipped one)")
    args = parser.parse_args(argv)
    try:
        evaluations = build(args.source, args.size, args.draws, args.seed, args.output)
    except HlotuneError as error:
        print(f"hlotune: error: {error}", file=sys.stderr)
        return 1
    print(f"{args.output}: rebuilt from {args.source}")
    for name, evaluation in evaluations.items():
        print(f"\n{name}: {evaluation.table()}")
    return 0


if __name__ == "__main__":  # the old spelling, `python -m hlotune.tuning.portfolio build ARGS`: its
    # `build` gets main's note in turn
    python_m("hlotune.tuning.portfolio", ["rebuild", "portfolio"])
