"""Tuning benchmark: how soon each search finds the best config of programs the models never saw.

Two sources of measurements, one report:

- replay (the default): each program of the built-in dataset's valid and test families (never
  trained on; valid only chose the training epoch) is replayed (hlotune.tuning.replay). Its
  recorded configs are the pool, a run evaluates them in the order its cost model ranks them
  (Exhaustive with a cost model, re-ranked after every batch), the recorded samples answer, and
  the tuner decides as it does live. The oracle is the pool's fastest config. Nothing is
  compiled or timed, so the numbers are exact and repeatable on a busy machine; what replay
  cannot show is a generative search outside the recorded pool.
- live (--live PROGRAM ...): each program is tuned for real by each strategy and seed, all runs
  of a program sharing one database (a config one run measured is read, not re-measured, by the
  next; costs stay relative to their own batch's default). The oracle is the best config any run
  measured, confirmed in a last batch beside the default, or the best speedup a run's own
  final check confirmed, whichever is higher. Measure on a quiet machine.

Live runs also measure the winner's curse: each kept config is measured once more in a fresh
batch beside the default ("verified", a measurement no tune decision saw), and a second table
sets the best speedup the search found and the speedup the tune reported against it. Found
over verified is how much the search flatters its best; reported over verified is how much the
reported speedup does (about 1 once the final check reports from a batch measured after
choosing, tuning/final_check.py). Only the results' speedup, history and kept config are read,
so this file measures the gap of earlier tuners too.

Strategies: random; guided, ranked by the pretrained GNN (what `hlotune tune` ranks with);
guided+online, which also learns the program while it measures (tuning/online.py, the
default); transfer+online, the transfer model of tuning/transfer.py (fitted on --root's
training families' collections) as the prior; optuna and optuna-gp, Optuna's TPE and
Gaussian-process samplers (live only: they ask for configs outside a recorded pool);
kernels+online, the default search screening compiled candidates with the kernel program model
(tuning/kernel_screen.py; live only, as it compiles); guided+online-unstaged, the default
search without the "all" space's kernel stages (flags x layouts alone, as `all` was before
tuning/staged.py; it differs from guided+online only with --space all); bandit+online, the
bandit over the default search, TPE and random (tuning/bandit.py); guided+online+ucb, the
default with an optimistic online model (--optimism 1), and guided+online+ucb+cover, that with a
covering first generation. Replay adds the transfer model alone and summed with the GNN's
ranking. Live reports end with each strategy's kept and verified speedups over the default's,
paired by program, with a bootstrap interval over programs.

    python benchmarks/tune_bench.py [--seeds 3] [--out docs/img/tune_bench.json]
    python benchmarks/tune_bench.py --live zoo:vit@small corpus:hf-whisper@tiny --budget 64 --out live.json
    python benchmarks/tune_bench.py --live zoo:unet@small --strategies random guided+online --out live.json
    python benchmarks/tune_bench.py --live zoo:vit@tiny --budget 32 --time 20 --own-db --out time.json   # equal wall time
    python benchmarks/tune_bench.py --live zoo:vit@small --space all --budget 32 --own-db \
        --strategies guided+online guided+online-unstaged --out all.json    # what the kernel stages add
    python benchmarks/tune_bench.py --report docs/img/tune_bench.json     # re-print and plot
    python benchmarks/tune_bench.py --report live.json live-2.json        # several runs together

A live run resumes: the programs already in --out are kept and not measured again.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy.stats import gmean  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hlotune.compiler.config import DEFAULT_CONFIG  # noqa: E402
from hlotune.compiler.layouts import LayoutSpace  # noqa: E402
from hlotune.compiler.measure import MeasureSettings, measure  # noqa: E402
from hlotune.compiler.space import SearchSpace  # noqa: E402
from hlotune.data.builtin import ROOT  # noqa: E402
from hlotune.programs import load_program  # noqa: E402
from hlotune.tuning.callbacks import UpdateCostModel  # noqa: E402
from hlotune.tuning.cost_model import CostModel, RankSum, ScorerCostModel, load_scorers  # noqa: E402
from hlotune.tuning.database import TuningDatabase  # noqa: E402
from hlotune.tuning.online import OnlineCostModel  # noqa: E402
from hlotune.tuning.replay import ReplayRunner  # noqa: E402
from hlotune.tuning.strategies import Exhaustive, Trial  # noqa: E402
from hlotune.tuning.transfer import load_transfer  # noqa: E402
from hlotune.tuning.tuner import tune, Tuner  # noqa: E402

WITHIN = 0.02
VERIFY = MeasureSettings(rounds=20)  # the fresh batch a kept config's speedup is verified in
BUDGETS = (8, 16, 32, 64)
SPLITS = ("valid", "test")
Models = dict[str, CostModel]  # a program's pretrained GNN ranking ("gnn") and "transfer" model
REPLAYED: dict[str, Callable[[Models], CostModel | None]] = {
    "random": lambda m: None,
    "guided": lambda m: m["gnn"],
    "guided+online": lambda m: OnlineCostModel(m["gnn"]),
    "transfer": lambda m: m.get("transfer"),
    "transfer+online": lambda m: OnlineCostModel(m.get("transfer")),
    "guided+transfer+online": lambda m: OnlineCostModel(RankSum([m["gnn"], m["transfer"]])),
}
UNSTAGED = "guided+online-unstaged"
LIVE = {  # name -> tune() options ("transfer" is fitted on --root's flags training programs)
    "random": dict(strategy="random"),
    "guided": dict(strategy="evolutionary", online=False),
    "guided+online": dict(strategy="evolutionary", online=True),
    # the online model ranking optimistically: less a posterior standard deviation (LinUCB)
    "guided+online+ucb": dict(strategy="evolutionary", online=True, optimism=1.0),
    # ... and a covering first generation: every option value measured once (SearchSpace.covering)
    "guided+online+ucb+cover": dict(strategy="evolutionary", online=True, optimism=1.0,
                                    first_generation="covering"),
    # a bandit over the guided+online search, TPE and random (tuning/bandit.py)
    "bandit+online": dict(strategy="bandit", online=True),
    "transfer+online": dict(strategy="evolutionary", online=True, model="transfer"),
    "optuna": dict(strategy="optuna"),  # the peers a user would try first: TPE and GP
    "optuna-gp": dict(strategy="optuna-gp"),
    # the default search screening compiled candidates with the kernel program model
    "kernels+online": dict(strategy="evolutionary", online=True, model="pretrained:kernels"),
    # --space all without its kernel stages: flags x layouts alone (tuning/staged.py)
    UNSTAGED: dict(strategy="evolutionary", online=True, kernel_stages=False),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=0,
                        help="live: run seeds FIRST_SEED .. FIRST_SEED + SEEDS - 1 (to add a seed to a saved run)")
    parser.add_argument("--batch", type=int, default=4, help="configs per batch (replay)")
    parser.add_argument("--root", type=Path, default=ROOT,
                        help="the collections' folder: replayed, and the transfer model's training programs")
    parser.add_argument("--live", nargs="+", metavar="PROGRAM", help="measure these programs for real")
    parser.add_argument("--space", default="flags", help="the space tuned live (replay: each collection's)")
    parser.add_argument("--budget", type=int, default=64, help="configs per live run")
    parser.add_argument("--time", type=float, metavar="T",
                        help="live: also stop each run's search after T seconds (equal wall time)")
    parser.add_argument("--strategies", nargs="+", choices=list(LIVE), default=[s for s in LIVE if s != UNSTAGED],
                        help=f"the strategies run live (default: all but {UNSTAGED!r}, which differs "
                        "from guided+online in --space all only)")
    parser.add_argument("--own-db", action="store_true",
                        help="live: a database per run, none reading another's measurements or compiles")
    parser.add_argument("--out", type=Path, default=Path("docs/img/tune_bench.json"))
    parser.add_argument("--plot", type=Path, default=Path("docs/img/tune_bench.png"))
    parser.add_argument("--report", type=Path, nargs="+", metavar="JSON",
                        help="re-print and plot saved runs, measuring nothing; a program's runs in "
                        "several files are read against the best of their oracles")
    args = parser.parse_args()
    if args.report:
        rows = [r for path in args.report for r in json.loads(path.read_text())]
    else:
        rows = _finished(args.out) if args.live else []
        for program_rows in (live_rows(args, {r["program"] for r in rows}) if args.live else replay_rows(args)):
            rows += program_rows
            args.out.write_text(json.dumps(rows, indent=1))  # an interrupted run keeps what it finished
    rows = common_oracles(rows)
    print(markdown(rows) + curse(rows) + kept_shares(rows) + paired(rows))
    plot(rows, args.plot)


# Replay


def replay_rows(args):
    for collection in ("flags", "layout"):
        transfer = load_transfer(_transfer_spec(args.root), "flags") if collection == "flags" else None
        for split in SPLITS:
            for npz in sorted((args.root / collection / split).glob("*.npz")):
                yield replay_program(collection, npz, transfer, args.seeds, args.batch)


def replay_program(collection: str, npz: Path, transfer: CostModel | None, seeds: int, batch: int) -> list[dict]:
    replay = ReplayRunner.from_collection(npz)
    program = load_program(json.loads(npz.with_suffix(".json").read_text())["program"])
    pool = [config for config in replay.recorded if not config.is_default]
    default_ns = np.median(replay.recorded[DEFAULT_CONFIG])
    oracle = max(max(default_ns / np.median(replay.recorded[c]) for c in pool), 1.0)
    layouts = LayoutSpace(program)
    gnn = ScorerCostModel(load_scorers("pretrained", collection), layouts)
    models = {"gnn": PoolScores(pool, gnn.predict(pool))} | ({"transfer": transfer} if transfer else {})
    rows = []
    for strategy, make in REPLAYED.items():
        if "transfer" in strategy and transfer is None:
            continue  # layout choices name the program's own tensors: nothing to transfer
        for seed in range(seeds):
            order = pool[:]
            random.Random(seed).shuffle(order)  # ties, and the random baseline's order
            history, kept = replay_run(program, collection, layouts, replay, order, make(models), batch)
            rows.append(row(program.name, collection, strategy, seed, oracle, history, kept))
        print(f"{collection} {program.name}: {strategy} done", file=sys.stderr, flush=True)
    return rows


class PoolScores(CostModel):
    """A model's scores of the whole pool, computed once: the pretrained GNN does not learn
    here, and ranking what is left of the pool by them is ranking by the model (up to its
    cross-config attention, which saw the whole pool instead of what is left)."""

    def __init__(self, pool: list, scores: np.ndarray) -> None:
        self.scores = dict(zip(pool, scores))

    def predict(self, configs) -> np.ndarray:
        return np.array([self.scores[config] for config in configs])


def replay_run(program, collection, layouts, replay, order, model, batch) -> tuple[list[float], dict]:
    """The best speedup after each evaluated config (the default first), and the speedup the
    tuner's decision keeps at each budget (recorded medians)."""
    space = SearchSpace(collection, layouts, allow_numerics_change=True)
    trials, _ = _replay_tune(program, space, replay, Exhaustive(order, cost_model=model), model, len(order) + 1, batch)
    evaluated = [trial.config for trial in trials[1:]]
    kept = {b: _replay_tune(program, space, replay, Exhaustive(evaluated[: b - 1]), None, b, batch)[1] for b in BUDGETS}
    return [float(1 / c) for c in np.minimum.accumulate([t.cost for t in trials])], kept


def _replay_tune(program, space, replay, strategy, model, budget, batch) -> tuple[list[Trial], float]:
    callbacks = [UpdateCostModel(1)] if isinstance(model, OnlineCostModel) else []
    with tempfile.TemporaryDirectory() as folder, \
            TuningDatabase(Path(folder) / "db.sqlite", machine=replay.machine) as db:
        tuner = Tuner(program, space, strategy, replay, db, cost_model=model, callbacks=callbacks,
                      fingerprint="replay")
        decision = tuner.run(budget, batch=batch)
    return tuner.trials, float(decision.default_ns / np.median(replay.recorded[decision.chosen]))


# Live


def _finished(out: Path) -> list[dict]:
    """The rows of an earlier live run into `out`: hours of measuring resume program by program."""
    if not out.exists():
        return []
    rows = json.loads(out.read_text())
    if not all(r.get("live") for r in rows):
        sys.exit(f"tune_bench: error: {out} holds a replay run; give the live run its own --out")
    if rows:
        print(f"resuming {out}: {len({r['program'] for r in rows})} programs measured before", file=sys.stderr)
    return rows


def live_rows(args, finished: set[str]):
    """Each program's runs; with --own-db each run has a database of its own, so no run reads
    another's measurements or compiles (what equal wall time needs), else they share one."""
    with tempfile.TemporaryDirectory(prefix="hlotune-tune-bench-") as folder:
        for i, program in enumerate(p for p in args.live if p not in finished):
            dbs = {(name, seed): Path(folder) / (f"{i}-{name}-{seed}.sqlite" if args.own_db else f"{i}.sqlite")
                   for name in args.strategies for seed in range(args.first_seed, args.first_seed + args.seeds)}
            runs = {(name, seed): tune(program, space=args.space, budget=args.budget, time_s=args.time,
                                       db_path=db, seed=seed, progress=False, **_fitted_on(LIVE[name], args.root))
                    for (name, seed), db in dbs.items()}
            oracle = _confirmed_oracle(program, args.space, sorted(set(dbs.values())), next(iter(runs.values())).fingerprint)
            print(f"{program}: oracle {oracle:.3f}x", file=sys.stderr, flush=True)
            yield [row(program, args.space, name, seed, oracle, result.history, {args.budget: result.speedup})
                   | {"live": True, "seconds": result.seconds, "screened": result.screened,
                      "screen_s": result.screen_s, "measurements": result.measurements} | _verified(program, result)
                   for (name, seed), result in runs.items()]


def _verified(program: str, result) -> dict:
    """What the run reported and kept, and the kept config's speedup measured again in a fresh
    batch beside the default (1 for a kept default; None when it failed there)."""
    verified = 1.0
    if not result.kept_default:
        batch = measure(program, [result.best_config], VERIFY)
        (kept,) = batch.measurements
        verified = batch.default_ns / kept.median_ns if kept.ok else None
    return {"kept_default": result.kept_default, "reported": result.speedup, "verified": verified}


def _fitted_on(options: dict, root: Path) -> dict:
    return options | {"model": _transfer_spec(root)} if options.get("model") == "transfer" else options


def _transfer_spec(root: Path) -> str:
    """The transfer model fitted on `root`'s flags training programs."""
    return f"transfer@{root / 'flags' / 'train'}"


def _confirmed_oracle(program: str, space: str, dbs: list[Path], fingerprint: str) -> float:
    """The best config any run measured, re-measured beside the default (in a fresh database,
    so the earlier measurement is not read back); 1 when nothing beat the default."""
    records = []
    for db in dbs:
        with TuningDatabase(db) as database:
            records += [r for r in database.records(fingerprint) if r.ok]
    best = min(records, key=lambda r: r.cost)
    if best.config.is_default:
        return 1.0
    with tempfile.TemporaryDirectory() as folder:
        confirmed = tune(program, space=space, strategy=Exhaustive([best.config]), budget=2,
                         db_path=Path(folder) / "oracle.sqlite", progress=False, warm_start=0)
    return max(confirmed.candidate_speedup or 1.0, 1.0)


# Report


def row(program: str, space: str, strategy: str, seed: int, oracle: float, history: list[float],
        kept: dict[int, float]) -> dict:
    """One run: best-so-far speedups, and what the budgets and the 2% target read off them."""
    within = next((i + 1 for i, s in enumerate(history) if s * (1 + WITHIN) >= oracle), None)
    found = {b: history[min(b, len(history)) - 1] for b in BUDGETS}
    return {"program": program, "space": space, "strategy": strategy, "seed": seed,
            "oracle_speedup": oracle, "configs_to_within": within, "evaluated": len(history),
            "history": history, **{f"found_at_{b}": found[b] for b in BUDGETS},
            **{f"share_at_{b}": (found[b] - 1) / (oracle - 1) if oracle > 1 else 1.0 for b in BUDGETS},
            "kept": {str(b): s for b, s in kept.items()}}


def common_oracles(rows: list[dict]) -> list[dict]:
    """Each program's runs against one oracle: the best speedup confirmed beside the default,
    by an oracle check (runs of one program made at different times each had their own) or by
    a run's own final check. A single oracle check can miss: its one config, re-measured, may
    not repeat what the search saw, while a run kept another config beyond the noise."""
    oracle = {}
    for r in rows:
        oracle[r["program"]] = max(oracle.get(r["program"], 1.0), r["oracle_speedup"], *r["kept"].values())
    return [r | row(r["program"], r["space"], r["strategy"], r["seed"], oracle[r["program"]], r["history"],
                    {int(b): s for b, s in r["kept"].items()}) for r in rows]


def markdown(rows: list[dict]) -> str:
    """Per space and budget: medians over programs and seeds, and geomean speedups at the
    budget against random's."""
    lines = []
    for space, budget in sorted({(r["space"], _budget(r)) for r in rows}):
        mine = [r for r in rows if r["space"] == space and _budget(r) == budget]
        programs = sorted({r["program"] for r in mine})
        oracle = gmean([next(r["oracle_speedup"] for r in mine if r["program"] == p) for p in programs])
        found_at = f"found_at_{min(budget, max(BUDGETS))}"
        random_found = gmean([r[found_at] for r in mine if r["strategy"] == "random"])
        random_kept = gmean([r["kept"][str(budget)] for r in mine if r["strategy"] == "random"])
        lines += [f"\n{space}, budget {budget}: {len(programs)} programs, oracle geomean {oracle:.3f}x",
                  f"| strategy | configs to within {WITHIN:.0%} of the oracle (median) | share of the oracle's "
                  "gain at " + " / ".join(map(str, BUDGETS)) + f" (median) | found at {budget}, geomean (x random's) "
                  f"| kept at {budget}, geomean (x random's) | decisions slower than the default |",
                  "|---|---|---|---|---|---|"]
        for strategy in dict.fromkeys(r["strategy"] for r in mine):
            runs = [r for r in mine if r["strategy"] == strategy]
            reach = np.median([r["configs_to_within"] or r["evaluated"] + 1 for r in runs])
            shares = " / ".join(f"{np.median([r[f'share_at_{b}'] for r in runs]):.2f}" for b in BUDGETS)
            found = gmean([r[found_at] for r in runs])
            kept = gmean([r["kept"][str(budget)] for r in runs])
            slower = sum(r["kept"][str(budget)] < 1 for r in runs)
            lines.append(f"| {strategy} | {reach:.1f} | {shares} | {found:.3f}x ({found / random_found:.3f}) | "
                         f"{kept:.3f}x ({kept / random_kept:.3f}) | {slower} of {len(runs)} |")
    return "\n".join(lines)


def _budget(run: dict) -> int:
    """The budget a run's table reads its kept speedup at: 32, the issue's, where a replayed
    run has several; a live run's own."""
    budgets = {int(b) for b in run["kept"]}
    return 32 if 32 in budgets else max(budgets)


def curse(rows: list[dict]) -> str:
    """Live runs that kept a config, per strategy: geomeans of the best speedup the search
    found, the one the tune reported (kept) and the one a fresh batch verified, and their
    ratios (the winner's curse of each number)."""
    kept = [r for r in rows if "verified" in r and not r["kept_default"]]
    verified = [r for r in kept if r["verified"] is not None]
    if not kept:
        return ""
    lines = ["\n| strategy | runs that kept a config | found, geomean | reported (kept), geomean | "
             "verified, geomean | found / verified | reported / verified |", "|---|---|---|---|---|---|---|"]
    for strategy in dict.fromkeys(r["strategy"] for r in verified):
        runs = [r for r in verified if r["strategy"] == strategy]
        found = gmean([r["history"][-1] for r in runs])
        reported, again = gmean([r["reported"] for r in runs]), gmean([r["verified"] for r in runs])
        lines.append(f"| {strategy} | {len(runs)} | {found:.3f}x | {reported:.3f}x | {again:.3f}x | "
                     f"{found / again:.3f} | {reported / again:.3f} |")
    failed = len(kept) - len(verified)
    return "\n".join(lines) + (f"\n\n{failed} kept config(s) failed when verified" if failed else "") + costs(rows)


def kept_shares(rows: list[dict]) -> str:
    """Live runs, per budget and strategy: the share of the oracle's gain kept, reported and
    verified, on the median program with a gain (each program's median over its seeds; a kept
    default keeps 0)."""
    live = [r for r in rows if "verified" in r and r["oracle_speedup"] > 1]
    lines = []
    for budget in sorted({_budget(r) for r in live}):
        mine = [r for r in live if _budget(r) == budget]
        lines += [f"\n| strategy, budget {budget} | share of the oracle's gain kept, median of "
                  f"{len({r['program'] for r in mine})} programs with a gain | verified |", "|---|---|---|"]
        for strategy in dict.fromkeys(r["strategy"] for r in mine):
            runs = [r for r in mine if r["strategy"] == strategy]
            programs = {r["program"] for r in runs}
            reported, verified = ([_median_share(runs, program, key) for program in programs]
                                  for key in ("reported", "verified"))
            lines.append(f"| {strategy} | {np.median(reported):.2f} | {np.median(verified):.2f} |")
    return "\n".join(lines)


def _median_share(runs: list[dict], program: str, key: str) -> float:
    """The median, over `program`'s runs, of the share of its oracle's gain that `key` kept."""
    mine = [r for r in runs if r["program"] == program]
    return float(np.median([((r[key] or 1.0) - 1) / (r["oracle_speedup"] - 1) for r in mine]))


def paired(rows: list[dict], reference: str = "guided+online", resamples: int = 2000) -> str:
    """Live runs, per budget: each strategy's kept speedup over the default's on the same
    programs (each program's geomean over its seeds), geomean over programs, with a 90%
    bootstrap interval over programs (seed 0): whether a lead is more than which programs
    happened to be drawn. Verified speedups beside, a kept default counting 1."""
    live = [r for r in rows if "verified" in r]
    lines = []
    for budget in sorted({_budget(r) for r in live}):
        mine = [r for r in live if _budget(r) == budget]
        if not any(r["strategy"] == reference for r in mine):
            continue
        lines += [f"\n| strategy, budget {budget} | programs | kept over {reference}'s, geomean [90% interval] "
                  "| verified over its, geomean [90% interval] |", "|---|---|---|---|"]
        for strategy in dict.fromkeys(r["strategy"] for r in mine):
            if strategy == reference:
                continue
            cells = [_paired_ratio(mine, strategy, reference, key, budget, resamples) for key in ("kept", "verified")]
            lines.append(f"| {strategy} | {cells[0][0]} | {cells[0][1]} | {cells[1][1]} |")
    return "\n".join(lines)


def _paired_ratio(runs: list[dict], strategy: str, reference: str, key: str, budget: int,
                  resamples: int) -> tuple[int, str]:
    """Programs both strategies ran, and the geomean ratio of their speedups with its interval."""
    def speedups(name: str) -> dict[str, float]:
        by_program: dict[str, list[float]] = {}
        for r in runs:
            if r["strategy"] == name:
                value = r["kept"][str(budget)] if key == "kept" else (r["verified"] or 1.0)
                by_program.setdefault(r["program"], []).append(value)
        return {program: float(gmean(values)) for program, values in by_program.items()}

    mine, theirs = speedups(strategy), speedups(reference)
    logs = np.log([mine[p] / theirs[p] for p in sorted(set(mine) & set(theirs))])
    rng = np.random.default_rng(0)
    means = rng.choice(logs, (resamples, len(logs))).mean(axis=1)
    low, high = np.exp(np.percentile(means, [5, 95]))
    return len(logs), f"{np.exp(logs.mean()):.3f} [{low:.3f}, {high:.3f}]"


def costs(rows: list[dict]) -> str:
    """Live runs, per strategy: medians of configs measured, candidates compiled by a kernel
    screen, its compile seconds and the run's seconds (rows from before screening have none)."""
    live = [r for r in rows if "seconds" in r]
    if not live:
        return ""
    lines = ["\n| strategy | measured (median) | compiled to screen (median) | compile s (median) | "
             "run s (median) | geomean verified (all runs; kept default = 1) |", "|---|---|---|---|---|---|"]
    for strategy in dict.fromkeys(r["strategy"] for r in live):
        runs = [r for r in live if r["strategy"] == strategy]
        verified = gmean([r["verified"] or 1.0 for r in runs])
        lines.append(f"| {strategy} | {np.median([r.get('measurements', r['evaluated']) for r in runs]):.0f} | "
                     f"{np.median([r.get('screened', 0) for r in runs]):.0f} | "
                     f"{np.median([r.get('screen_s', 0.0) for r in runs]):.1f} | "
                     f"{np.median([r['seconds'] for r in runs]):.1f} | {verified:.3f}x |")
    return "\n" + "\n".join(lines)


def plot(rows: list[dict], path: Path) -> None:
    """Median share of the oracle's gain over programs after each config, per strategy: the line
    is the median over seeds, the band their range."""
    spaces = sorted({r["space"] for r in rows})
    fig, axes = plt.subplots(1, len(spaces), figsize=(6 * len(spaces), 4), squeeze=False)
    for ax, space in zip(axes[0], spaces):
        mine = [r for r in rows if r["space"] == space]
        for strategy in dict.fromkeys(r["strategy"] for r in mine):
            runs = [r for r in mine if r["strategy"] == strategy]
            length = min(len(r["history"]) for r in runs)
            seeds = sorted({r["seed"] for r in runs})
            curves = np.array([np.median([_share(r, length) for r in runs if r["seed"] == s], axis=0) for s in seeds])
            steps = np.arange(1, length + 1)
            ax.plot(steps, np.median(curves, axis=0), label=strategy)
            ax.fill_between(steps, curves.min(axis=0), curves.max(axis=0), alpha=0.2)
        ax.set(title=f"{space}: {len({r['program'] for r in mine})} held-out programs", xlabel="configs evaluated",
               ylabel="share of the oracle's gain (median program)", ylim=(-0.05, 1.05))
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def _share(row: dict, length: int) -> np.ndarray:
    history = np.array(row["history"][:length])
    gain = row["oracle_speedup"] - 1
    return (history - 1) / gain if gain > 0 else np.ones(length)


if __name__ == "__main__":
    main()
