"""Tuning benchmark (Tuner v4): which search the tuner should run by default.

Two sources of measurements, one report:

- replay (the default): each program of the built-in dataset's valid and test families (never
  trained on; valid only chose the training epoch) is replayed (hlotune.tuning.runners.replay). Its
  recorded configs are the pool, a run evaluates them in the order its cost model ranks them
  (Exhaustive with a cost model, re-ranked after every batch), the recorded samples answer, and
  the tuner decides as it does live. The oracle is the pool's fastest config. Nothing is
  compiled or timed, so the numbers are exact and repeatable on a busy machine; what replay
  cannot show is a generative search outside the recorded pool.
- live (--live PROGRAM|SET ...): each program is tuned for real by each strategy, seed and
  budget. `--live v4` is the named set PROGRAM_SETS["v4"]: programs of real size (each at least
  2 ms a run on a 2-core machine), the twelve of version 3 at @small and seven numerical
  programs no model trained on. Each run has a database of its own (--shared-db: one per
  program, as version 3 had), so no run reads another's measurements or compiles: strategies,
  seeds and budgets are independent samples, and a budget-8 run is not the first part of a
  budget-32 one. The oracle, one per program, is the best config any of its runs measured,
  confirmed in a last batch beside the default, or the best speedup a run's own final check
  confirmed, whichever is higher. Measure on a quiet machine.

Live runs also measure the winner's curse: each kept config is measured once more in a fresh
batch beside the default ("verified", a measurement no tune decision saw), and a table sets the
best speedup the search found and the speedup the tune reported against it. When a run kept the
default although its final check had a leader (TuneResult.candidate: raced and not kept, or the
search's favourite stopped at the gate), the leader is recorded ("dropped"); --verify-dropped
measures each dropped leader once more in a fresh batch beside the default, which tells a
leader rightly dropped (luck) from a real gain the check threw away.

Strategies are recipes of TuneOptions (LIVE). Version 4's (V4, the default --strategies):
random; optuna (TPE); default, TuneOptions() as it stands (since v4 the evolutionary search
asking the shipped portfolio's configs first, tuning/portfolio.py, then ranked by the pretrained
model and the program's online model); guided+online, the same search from a random first
generation (the default before v4); optuna+portfolio, TPE asking the portfolio first. A recipe
TuneOptions does not accept is skipped, saying so. The older strategies of versions 1-3 stay
runnable by name. The live report, per space and budget: each strategy's geomean kept, verified
and found speedups, its median share of the oracle's log gain kept and verified, its kept
configs that verify slower than the default, its dropped leaders; then every pair of strategies'
kept and verified ratios, paired by program and seed, with a 90% bootstrap interval over
programs (the default first: "default against the better of random and TPE" is two rows); the
best kept of all strategies on each program and seed, picked in hindsight, over each; the
winner's curse; the dropped leaders measured again, and how much of what they were found at was
luck.

    python benchmarks/tune_bench.py [--seeds 3] [--out docs/img/tune_bench.json]
    python benchmarks/tune_bench.py --live v4 --budget 8 32 --seeds 3 --out v4.json   # Tuner v4
    python benchmarks/tune_bench.py --live v4 --budget 8 32 --seeds 3 --out v4.json   # resumes it
    python benchmarks/tune_bench.py --verify-dropped --out v4.json    # re-measure dropped leaders
    python benchmarks/tune_bench.py --live zoo:unet@small --strategies random default --out live.json
    python benchmarks/tune_bench.py --live zoo:vit@tiny --budget 32 --time 20 --out time.json   # equal wall time
    python benchmarks/tune_bench.py --live zoo:vit@small --space all --budget 32 \
        --strategies guided+online guided+online-unstaged --out all.json    # what the kernel stages add
    python benchmarks/tune_bench.py --report docs/img/tune_bench.json --plot docs/img/tune_bench.png
    python benchmarks/tune_bench.py --report live.json live-2.json        # several runs together

A live run resumes run by run: each (program, space, strategy, seed, budget) is saved to --out
(an atomic write) as soon as it finishes, and a restart runs only those not there. Databases
stay in --db-dir for the oracle check; a run that was cut off starts again from an empty one.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from statistics import geometric_mean

import numpy as np

import harness
from hlotune.compiler.configs.config import DEFAULT_CONFIG, CompileConfig
from hlotune.compiler.configs.layouts import LayoutSpace
from hlotune.compiler.measurement.measure import MeasureSettings, measure
from hlotune.compiler.spaces.space import SearchSpace
from hlotune.data.builtin import ROOT
from hlotune.errors import HlotuneError
from hlotune.programs import load_program
from hlotune.tuning.callbacks import UpdateCostModel
from hlotune.tuning.loop import Tuner
from hlotune.tuning.models.base import CostModel
from hlotune.tuning.models.online import OnlineCostModel
from hlotune.tuning.models.rank_sum import RankSum
from hlotune.tuning.models.scorer import ScorerCostModel, shipped_scorers
from hlotune.tuning.models.transfer import load_transfer
from hlotune.tuning.options import TuneOptions
from hlotune.tuning.runners.replay import ReplayRunner
from hlotune.tuning.storage import TuningDatabase
from hlotune.tuning.strategies.base import Trial
from hlotune.tuning.strategies.exhaustive import Exhaustive
from hlotune.tuning.tuner import tune

WITHIN = 0.02
VERIFY = MeasureSettings(rounds=20)  # the fresh batch a kept config's speedup is verified in
SLOWER = 0.99  # a kept config verifying below this is slower than the default
REAL_GAIN = 1.02  # a dropped leader verifying above this was a real gain thrown away
BOOTSTRAP_SEED, RESAMPLES = 0, 2000  # the paired ratios' bootstrap over programs
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
NUMERICS = ("heat", "nbody", "spectral", "cg", "montecarlo", "kalman", "sor")
PROGRAM_SETS = {  # --live NAME: each program at least 2 ms a run on the 2-core machine
    "v4": (  # version 3's twelve (@tiny there), and numerical programs held out of training
        "zoo:vit@small", "zoo:unet@small", "zoo:mobilenet@small", "zoo:gnn@small",
        "corpus:jaxmd-lj@small", "corpus:hf-whisper@small", "corpus:hf-dinov2@small",
        "corpus:hf-mistral@small", "corpus:hf-vit@small", "corpus:hf-electra@small",
        "corpus:hf-regnet@small", "corpus:haiku-mobilenet@small",
        *(f"numerics:{name}@small" for name in NUMERICS),
    ),
}
DEFAULT = "default"
UNSTAGED = "guided+online-unstaged"
LIVE = {  # name -> TuneOptions keywords ("transfer" is fitted on --root's flags training programs)
    "random": dict(strategy="random"),
    "optuna": dict(strategy="optuna"),  # the peers a user would try first: TPE and GP
    DEFAULT: {},  # TuneOptions() as it stands, whatever that is when run (rows record it)
    "optuna+portfolio": dict(strategy="optuna", first_generation="portfolio"),
    # the default with a quarter of each batch after the portfolio drawn from the whole space
    "default+immigrants": dict(immigrants=0.25),
    # the default without the pretrained prior: the portfolio, then children ranked by the
    # program's online model alone (does the prior earn its place in the default?)
    "portfolio+online": dict(model=None),
    "optuna-gp": dict(strategy="optuna-gp"),
    "guided": dict(strategy="evolutionary", online=False, first_generation="random"),
    "guided+online": dict(strategy="evolutionary", online=True, first_generation="random"),  # the default before v4
    # the online model ranking optimistically: less a posterior standard deviation (LinUCB)
    "guided+online+ucb": dict(strategy="evolutionary", online=True, optimism=1.0, first_generation="random"),
    # ... and a covering first generation: every option value measured once (SearchSpace.covering)
    "guided+online+ucb+cover": dict(strategy="evolutionary", online=True, optimism=1.0,
                                    first_generation="covering"),
    # a bandit over the guided+online search, TPE and random (tuning/strategies/bandit.py)
    "bandit+online": dict(strategy="bandit", online=True),
    "transfer+online": dict(strategy="evolutionary", online=True, model="transfer", first_generation="random"),
    # the default search screening compiled candidates with the kernel program model
    "kernels+online": dict(strategy="evolutionary", online=True, model="pretrained:kernels"),
    # --space all without its kernel stages: flags x layouts alone (tuning/strategies/staged.py)
    UNSTAGED: dict(strategy="evolutionary", online=True, kernel_stages=False),
}
V4 = ("random", "optuna", DEFAULT, "guided+online", "optuna+portfolio")
LUCK_FLOOR = 1.05  # dropped leaders found below this (geomean) have no luck share shown
HINDSIGHT = "best of all, in hindsight"  # per program and seed, the strategy that kept the most
REFERENCES = (DEFAULT, "guided+online")  # the default a report pairs with: v4's, else v2-3's


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=0,
                        help="live: run seeds FIRST_SEED .. FIRST_SEED + SEEDS - 1 (to add a seed to a saved run)")
    parser.add_argument("--batch", type=int, default=4, help="configs per batch (replay)")
    parser.add_argument("--root", type=Path, default=ROOT,
                        help="the collections' folder: replayed, and the transfer model's training programs")
    parser.add_argument("--live", nargs="+", metavar="PROGRAM",
                        help=f"measure these programs for real; a set's name ({', '.join(PROGRAM_SETS)}) "
                        "stands for its programs")
    parser.add_argument("--space", default="flags", help="the space tuned live (replay: each collection's)")
    parser.add_argument("--budget", type=int, nargs="+", default=[64],
                        help="configs per live run; several: a run at each")
    parser.add_argument("--time", type=float, metavar="T",
                        help="live: also stop each run's search after T seconds (equal wall time)")
    parser.add_argument("--strategies", nargs="+", choices=list(LIVE),
                        help="the strategies run live (default: version 4's); with --report, those reported "
                        "(default: every one in the files)")
    parser.add_argument("--own-db", dest="own_db", action="store_true", default=True,
                        help="live: a database per run, none reading another's measurements or compiles (the default)")
    parser.add_argument("--shared-db", dest="own_db", action="store_false",
                        help="live: a database per program, its runs reading each other's measurements")
    parser.add_argument("--db-dir", type=Path,
                        help="live: the runs' databases (default: a folder in the temporary directory named after --out)")
    parser.add_argument("--verify-dropped", action="store_true",
                        help="measure each leader a final check dropped (in --out) once more beside the default")
    parser.add_argument("--out", type=Path, default=Path("docs/img/tune_bench.json"))
    parser.add_argument("--plot", type=Path,
                        help="the figure (default: --out's name with .png; with --report, none)")
    parser.add_argument("--report", type=Path, nargs="+", metavar="JSON",
                        help="re-print and plot saved runs, measuring nothing; a program's runs in "
                        "several files are read against the best of their oracles")
    args = parser.parse_args(argv)
    args.db_dir = args.db_dir or _db_dir(args.out)
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.report:
        rows = [r for path in args.report for r in harness.read_rows(path)
                if args.strategies is None or r["strategy"] in args.strategies]
    elif args.live or args.verify_dropped:
        log = _finished(args.out)
        if args.live:
            live(args, log)
        if args.verify_dropped:
            verify_dropped(log)
        rows = log.rows
    else:
        rows = []
        for program_rows in replay_rows(args):
            rows += program_rows
            harness.write_rows(args.out, rows)  # an interrupted run keeps what it finished
    rows = common_oracles(rows)
    print(markdown(rows) + live_report(rows))
    figure = args.plot or (None if args.report else args.out.with_suffix(".png"))
    if figure:
        plot(rows, figure)



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
    gnn = ScorerCostModel(shipped_scorers(collection), layouts)
    scored = [*pool, DEFAULT_CONFIG]  # the online model weighs its prior on every trial, the default's too
    models = {"gnn": PoolScores(scored, gnn.predict(scored))} | ({"transfer": transfer} if transfer else {})
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
    """A model's scores of the whole pool and the default, computed once: the pretrained GNN
    does not learn here, and ranking what is left of the pool by them is ranking by the model
    (up to its cross-config attention, which saw the whole pool instead of what is left)."""

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


def _finished(out: Path) -> harness.RowLog:
    """The rows of an earlier live run into `out` (atomic JSON, rewritten as each run ends):
    hours of measuring resume run by run."""
    log = harness.RowLog(out)
    if not all(r.get("live") for r in log.rows):
        sys.exit(f"tune_bench: error: {out} holds a replay run; give the live run its own --out")
    if log.rows:
        print(f"resuming {out}: {len(log.rows)} runs measured before", file=sys.stderr)
    return log


def _db_dir(out: Path) -> Path:
    """The runs' databases of the benchmark saved to `out`: outside the repository, one folder
    per --out (its hash), so two benchmarks never read each other's."""
    tag = hashlib.sha1(str(out.resolve()).encode()).hexdigest()[:8]
    return Path(tempfile.gettempdir()) / f"hlotune-tune-bench-{out.stem}-{tag}"


def live(args: argparse.Namespace, log: harness.RowLog) -> None:
    """Each program's runs not in `log` (seed by seed, then budget, then strategy), each saved
    to --out as it finishes, then the program's oracle check where a run lacks one."""
    done = {_key(r) for r in log.rows}
    strategies = runnable(args.strategies or list(V4), args.root)
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    for program in named_programs(args.live):
        for seed in seeds:
            for budget in args.budget:
                for name in strategies:
                    if (program, args.space, name, seed, budget) in done:
                        continue
                    print(f"{program}: {name}, seed {seed}, budget {budget}", file=sys.stderr, flush=True)
                    log.add(live_run(program, name, seed, budget, args))
        _check_oracle(program, args, log)


def _key(r: dict) -> tuple:
    return r["program"], r["space"], r["strategy"], r["seed"], _budget(r)


def named_programs(specs: list[str]) -> list[str]:
    """`specs` with each set's name (PROGRAM_SETS) replaced by its programs."""
    return [program for spec in specs for program in PROGRAM_SETS.get(spec, (spec,))]


def runnable(names: list[str], root: Path) -> list[str]:
    """The strategies whose recipe TuneOptions takes; the others are skipped, saying why (a
    candidate may name an option the tuner does not have yet)."""
    kept = []
    for name in names:
        try:
            TuneOptions(**_fitted_on(LIVE[name], root))
        except (HlotuneError, TypeError) as err:
            print(f"tune_bench: skipping {name}: TuneOptions does not take {LIVE[name]} ({err})", file=sys.stderr)
        else:
            kept.append(name)
    return kept


def live_run(program: str, name: str, seed: int, budget: int, args: argparse.Namespace) -> dict:
    """One tune, on a database of its own unless --shared-db, and what it kept, verified; its
    oracle is None until the program's oracle check."""
    db = _db_path(args, program, name, seed, budget)
    options = TuneOptions(**_fitted_on(LIVE[name], args.root), space=args.space, budget=budget,
                          time_s=args.time, seed=seed)
    result = tune(program, options=options, db=db, progress=False)
    return {"program": program, "space": args.space, "strategy": name, "seed": seed, "oracle_speedup": None,
            "history": result.history, "kept": {str(budget): result.speedup}, "live": True,
            "options": _recorded(options), "db": db.name,
            "fingerprint": result.fingerprint, "seconds": result.seconds, "screened": result.screened,
            "screen_s": result.screen_s, "measurements": result.measurements,
            "dropped": _dropped(result)} | _verified(program, result)


def _recorded(options: TuneOptions) -> dict:
    """What a recipe came to when run (the default's "{}" names whatever TuneOptions() was)."""
    return {"strategy": options.strategy, "model": options.ranking_model, "online": options.learns_online,
            "optimism": options.optimism, "first_generation": options.first, "immigrants": options.immigrants,
            "warm_start": options.warm_start, "batch": options.batch}


def _db_path(args: argparse.Namespace, program: str, name: str, seed: int, budget: int) -> Path:
    """The run's database: its own, emptied first (a run cut off starts again), or its program's."""
    stem = program.replace(":", "_").replace("/", "_")
    if not args.own_db:
        return args.db_dir / f"{stem}.sqlite"
    db = args.db_dir / f"{stem}-{name}-s{seed}-b{budget}.sqlite"
    for path in args.db_dir.glob(f"{db.stem}.*"):  # the database, its journal and its Optuna study
        path.unlink()
    return db


def _verified(program: str, result) -> dict:
    """What the run reported and kept, and the kept config's speedup measured again in a fresh
    batch beside the default (1 for a kept default; None when it failed there)."""
    verified = 1.0 if result.kept_default else fresh_speedup(program, result.best_config)
    return {"kept_default": result.kept_default, "reported": result.speedup, "verified": verified}


def fresh_speedup(program: str, config: CompileConfig) -> float | None:
    """`config`'s speedup in a fresh batch beside the default, a measurement no tune decision
    saw (None: it failed there)."""
    batch = measure(program, [config], VERIFY)
    (again,) = batch.measurements
    return batch.default_ns / again.median_ns if again.ok else None


def _dropped(result) -> dict | None:
    """The final check's leader when the run kept the default anyway (rounds 0: the search's
    favourite, which no race took up because it did not beat its batch's noise floor), with
    the speedups and the floor it was judged by; None when the run kept it, or found nothing
    faster than the default."""
    if not result.kept_default or result.candidate.is_default:
        return None
    return {"config": result.candidate.to_dict(), "found": result.found_speedup,
            "confirmed": result.confirmed_speedup, "last_round": result.candidate_speedup,
            "rounds": result.confirm_rounds, "noise": None if math.isnan(result.noise) else result.noise}


def verify_dropped(log: harness.RowLog) -> None:
    """Each dropped leader not yet verified, measured once more beside the default; saved one
    by one, so this resumes too."""
    for r in log.rows:
        dropped = r.get("dropped")
        if dropped and "verified" not in dropped:
            dropped["verified"] = fresh_speedup(r["program"], CompileConfig.from_dict(dropped["config"]))
            print(f"{r['program']}: {r['strategy']}, seed {r['seed']}: dropped leader verified at "
                  f"{dropped['verified']}", file=sys.stderr, flush=True)
            harness.write_rows(log.path, log.rows)


def _check_oracle(program: str, args: argparse.Namespace, log: harness.RowLog) -> None:
    """Give `program`'s runs without an oracle the oracle check over all its runs' databases
    still in --db-dir."""
    mine = [r for r in log.rows if r["program"] == program and r["space"] == args.space]
    if all(r["oracle_speedup"] is not None for r in mine):
        return
    dbs = sorted({args.db_dir / r["db"] for r in mine if "db" in r} & set(args.db_dir.glob("*.sqlite")))
    fingerprint = next(r["fingerprint"] for r in mine if r["oracle_speedup"] is None)
    oracle = confirmed_oracle(program, args.space, dbs, fingerprint)
    print(f"{program}: oracle {oracle:.3f}x", file=sys.stderr, flush=True)
    for r in mine:
        if r["oracle_speedup"] is None:
            r["oracle_speedup"] = oracle
    harness.write_rows(log.path, log.rows)


def _fitted_on(options: dict, root: Path) -> dict:
    return options | {"model": _transfer_spec(root)} if options.get("model") == "transfer" else options


def _transfer_spec(root: Path) -> str:
    """The transfer model fitted on `root`'s flags training programs."""
    return f"transfer@{root / 'flags' / 'train'}"


def confirmed_oracle(program: str, space: str, dbs: list[Path], fingerprint: str) -> float:
    """The best config any run measured, re-measured beside the default (in a fresh database,
    so the earlier measurement is not read back); 1 when nothing beat the default."""
    records = []
    for db in dbs:
        with TuningDatabase(db) as database:
            records += [r for r in database.records(fingerprint) if r.ok]
    best = min(records, key=lambda r: r.cost, default=None)
    if best is None or best.config.is_default:
        return 1.0
    with tempfile.TemporaryDirectory() as folder:
        confirmed = tune(program, space=space, strategy=Exhaustive([best.config]), budget=2,
                         db=Path(folder) / "oracle.sqlite", progress=False, warm_start=0)
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
    by an oracle check (runs of one program made at different times each had their own; a run
    cut off before its program's check has none) or by a run's own final check. A single oracle
    check can miss: its one config, re-measured, may not repeat what the search saw, while a
    run kept another config beyond the noise."""
    oracle = {}
    for r in rows:
        oracle[r["program"]] = max(oracle.get(r["program"], 1.0), r["oracle_speedup"] or 1.0, *r["kept"].values())
    return [r | row(r["program"], r["space"], r["strategy"], r["seed"], oracle[r["program"]], r["history"],
                    {int(b): s for b, s in r["kept"].items()}) for r in rows]


def markdown(rows: list[dict]) -> str:
    """Per space and budget: medians over programs and seeds, and geomean speedups at the
    budget against random's (or, without random, the first strategy's)."""
    tables = []
    for space, budget in sorted({(r["space"], _budget(r)) for r in rows}):
        mine = [r for r in rows if r["space"] == space and _budget(r) == budget]
        programs = sorted({r["program"] for r in mine})
        oracle = geometric_mean([next(r["oracle_speedup"] for r in mine if r["program"] == p) for p in programs])
        base = "random" if any(r["strategy"] == "random" for r in mine) else mine[0]["strategy"]
        base_found = geometric_mean([_found(r) for r in mine if r["strategy"] == base])
        base_kept = geometric_mean([_kept(r) for r in mine if r["strategy"] == base])
        header = ["strategy", f"configs to within {WITHIN:.0%} of the oracle (median)",
                  f"share of the oracle's gain at {' / '.join(map(str, BUDGETS))} (median)",
                  f"found at {budget}, geomean (x {base}'s)", f"kept at {budget}, geomean (x {base}'s)",
                  "decisions slower than the default"]
        cells = []
        for strategy in _strategies(mine):
            runs = [r for r in mine if r["strategy"] == strategy]
            reach = np.median([r["configs_to_within"] or r["evaluated"] + 1 for r in runs])
            shares = " / ".join(f"{np.median([r[f'share_at_{b}'] for r in runs]):.2f}" for b in BUDGETS)
            found, kept = geometric_mean([_found(r) for r in runs]), geometric_mean([_kept(r) for r in runs])
            cells.append([strategy, f"{reach:.1f}", shares, f"{found:.3f}x ({found / base_found:.3f})",
                          f"{kept:.3f}x ({kept / base_kept:.3f})", f"{sum(_kept(r) < 1 for r in runs)} of {len(runs)}"])
        tables.append(f"\n{space}, budget {budget}: {len(programs)} programs, oracle geomean {oracle:.3f}x\n"
                      + harness.markdown(header, cells))
    return "\n".join(tables)


def _budget(run: dict) -> int:
    """The budget a run's table reads its kept speedup at: 32, the issue's, where a replayed
    run has several; a live run's own."""
    budgets = {int(b) for b in run["kept"]}
    return 32 if 32 in budgets else max(budgets)


def _kept(run: dict) -> float:
    return run["kept"][str(_budget(run))]


def _found(run: dict) -> float:
    """The best speedup the search found within the run's budget."""
    return run["history"][min(_budget(run), len(run["history"])) - 1]


def _strategies(runs: list[dict]) -> list[str]:
    """The strategies run, in LIVE's order (version 4's first), others after as they come."""
    order = list(LIVE)
    return sorted(dict.fromkeys(r["strategy"] for r in runs),
                  key=lambda name: order.index(name) if name in order else len(order))


def live_report(rows: list[dict]) -> str:
    """The live runs' tables, per space and budget: the summary, the paired ratios, the
    winner's curse and the costs."""
    live = [r for r in rows if "verified" in r]
    groups = sorted({(r["space"], _budget(r)) for r in live})
    return "".join(f"\n\n## live, {space}, budget {budget}\n" + summary(mine) + pairs(mine) + hindsight(mine)
                   + curse(mine) + dropped_leaders(mine) + costs(mine)
                   for space, budget in groups
                   for mine in [[r for r in live if (r["space"], _budget(r)) == (space, budget)]])


def strategy_stats(runs: list[dict], strategy: str) -> dict:
    """`strategy`'s runs (of one budget): geomean kept, verified (a kept default and a failed
    verification count 1) and found speedups; the median over programs with a gain of the share
    of the oracle's log gain kept and verified, each program's median over its seeds; kept
    configs verifying below SLOWER; dropped leaders, and how many of those measured again
    verify above REAL_GAIN (None: rows from before dropped leaders were recorded)."""
    mine = [r for r in runs if r["strategy"] == strategy]
    kept_configs = [r for r in mine if not r["kept_default"]]
    dropped = [r["dropped"] for r in mine if r.get("dropped")]
    measured = [d["verified"] for d in dropped if "verified" in d]
    recorded = any("dropped" in r for r in mine)
    return {"runs": len(mine), "kept": float(geometric_mean([_kept(r) for r in mine])),
            "verified": float(geometric_mean([_verified_or_1(r) for r in mine])),
            "found": float(geometric_mean([_found(r) for r in mine])),
            "share_kept": _median_log_share(mine, _kept), "share_verified": _median_log_share(mine, _verified_or_1),
            "kept_configs": len(kept_configs),
            "slower": sum(r["verified"] is not None and r["verified"] < SLOWER for r in kept_configs),
            "dropped": len(dropped) if recorded else None, "dropped_measured": len(measured),
            "dropped_real": sum(v is not None and v > REAL_GAIN for v in measured)}


def _verified_or_1(run: dict) -> float:
    return run["verified"] or 1.0


def _median_log_share(runs: list[dict], speedup: Callable[[dict], float]) -> float | None:
    """The median, over programs whose oracle beats the default, of each program's median over
    its runs of log(speedup) / log(oracle); None without such a program."""
    gained = sorted({r["program"] for r in runs if r["oracle_speedup"] > 1})
    shares = [np.median([math.log(speedup(r)) / math.log(r["oracle_speedup"]) for r in runs if r["program"] == p])
              for p in gained]
    return float(np.median(shares)) if shares else None


def summary(runs: list[dict]) -> str:
    """strategy_stats of each strategy, as a table."""
    gained = len({r["program"] for r in runs if r["oracle_speedup"] > 1})
    header = ["strategy", "runs", "kept, geomean", "verified, geomean", "found, geomean",
              f"share of the oracle's log gain kept, median of {gained} programs with a gain", "verified",
              f"kept configs verifying below {SLOWER}x", f"leaders dropped (measured again: above {REAL_GAIN}x)"]
    cells = []
    for strategy in _strategies(runs):
        s = strategy_stats(runs, strategy)
        shares = ["-" if s[key] is None else f"{s[key]:.2f}" for key in ("share_kept", "share_verified")]
        cells.append([strategy, str(s["runs"]), f"{s['kept']:.3f}x", f"{s['verified']:.3f}x", f"{s['found']:.3f}x",
                      *shares, f"{s['slower']} of {s['kept_configs']}", _dropped_cell(s)])
    return "\n" + harness.markdown(header, cells)


def _dropped_cell(stats: dict) -> str:
    if stats["dropped"] is None:
        return "-"
    measured = stats["dropped_measured"]
    return f"{stats['dropped']}" + (f" ({stats['dropped_real']} of {measured})" if measured else "")


def pairs(runs: list[dict]) -> str:
    """Each strategy's kept and verified speedups over the default's, then over each other
    strategy's (paired_ratio), so "the default against the better of random and TPE" reads
    off two rows, and each candidate against the rest off the others."""
    names = _strategies(runs)
    reference = next((name for name in REFERENCES if name in names), names[0])
    order = [reference] + [name for name in names if name != reference]
    cells = []
    for i, theirs in enumerate(order):
        for mine in order[i + 1:]:
            (programs, kept), (_, verified) = (paired_ratio(runs, mine, theirs, key) for key in (_kept, _verified_or_1))
            cells.append([mine, theirs, str(programs), _interval(kept), _interval(verified)])
    header = ["strategy", "over", "programs", "kept ratio, geomean [90% interval]",
              "verified ratio, geomean [90% interval]"]
    return "\n\n" + harness.markdown(header, cells) if cells else ""


def paired_ratio(runs: list[dict], strategy: str, reference: str, speedup: Callable[[dict], float],
                 resamples: int = RESAMPLES) -> tuple[int, tuple[float, float, float] | None]:
    """Programs both strategies ran, and the geomean over them of `strategy`'s speedup over
    `reference`'s, with a 90% bootstrap interval over programs (BOOTSTRAP_SEED): paired by
    program and seed, each program's mean log ratio over the seeds both ran, so a lead is told
    from which programs happened to be drawn. None: no program in common."""
    def logs(name: str) -> dict[tuple, float]:
        return {(r["program"], r["seed"]): math.log(speedup(r)) for r in runs if r["strategy"] == name}

    mine, theirs = logs(strategy), logs(reference)
    by_program: dict[str, list[float]] = {}
    for program, seed in sorted(mine.keys() & theirs.keys()):
        by_program.setdefault(program, []).append(mine[program, seed] - theirs[program, seed])
    if not by_program:
        return 0, None
    means = np.array([np.mean(ratios) for ratios in by_program.values()])
    resampled = np.random.default_rng(BOOTSTRAP_SEED).choice(means, (resamples, len(means))).mean(axis=1)
    low, high = np.exp(np.percentile(resampled, [5, 95]))
    return len(means), (float(np.exp(means.mean())), float(low), float(high))


def hindsight(runs: list[dict]) -> str:
    """How far each strategy keeps from the best of all strategies' kept speedups on the same
    program and seed, picked after the fact: the lead that choosing the luckiest engine on
    every run would show (paired_ratio), beside which a goal of one engine's lead is read."""
    names = _strategies(runs)
    by_run: dict[tuple, list[dict]] = {}
    for r in runs:
        by_run.setdefault((r["program"], r["seed"]), []).append(r)
    picked = [max(mine, key=_kept) | {"strategy": HINDSIGHT} for mine in by_run.values()
              if len(names) > 1 and {r["strategy"] for r in mine} == set(names)]
    if not picked:
        return ""
    cells = []
    for name in names:
        programs, ratio = paired_ratio(runs + picked, HINDSIGHT, name, _kept)
        cells.append([HINDSIGHT, name, str(programs), _interval(ratio)])
    header = ["strategy", "over", "programs", "kept ratio, geomean [90% interval]"]
    return "\n\n" + harness.markdown(header, cells)


def _interval(ratio: tuple[float, float, float] | None) -> str:
    return "-" if ratio is None else f"{ratio[0]:.3f} [{ratio[1]:.3f}, {ratio[2]:.3f}]"


def curse(rows: list[dict]) -> str:
    """Live runs that kept a config, per strategy: geomeans of the best speedup the search
    found, the one the tune reported (kept) and the one a fresh batch verified, and their
    ratios (the winner's curse of each number)."""
    kept = [r for r in rows if "verified" in r and not r["kept_default"]]
    verified = [r for r in kept if r["verified"] is not None]
    if not kept:
        return ""
    cells = []
    for strategy in _strategies(verified):
        runs = [r for r in verified if r["strategy"] == strategy]
        found = geometric_mean([r["history"][-1] for r in runs])
        reported, again = geometric_mean([r["reported"] for r in runs]), geometric_mean([r["verified"] for r in runs])
        cells.append([strategy, str(len(runs)), f"{found:.3f}x", f"{reported:.3f}x", f"{again:.3f}x",
                      f"{found / again:.3f}", f"{reported / again:.3f}"])
    header = ["strategy", "runs that kept a config", "found, geomean", "reported (kept), geomean",
              "verified, geomean", "found / verified", "reported / verified"]
    failed = len(kept) - len(verified)
    return "\n\n" + harness.markdown(header, cells) + (f"\n\n{failed} kept config(s) failed when verified" if failed else "")


def dropped_leaders(rows: list[dict]) -> str:
    """Leaders the final check dropped and --verify-dropped measured again, per strategy: their
    found and verified geomeans, how many verify above REAL_GAIN (real gain thrown away) and below
    SLOWER, and the share of their found log gain that the fresh batch did not see (luck)."""
    cells = []
    for strategy in _strategies(rows):
        dropped = [r["dropped"] for r in rows if r["strategy"] == strategy and r.get("dropped")]
        measured = [d for d in dropped if d.get("verified") is not None]
        if not measured:
            continue
        found, again = geometric_mean([d["found"] for d in measured]), geometric_mean([d["verified"] for d in measured])
        # a share of a found gain under LUCK_FLOOR is a ratio of two noises: not shown
        luck = f"{1 - math.log(again) / math.log(found):.2f}" if found > LUCK_FLOOR else "-"
        cells.append([strategy, str(len(measured)), f"{found:.3f}x", f"{again:.3f}x",
                      str(sum(d["verified"] > REAL_GAIN for d in measured)),
                      str(sum(d["verified"] < SLOWER for d in measured)), luck])
    header = ["strategy", "dropped leaders measured again", "found, geomean", "verified, geomean",
              f"above {REAL_GAIN}x", f"below {SLOWER}x", "share of the found log gain that was luck"]
    return "\n\n" + harness.markdown(header, cells) if cells else ""


def costs(rows: list[dict]) -> str:
    """Live runs, per strategy: medians of configs measured, candidates compiled by a kernel
    screen, its compile seconds and the run's seconds (rows from before screening have none)."""
    live = [r for r in rows if "seconds" in r]
    if not live:
        return ""
    cells = []
    for strategy in _strategies(live):
        runs = [r for r in live if r["strategy"] == strategy]
        cells.append([strategy, f"{np.median([r.get('measurements', r['evaluated']) for r in runs]):.0f}",
                      f"{np.median([r.get('screened', 0) for r in runs]):.0f}",
                      f"{np.median([r.get('screen_s', 0.0) for r in runs]):.1f}",
                      f"{np.median([r['seconds'] for r in runs]):.1f}"])
    header = ["strategy", "measured (median)", "compiled to screen (median)", "compile s (median)", "run s (median)"]
    return "\n\n" + harness.markdown(header, cells)


def plot(rows: list[dict], path: Path) -> None:
    """Median share of the oracle's gain over programs after each config, per strategy: the line
    is the median over seeds, the band their range. Each strategy is drawn from its runs at
    its largest budget: files that mix budgets would otherwise cut every curve at the shortest."""
    spaces = sorted({r["space"] for r in rows})
    fig, axes = harness.subplots(1, len(spaces), figsize=(6 * len(spaces), 4), squeeze=False)
    for ax, space in zip(axes[0], spaces):
        mine = [r for r in rows if r["space"] == space]
        for strategy in _strategies(mine):
            runs = [r for r in mine if r["strategy"] == strategy]
            widest = max(_budget(r) for r in runs)
            runs = [r for r in runs if _budget(r) == widest]
            length = min(len(r["history"]) for r in runs)
            seeds = sorted({r["seed"] for r in runs})
            curves = np.array([np.median([_share(r, length) for r in runs if r["seed"] == s], axis=0) for s in seeds])
            steps = np.arange(1, length + 1)
            ax.plot(steps, np.median(curves, axis=0), label=strategy)
            ax.fill_between(steps, curves.min(axis=0), curves.max(axis=0), alpha=0.2)
        ax.set(title=f"{space}: {len({r['program'] for r in mine})} held-out programs", xlabel="configs evaluated",
               ylabel="share of the oracle's gain (median program)", ylim=(-0.05, 1.05))
        ax.legend(fontsize=8)
    harness.save_figure(fig, path, dpi=120)


def _share(row: dict, length: int) -> np.ndarray:
    history = np.array(row["history"][:length])
    gain = row["oracle_speedup"] - 1
    return (history - 1) / gain if gain > 0 else np.ones(length)


if __name__ == "__main__":
    main()
