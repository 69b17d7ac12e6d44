"""Fleet benchmark: a simulated fleet day with real runs, tuned by each allocation of
`hlotune fleet tune` at equal tuning time, the saving measured where the programs run.

The fleet is fleet_programs.py's programs (7 families no shipped model or portfolio was built
on). Each is recorded once by a worker process under `hlotune.jit`, which also times its calls.
A fleet draw gives each program a call rate, heavy-tailed as fleets are (lognormal, sigma 2,
the median program called 1,000 times a day): the rates are simulated, the per-call times are
measured. Each allocation then tunes a copy of the recorded fleet (its own database, so no
allocation sees another's measurements), and every program runs again in a fresh worker under
`hlotune.jit` (which applies the decision) interleaved with `jax.jit`: its delivered speedup.
A program saves its calls a day x its recorded jax.jit time x (1 - 1/delivered); the fleet,
their sum.

Allocations: `everything` (each program at budget 32: the reference), then, at a share of its
tuning seconds in the same seed (`--share`, a quarter by default; `--equal configs`: of its
measured configs, as runs before issue 61's second part were), `time` (most recorded time
first, a probe of 6 each, then 32 where it kept a gain: the early stop; its tunes warm-started
from the fleet portfolio, as `hlotune fleet tune` runs them), `time-flat` (the same, warm
starts newest first), `time-probe2` (`time` with a second probe of 6 at once after a probe that
kept nothing), `halving` (probe all, then more to the most promising), `probe` (probe
all at the portfolio's first configs, then the winners at 32: halving with one step), `model`
(halving steered by the gain model), `saving` (expected saving a day per tuning second, the
gain model's expectation, the early stop, the fleet portfolio) and `saving-flat` (the same with
both learned parts off: a flat expectation, warm starts newest first): allocation.py. The goals
(issue 61): in every draw, 90% of everything's saving at a quarter of its time and 75% at an
eighth; the learned parts raise the saving per tuning second by 1.25x (`time` over `time-flat`,
`saving` over `saving-flat`); no applied decision runs below 0.99x of jax.jit.

Rows are kept as they finish (--out, JSON lines: recordings, tunes, after-runs), so a stopped
run resumes where it stopped (the databases stay in --folder). One recording serves every draw
and seed; `everything` gives each program its budget whatever the rates, so a further draw of
the same seed re-weights its runs rather than tuning again, and a fleet that grows (programs
added to fleet_programs.py, last) records and tunes only the new programs there; every other
allocation must run afresh on the grown fleet. What `fleet report` predicts, the verified
speedups (tuning/verification.py) at the draw's rates, is set beside what the after-runs
measured.

    python benchmarks/fleet_bench.py --out fleet.jsonl            # one draw, seed 0
    python benchmarks/fleet_bench.py --out fleet.jsonl --draw 1 --allocations everything halving
    python benchmarks/fleet_bench.py --out fleet.jsonl --draw 3 --share 0.125 --allocations saving saving-flat
    python benchmarks/fleet_bench.py --report fleet.jsonl
"""

from __future__ import annotations

import math
import os
import random
import tempfile
import time
from pathlib import Path

import numpy as np

import harness
from jit_delivery_bench import _in_worker

EVERYTHING_BUDGET = 32
QUARTER = 0.25
SIGMA, MEDIAN_CALLS = 2.0, 1000.0
HEAVY_DRAW, HEAVY_PROGRAM = 3, "flax_transformer"
EQUAL = ("time", "configs")  # an allocation's budget: a share of everything's tuning seconds, or of its configs
ALLOCATIONS = ("everything", "halving", "time", "time-flat", "time-probe2", "probe", "model", "saving", "saving-flat")
LEARNED = "saving"  # the allocation `versus` sets against the others
FLAT = {"time-flat": "time", "saving-flat": "saving"}  # an allocation with its learned parts off: -> the one on


def record(names: list[str], folder: Path, rounds: int) -> dict[str, dict]:
    """Each program recorded in `folder`/recorded.sqlite by a worker, and its calls timed."""
    db = str(folder / "recorded.sqlite")
    return {name: _in_worker("apply", name, db, rounds) for name in names}


def draw_rates(names: list[str], draw: int) -> dict[str, float]:
    """Calls a day, lognormal: a few programs make most of the fleet's calls. In HEAVY_DRAW the
    transformer's training step, matmul-bound, takes the draw's largest rate, so that a program
    with little to gain holds most of the fleet's time, as in users' fleets."""
    rng = random.Random(draw)
    rates = {name: MEDIAN_CALLS * math.exp(rng.gauss(0.0, SIGMA)) for name in names}
    if draw == HEAVY_DRAW and HEAVY_PROGRAM in rates:
        top = max(rates, key=rates.get)
        rates[top], rates[HEAVY_PROGRAM] = rates[HEAVY_PROGRAM], rates[top]
    return rates


def fleet_database(folder: Path, label: str, rates: dict[str, float], before: dict[str, dict]) -> str:
    """A new copy of the recorded fleet for one run (an allocation, draw and seed: no run may
    resume another's measurements), its calls those of the draw (simulated rates over one day,
    at the measured jax.jit time a call); a copy that exists gains the programs it lacks."""
    from hlotune.tuning.storage import CallCount, TuningDatabase

    location = str(folder / f"{label}.sqlite")
    recorded = TuningDatabase(str(folder / "recorded.sqlite"))
    with recorded, TuningDatabase(location) as db:
        copied = {r.name for r in db.recordings()}  # a stopped or grown run: the programs it lacks
        for name, run in before.items():
            if name in copied:
                continue
            recording = next(r for r in recorded.recordings() if r.fingerprint == run["fingerprint"])
            db.record_program(recording.fingerprint, name, recording.shapes,
                              recorded.exported(recording.fingerprint), recording.reason)
            db.record_calls(recording.fingerprint, CallCount(round(rates[name]), 1, run["jit_ms"] / 1e3,
                                                         time.time() - 86400))
    return location


def tune(location: str, allocation: str, budget: int | None, each: int, seed: int, only: set[str] | None = None,
         seconds: float | None = None, warm_start: int | None = None) -> dict:
    """`allocation` (`each`: everything's budget a program) within `budget` measured configs
    and/or `seconds` of tuning; `everything` over the programs named `only` where given (those a
    grown fleet added). The tunes of `time` and `saving` order their warm start by the fleet
    portfolio, as `hlotune fleet tune` does; the others newest first. `time-flat` is `time`
    with it off, `saving-flat` `saving` with both learned parts off. `warm_start` is how many of
    other programs' winners each tune tries first (TuneOptions' default where None); the
    search's own first configs (the shipped portfolio's) fill the rest of a probe."""
    from hlotune.fleet.allocation import ALLOCATIONS as KINDS, FULL, PROBE, by_time
    from hlotune.fleet.tune import fleet_tune
    from hlotune.tuning.options import TuneOptions

    def everything(programs, spend):
        for program in programs:
            if only is None or program.name in only:
                spend(program, each)

    def probe(programs, spend):
        rung = [spend(program, PROBE) for program in programs]
        for outcome in sorted((o for o in rung if o.promise > 0), key=lambda o: -o.promise):
            spend(outcome.recording, FULL)

    def probe_twice(programs, spend):
        by_time(programs, spend, probes=2)

    allocate = ({"everything": everything, "probe": probe, "time-probe2": probe_twice}.get(allocation)
                or KINDS[allocation if allocation in KINDS else FLAT[allocation]].allocate)
    result = fleet_tune(location, allocate=allocate, budget=budget, hours=None if seconds is None else seconds / 3600,
                        seed=seed, show=True,
                        options=TuneOptions(fleet_portfolio=_portfolio(allocation),
                                            **({} if warm_start is None else {"warm_start": warm_start})))
    return {"measured": result.measured, "tuning_s": result.seconds,
            "tunes": [{"program": o.recording.name, "budget": o.budget, "measured": o.measured,
                       "seconds": o.seconds, "found": o.found, "speedup": o.speedup} for o in result.outcomes],
            "verified": {o.recording.name: result.verified[o.recording.fingerprint]
                         for o in result.outcomes if o.recording.fingerprint in result.verified}}


def after(names: list[str], location: str, rounds: int) -> dict[str, dict]:
    """Each program whose tune kept a config, run again beside jax.jit; the others run jax.jit's
    own executable under hlotune.jit and save nothing."""
    from hlotune.tuning.storage import TuningDatabase

    with TuningDatabase(location) as db:
        kept = {r.name for r in db.recordings() if (d := db.best(r.fingerprint)) is not None and not d.kept_default}
    return {name: _in_worker("apply", name, location, rounds) if name in kept else {"choice": "jit", "kept": "default"}
            for name in names}


def saving(row: dict, before: dict[str, dict]) -> dict[str, float]:
    """Seconds a day each program saves: its calls a day x its recorded jax.jit time x (1 -
    1/delivered), the speedup from its after-run. Not the after-run's own jax.jit time: from one
    process to the next it moves by up to a third (nbody_steps: 33 to 51 ms a call), while the
    ratio, timed interleaved in one process, holds."""
    applied = _applied(row)
    return {name: row["rates"][name] * before[name]["jit_ms"] / 1e3 * (1 - 1 / run["delivered"])
            if name in applied else 0.0 for name, run in row["after"].items()}


def _applied(row: dict) -> set[str]:
    """The programs whose after-run applied a decision that today's hlotune.jit applies: one
    verified at least VERIFIED_FLOOR faster. Runs made before the floor existed (the first 20
    programs' tune-everything) applied every kept config; read as today's, those below it run
    jax.jit's executable and save nothing."""
    from hlotune.tuning.storage.fleet_log import VERIFIED_FLOOR

    verified = row["tuned"].get("verified", {})
    return {name for name, run in row["after"].items()
            if run["choice"] == "database" and verified.get(name, VERIFIED_FLOOR) >= VERIFIED_FLOOR}


def predicted(row: dict, before: dict[str, dict]) -> float:
    """Seconds a day the fleet saves as `fleet report` reads it before any after-run: each
    applied decision's verified speedup at the recorded jax.jit time and the draw's rate."""
    from hlotune.tuning.storage.fleet_log import VERIFIED_FLOOR

    return sum(row["rates"][name] * before[name]["jit_ms"] / 1e3 * (1 - 1 / speedup)
               for name, speedup in row["tuned"].get("verified", {}).items() if speedup >= VERIFIED_FLOOR)


def grown(row: dict, rates: dict[str, float], before: dict[str, dict], folder: Path, each: int, rounds: int) -> dict:
    """An `everything` run (at its draw's `rates`) over the programs its fleet gained since:
    each tuned at everything's budget in the run's own database, then run again, merged into
    `row`. A program's tune is its own whatever the others, so the earlier ones stand."""
    names = [name for name in before if name not in row["after"]]
    location = fleet_database(folder, f"everything-draw{row['draw']}-seed{row['seed']}", rates, before)
    tuned = tune(location, "everything", each * len(names), each, row["seed"], only=set(names))
    merged = {"measured": row["tuned"]["measured"] + tuned["measured"],
              "tuning_s": row["tuned"]["tuning_s"] + tuned["tuning_s"],
              "tunes": row["tuned"]["tunes"] + tuned["tunes"],
              "verified": {**row["tuned"]["verified"], **tuned["verified"]}}
    kept = {key: value for key, value in row.items() if key != "saving"}
    return {**kept, "budget": row["budget"] + each * len(names), "rates": rates, "tuned": merged,
            "after": {**row["after"], **after(names, location, rounds)}, "grown_by": names}


def reweighted(row: dict, draw: int, rates: dict[str, float]) -> dict:
    """`everything`'s runs of another draw at this draw's rates: each program had its budget
    whatever its rate, so only the weights change."""
    return {**row, "draw": draw, "rates": rates, "reweighted_from": row["draw"]}


def main() -> None:
    from fleet_programs import PROGRAMS

    parser = harness.parser(__doc__, programs=[p.name for p in PROGRAMS], seed=0)
    parser.add_argument("--draw", type=int, default=0, help="the fleet draw: its call rates (default 0)")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds of each run")
    parser.add_argument("--everything-budget", type=int, default=EVERYTHING_BUDGET,
                        help="each program's budget under everything (default %(default)s)")
    parser.add_argument("--allocations", nargs="+", default=list(ALLOCATIONS), choices=ALLOCATIONS)
    parser.add_argument("--share", type=float, default=QUARTER,
                        help="the allocations' budget as a share of everything's (default %(default)s)")
    parser.add_argument("--equal", choices=EQUAL, default=EQUAL[0],
                        help="what the share is of: everything's tuning seconds in the same seed (the goal's "
                             "measure, the default) or its measured configs")
    parser.add_argument("--warm-start", type=int,
                        help="other programs' winners each tune tries first (default: TuneOptions'); the shipped "
                             "portfolio's first configs fill the rest of a probe")
    parser.add_argument("--folder", type=Path, help="keep the databases here (default: one in the temporary folder, named after --out)")
    parser.add_argument("--report", type=Path, help="print the tables of a results file and stop")
    parser.add_argument("--plot", type=Path, help="with --report: draw each run's saving against its tuning time here")
    parser.add_argument("--noise", action="store_true",
                        help="time every program under hlotune.jit without a decision beside jax.jit once more "
                             "(an A/A run: the spread of the delivered speedup itself) and stop")
    harness.add_common(parser, out=None)
    args = parser.parse_args()
    if args.report:
        rows = harness.read_rows(args.report, lines=True)
        print("\n\n".join((report(rows), summary(rows), shortfall(rows), reach(rows), foresight(rows), versus(rows),
                             learned(rows), agreement(rows), noise(rows))))
        if args.plot:
            plot(rows, args.plot)
        return
    log = harness.RowLog(args.out or Path(tempfile.mkdtemp()) / "fleet.jsonl", lines=True)
    folder = args.folder or Path(tempfile.gettempdir()) / f"hlotune-fleet-bench-{log.path.stem}"
    folder.mkdir(parents=True, exist_ok=True)
    before = _recorded(log.rows) if (folder / "recorded.sqlite").exists() else {}
    if missing := [name for name in args.programs if name not in before]:  # a new or grown fleet
        log.add({"kind": "record", "before": record(missing, folder, args.rounds)})
        before = _recorded(log.rows)
    before, rates = {name: before[name] for name in args.programs}, draw_rates(args.programs, args.draw)
    if args.noise:
        log.add({"kind": "noise", "runs": {name: _in_worker("apply", name, str(folder / "recorded.sqlite"), args.rounds)
                                           for name in args.programs}})
        print(noise(log.rows))
        return
    for allocation in args.allocations:
        runs = {(_kind(row), _share(row), _equal(row), row.get("warm_start")): row for row in log.rows
                if row.get("draw") == args.draw and row.get("seed") == args.seed}
        row = runs.get((allocation, 1.0, "configs", None) if allocation == "everything"
                       else (allocation, args.share, args.equal, args.warm_start))
        if row is not None and set(row["after"]) >= set(before):
            continue
        if row is not None and allocation != "everything":
            raise SystemExit(f"fleet_bench.py: the {allocation} run of draw {args.draw}, seed {args.seed} covers "
                             f"{len(row['after'])} of the {len(before)} programs, and only everything's runs "
                             "grow with the fleet: write to a new --out")
        base = next((r for r in log.rows if r["kind"] == "everything" and r["seed"] == args.seed
                     and "reweighted_from" not in r), None)
        if base is not None and not set(base["after"]) >= set(before):
            grew = grown(base, draw_rates(args.programs, base["draw"]), before, folder, args.everything_budget,
                         args.rounds)
            log.replace(base, grew)
            base = grew
        if allocation == "everything" and base is not None:
            if base["draw"] != args.draw:  # in place of one weighted before the run grew
                weighted = reweighted(base, args.draw, rates)
                if row is None:
                    log.add(weighted)
                else:
                    log.replace(row, weighted)
            continue
        reference = base or next((r for r in log.rows if r["kind"] == "everything" and "reweighted_from" not in r),
                                 None)  # a seed without everything's run: the first seed's
        budget, seconds = _budget(allocation, args, reference, log.rows, len(before))
        label = allocation if allocation == "everything" or args.share == QUARTER else f"{allocation}-{args.share:g}"
        if allocation != "everything" and args.equal == "time":
            label += "-time"
        if allocation != "everything" and args.warm_start is not None:
            label += f"-warm{args.warm_start}"
        location = fleet_database(folder, f"{label}-draw{args.draw}-seed{args.seed}", rates, before)
        warm_start = None if allocation == "everything" else args.warm_start
        tuned = tune(location, allocation, budget, args.everything_budget, args.seed, seconds=seconds,
                     warm_start=warm_start)
        log.add({"kind": allocation, "share": 1.0 if allocation == "everything" else args.share,
                 "equal": "configs" if allocation == "everything" else args.equal,
                 **({} if warm_start is None else {"warm_start": warm_start}),
                 "fleet_portfolio": _portfolio(allocation),
                 "draw": args.draw, "seed": args.seed, "budget": budget, "budget_s": seconds,
                 "reference_seed": args.seed if reference is None else reference["seed"],
                 "rates": rates, "tuned": tuned, "after": after(list(before), location, args.rounds)})
    print(report(log.rows) + "\n\n" + summary(log.rows))
    print(f"\n{os.cpu_count()} cores; draw {args.draw}, seed {args.seed}, {args.rounds} rounds a run.")


def _budget(allocation: str, args, base: dict | None, rows: list[dict], programs: int) -> tuple[int | None, float | None]:
    """The run's budget, in configs and in seconds: everything's is its budget a program; any
    other's a share of `base`'s tuning seconds (everything's run in the same seed, or the first
    seed's where it has none; --equal time: a config of a heavy program costs several of a light
    one's, and the goal counts seconds) or of its configs."""
    if allocation == "everything":
        return args.everything_budget * programs, None
    if args.equal == "time":
        if base is None:
            raise SystemExit("fleet_bench.py: --equal time needs an everything run first")
        return None, args.share * base["tuned"]["tuning_s"]
    measured = [r["tuned"]["measured"] for r in rows if r["kind"] == "everything"]  # any draw, seed
    return round(args.share * measured[0]), None


def report(rows: list[dict]) -> str:
    """Per allocation: tuning time, configs, the fleet's saving a day with a bootstrap interval
    over programs, its share of everything's, and the applied decisions below 0.99x."""
    runs = [row for row in rows if row["kind"] in ALLOCATIONS]
    before = _recorded(rows)
    reference = {(r["draw"], r["seed"]): r for r in runs if r["kind"] == "everything"}
    cells = []
    for row in runs:
        total, low, high = _bootstrap(saving(row, before))
        base = reference.get(_reference_key(row))
        slower = [n for n in _applied(row) if row["after"][n]["delivered"] < 0.99]
        cells.append([f"{row['draw']}/{row['seed']}", _label(row), f"{row['tuned']['tuning_s']:.0f}",
                      str(row["tuned"]["measured"]), f"{total:,.0f} [{low:,.0f}, {high:,.0f}]",
                      _share_of(row, base, before),
                      f"{predicted(row, before) / total:.2f}" if total > 0 and "verified" in row["tuned"] else "—",
                      f"{total / row['tuned']['tuning_s']:.2f}", ", ".join(slower) or "none"])
    header = ("draw/seed", "allocation", "tuning s", "measured", "saved s/day [95% CI]", "of everything's [95% CI]",
              "predicted ÷ saved", "saved/day ÷ tuning s", "applied below 0.99x")
    return harness.markdown(header, cells, align="llrrrrrrl")


def _share_of(row: dict, base: dict | None, before: dict[str, dict]) -> str:
    """`row`'s saving as a share of `base`'s, with its interval resampling programs alike in
    both ("—" where there is no base or it saves nothing)."""
    if base is None or base is row:
        return "100%" if base is row else "—"
    theirs = saving(base, before)
    if sum(theirs.values()) <= 0:
        return "—"
    share, low, high = _paired_ratio(saving(row, before), theirs)
    return f"{share:.0%} [{low:.0%}, {high:.0%}]"


def shortfall(rows: list[dict]) -> str:
    """Where each allocation run's saving falls short of everything's in its draw and seed, by
    what the run did with each program: never tuned, probed only (its probe kept too little, or
    the budget ended before its tune on), or tuned on (a tune that found less than
    everything's, or the same config delivering less in its process). Then the share of the
    mean of everything's seeds in the draw, since a re-tune of everything moves too."""
    runs = [row for row in rows if row["kind"] in ALLOCATIONS]
    before = _recorded(rows)
    reference = {(r["draw"], r["seed"]): r for r in runs if r["kind"] == "everything"}
    cells = []
    for row in runs:
        base = reference.get(_reference_key(row))
        if base is None or base is row:
            continue
        ours, lost = sum(saving(row, before).values()), losses(row, base, before)
        pooled = np.mean([sum(saving(r, before).values()) for key, r in reference.items() if key[0] == row["draw"]])
        cells.append([f"{row['draw']}/{row['seed']}", _label(row), f"{sum(lost.values()):.0%}",
                      *(f"{share:.0%}" for share in lost.values()), f"{ours / pooled:.0%}"])
    header = ("draw/seed", "allocation", "short of everything's", "never tuned", "probed only", "tuned on",
              "of everything's mean over seeds")
    return harness.markdown(header, cells, align="llrrrrr")


def losses(row: dict, base: dict, before: dict[str, dict]) -> dict[str, float]:
    """`row`'s saving short of `base`'s, as shares of `base`'s, by what `row` did with each
    program: never tuned, probed only (short of a full tune: one probe or more), tuned on.
    They sum to 1 - row's saving / base's."""
    from hlotune.fleet.allocation import FULL

    ours, theirs = saving(row, before), saving(base, before)
    budgets: dict[str, int] = {}
    for tune in row["tuned"]["tunes"]:
        budgets[tune["program"]] = max(budgets.get(tune["program"], 0), tune["budget"])
    stage = {name: "never" if name not in budgets else "probed" if budgets[name] < FULL else "on" for name in ours}
    total = sum(theirs.values())
    return {kind: sum(theirs[n] - ours[n] for n in ours if stage[n] == kind) / total for kind in ("never", "probed", "on")}


def reach(rows: list[dict]) -> str:
    """How far down the fleet each `time` run got: the programs it probed, those it tuned on,
    the configs of the probes it went no further with (probed only), and whether its budget
    lasted into the second pass (a program tuned again after the next ones). A second probe of
    the stopped programs there costs nothing where that pass is never reached, and does nothing;
    given at once (`time-probe2`), it costs what their probes took again, out of the programs
    not yet reached."""
    from hlotune.fleet.allocation import FULL

    cells = []
    for row in (r for r in rows if r["kind"] in ("time", "time-probe2")):
        tunes = row["tuned"]["tunes"]
        on = {t["program"] for t in tunes if t["budget"] >= FULL}
        probes = [t for t in tunes if t["program"] not in on]
        visits = [t["program"] for i, t in enumerate(tunes) if i == 0 or tunes[i - 1]["program"] != t["program"]]
        cells.append([f"{row['draw']}/{row['seed']}", _label(row), f"{len({t['program'] for t in tunes})} of "
                      f"{len(row['after'])}", str(len(on)), str(len({t['program'] for t in probes})),
                      f"{sum(t['measured'] for t in probes) / row['tuned']['measured']:.0%}",
                      "yes" if len(visits) > len(set(visits)) else "no"])
    header = ("draw/seed", "allocation", "probed", "tuned on", "probed only", "their share of the configs",
              "second pass reached")
    return harness.markdown(header, cells, align="llrrrrl")


def foresight(rows: list[dict]) -> str:
    """What a quarter could keep at best: per everything run, the share of its tuning time that
    full tunes of the programs that saved most per tuning second take to reach 75% and 90% of
    its saving, knowing in advance where the saving is; and, not knowing, what probing at PROBE
    configs in recorded-time order down to the last of those programs and tuning them on takes
    (`time` with probes that never miss). A program's seconds a config are the mean over the
    rows' tunes that recorded seconds (the fleet's mean where none did)."""
    from hlotune.fleet.allocation import PROBE

    tunes = [t for row in rows if row["kind"] in ALLOCATIONS for t in row["tuned"]["tunes"] if "seconds" in t]
    if not tunes:
        return "foresight: no tune recorded its seconds yet"
    seconds, configs = {}, {}
    for t in tunes:
        seconds[t["program"]] = seconds.get(t["program"], 0.0) + t["seconds"]
        configs[t["program"]] = configs.get(t["program"], 0) + t["measured"]
    mean = sum(seconds.values()) / max(sum(configs.values()), 1)
    before = _recorded(rows)
    cells = []
    for row in (r for r in rows if r["kind"] == "everything"):
        saved = saving(row, before)
        each = {n: seconds[n] / configs[n] if configs.get(n) else mean for n in saved}
        full, total = sum(each.values()), sum(saved.values())
        order = sorted(saved, key=lambda n: -saved[n] / each[n])
        kept = np.cumsum([saved[n] for n in order]) / total
        chosen = [order[:np.searchsorted(kept, goal) + 1] for goal in (0.75, 0.9)]
        by_time = sorted(saved, key=lambda n: -row["rates"][n] * before[n]["jit_ms"])
        per_program = row["budget"] / len(saved)
        cells.append([f"{row['draw']}/{row['seed']}", *(f"{sum(each[n] for n in c) / full:.0%}" for c in chosen),
                      *(f"{_probed_to(c, by_time, each, PROBE, per_program) / full:.0%}" for c in chosen)])
    header = ("draw/seed", "foresight: 75%", "foresight: 90%", "probed in time order: 75%", "probed in time order: 90%")
    return harness.markdown(header, cells, align="lrrrr") + (
        f"\n\n(seconds a config measured for {len(seconds)} of {len(before)} programs; the others at the mean)")


def _probed_to(chosen: list[str], by_time: list[str], each: dict[str, float], probe: int, per_program: float) -> float:
    """Seconds, in units of a program's full tune at one config's cost, that probing in
    recorded-time order down to the last of `chosen` and tuning `chosen` on to the full budget
    take: what `time` spends when each probe tells truly."""
    depth = max(by_time.index(name) for name in chosen) + 1
    probes = sum(each[name] for name in by_time[:depth]) * probe / per_program
    return probes + sum(each[name] for name in chosen) * (per_program - probe) / per_program


def versus(rows: list[dict]) -> str:
    """LEARNED against each other allocation at the same configs, draw by draw: its saving over
    theirs and its saving per tuning second over theirs, each with a paired bootstrap over
    programs."""
    before = _recorded(rows)
    cells = []
    for ours, theirs in _pairs(rows, LEARNED):
        ratio, low, high = _paired_ratio(saving(ours, before), saving(theirs, before))
        time_ratio = ours["tuned"]["tuning_s"] / theirs["tuned"]["tuning_s"]
        cells.append([f"{ours['draw']}/{ours['seed']}", f"{ours['share']:g}", _kind(theirs),
                      f"{ratio:.2f}x [{low:.2f}, {high:.2f}]", f"{time_ratio:.2f}x",
                      f"{ratio / time_ratio:.2f}x [{low / time_ratio:.2f}, {high / time_ratio:.2f}]"])
    return harness.markdown(("draw/seed", "share", "against", f"{LEARNED}'s saving ÷ theirs [95% CI]",
                             "tuning time ÷ theirs", "saving per tuning second ÷ theirs"), cells, align="lllrrr")


def learned(rows: list[dict]) -> str:
    """What the learned parts earn (the goal: 1.25x, interval above 1): each allocation's saving
    per tuning second over its FLAT twin's, the geometric mean over every draw, seed and share
    run with both, its interval from resampling programs alike in every pair."""
    return "\n".join(_learned(rows, ours, flat) for flat, ours in FLAT.items())


def _learned(rows: list[dict], kind: str, flat: str) -> str:
    before = _recorded(rows)
    pairs = [(saving(ours, before), saving(theirs, before), ours["tuned"]["tuning_s"] / theirs["tuned"]["tuning_s"])
             for ours, theirs in _pairs(rows, kind) if _kind(theirs) == flat]
    if not pairs:
        return f"{kind} against {flat}: no paired runs yet"
    names = list(pairs[0][1])

    def pooled(pick: np.ndarray) -> float:
        logs = []
        for ours, theirs, time_ratio in pairs:
            a, b = (np.array([side[name] for name in names])[pick].sum() for side in (ours, theirs))
            logs.append(math.log(max(a, 1e-9) / max(b, 1e-9) / time_ratio))
        return math.exp(float(np.mean(logs)))

    draws = [pooled(pick) for pick in _resamples(len(names), 2000)]
    return (f"{kind} against {flat}, saving per tuning second, over {len(pairs)} paired runs: "
            f"{pooled(np.arange(len(names))):.2f}x [{np.percentile(draws, 2.5):.2f}, {np.percentile(draws, 97.5):.2f}]")


def agreement(rows: list[dict]) -> str:
    """Re-tunes agree (the goal: within 10%): per draw, allocation and share run with two or more
    seeds, the seeds' fleet savings a day and their spread."""
    before = _recorded(rows)
    groups: dict[tuple, list[tuple[int, float]]] = {}
    for row in rows:
        if row["kind"] in ALLOCATIONS:
            groups.setdefault((row["draw"], _label(row)), []).append((row["seed"], sum(saving(row, before).values())))
    cells = [[str(draw), label, " ".join(f"{seed}: {total:,.0f}" for seed, total in sorted(runs)),
              f"{max(t for _, t in runs) / min(t for _, t in runs) - 1:.0%}" if min(t for _, t in runs) > 0 else "—"]
             for (draw, label), runs in sorted(groups.items()) if len(runs) > 1]
    return harness.markdown(("draw", "allocation", "saved s/day by seed", "spread"), cells, align="llrr")


def _pairs(rows: list[dict], kind: str) -> list[tuple[dict, dict]]:
    """Each `kind` run with every other allocation's run of the same draw, seed and share."""
    runs = [row for row in rows if row["kind"] in ALLOCATIONS]
    key = lambda row: (row["draw"], row["seed"], _share(row), _equal(row), row.get("warm_start"))  # noqa: E731
    return [(ours, theirs) for ours in runs if _kind(ours) == kind
            for theirs in runs if _kind(theirs) not in (kind, "everything") and key(theirs) == key(ours)]


def _reference_key(row: dict) -> tuple[int, int]:
    """The (draw, seed) of the everything run the row's shares are of: its own seed's, or the
    seed whose tuning time gave its budget."""
    return row["draw"], row.get("reference_seed", row["seed"])


def _portfolio(allocation: str) -> bool:
    """Whether the allocation's tunes warm-start from the fleet portfolio (`tune`)."""
    return allocation in FLAT.values() or allocation == "time-probe2"


def _kind(row: dict) -> str:
    """The run's allocation; `time` run before rows said whether the fleet portfolio ordered
    the warm starts ran with it off (newest first), and reads as `time-flat`."""
    return "time-flat" if row["kind"] == "time" and "fleet_portfolio" not in row else row["kind"]


def _share(row: dict) -> float:
    """The run's budget as a share of everything's (runs before --share were at a quarter)."""
    return row.get("share", 1.0 if row["kind"] == "everything" else QUARTER)


def _equal(row: dict) -> str:
    """What the run's share is of (runs before --equal were at equal configs)."""
    return row.get("equal", "configs")


def _label(row: dict) -> str:
    share = _share(row)
    label = _kind(row) if share in (1.0, QUARTER) else f"{_kind(row)} at {share:g}"
    if "warm_start" in row:
        label += f", {row['warm_start']} winners first"
    return label + (", equal time" if row["kind"] != "everything" and _equal(row) == "time" else "")


def noise(rows: list[dict]) -> str:
    """Per program, hlotune.jit without a decision (jax.jit's executable, recorded) beside
    jax.jit: what the delivered speedup reads when nothing is applied."""
    runs = [_recorded(rows)]
    runs += [row["runs"] for row in rows if row["kind"] == "noise"]
    cells = [[name, f"{runs[0][name]['jit_ms']:.1f}", " ".join(f"{run[name]['delivered']:.3f}x" for run in runs)]
             for name in runs[0]]
    return harness.markdown(("program", "jax.jit ms", "A/A: delivered with no decision, each run"), cells, align="lrl")


def summary(rows: list[dict]) -> str:
    """Per allocation over the draws and seeds that have an `everything` run: its saving and
    tuning time as shares of everything's in the same draw and seed (median, and range)."""
    runs = [row for row in rows if row["kind"] in ALLOCATIONS]
    before = _recorded(rows)
    reference = {(r["draw"], r["seed"]): r for r in runs if r["kind"] == "everything"}
    shares: dict[str, list[tuple[float, float]]] = {}
    for row in runs:
        base = reference.get(_reference_key(row))
        if base is not None and row["kind"] != "everything" and not math.isnan(_shares(row, base, before)[0]):
            shares.setdefault(_label(row), []).append(_shares(row, base, before))
    cells = [[kind, str(len(pairs)), _spread([s for s, _ in pairs]), _spread([t for _, t in pairs])]
             for kind, pairs in shares.items()]
    return harness.markdown(("allocation", "fleets", "of everything's saving", "of everything's tuning time"),
                            cells, align="lrrr")


def plot(rows: list[dict], path: Path) -> None:
    """Each run's saving and tuning time as shares of everything's in its draw (the issue's goal:
    90% of the saving at a quarter of the time), an allocation a marker, a draw a colour."""
    before = _recorded(rows)
    runs = [row for row in rows if row["kind"] in ALLOCATIONS]
    reference = {row["draw"]: row for row in runs if row["kind"] == "everything" and row["seed"] == 0}
    figure, axes = harness.subplots(figsize=(6.5, 4))
    markers = dict(zip(ALLOCATIONS, "osDd^vPX"))
    for row in runs:
        saved, tuning = _shares(row, reference[row["draw"]], before)
        axes.scatter(100 * tuning, 100 * saved, marker=markers[_kind(row)], color=f"C{row['draw']}", s=50, alpha=0.5 if row["seed"] else 1.0)
    for kind, marker in markers.items():
        axes.scatter([], [], marker=marker, color="grey", label=kind)
    for draw in sorted(reference):
        axes.scatter([], [], marker="s", color=f"C{draw}", label=f"draw {draw}")
    axes.axvline(25, color="grey", linestyle=":")
    axes.axhline(90, color="grey", linestyle=":")
    axes.set(xlabel="tuning time, % of everything's", ylabel="saved a day, % of everything's",
             title="Fleet allocations at a quarter of everything's configs")
    axes.legend(fontsize=8, loc="lower right")
    harness.save_figure(figure, path)


def _recorded(rows: list[dict]) -> dict[str, dict]:
    """The recording's row per program (a grown fleet's records are its rows together): its
    jax.jit time, the accounting's reference."""
    return {name: run for row in rows if row["kind"] == "record" for name, run in row["before"].items()}


def _shares(row: dict, base: dict, before: dict[str, dict]) -> tuple[float, float]:
    """`row`'s saving a day and tuning time as shares of `base`'s, an `everything` run (the
    saving's share nan where `base` saves nothing)."""
    base_saving = sum(saving(base, before).values())
    return (sum(saving(row, before).values()) / base_saving if base_saving > 0 else math.nan,
            row["tuned"]["tuning_s"] / base["tuned"]["tuning_s"])


def _spread(values: list[float]) -> str:
    return f"{np.median(values):.0%} [{min(values):.0%}, {max(values):.0%}]"


def _bootstrap(saving: dict[str, float], resamples: int = 2000) -> tuple[float, float, float]:
    values = np.array(list(saving.values()))
    totals = [values[pick].sum() for pick in _resamples(len(values), resamples)]
    return float(values.sum()), float(np.percentile(totals, 2.5)), float(np.percentile(totals, 97.5))


def _paired_ratio(ours: dict[str, float], theirs: dict[str, float], resamples: int = 2000) -> tuple[float, float, float]:
    """sum(ours) / sum(theirs) over the same programs, and its interval resampling programs."""
    a, b = np.array([ours[name] for name in theirs]), np.array(list(theirs.values()))
    ratios = [a[pick].sum() / b[pick].sum() for pick in _resamples(len(a), resamples) if b[pick].sum() > 0]
    return float(a.sum() / b.sum()), float(np.percentile(ratios, 2.5)), float(np.percentile(ratios, 97.5))


def _resamples(count: int, resamples: int) -> list[np.ndarray]:
    """Bootstrap draws of `count` programs, the same for every statistic (seed 0)."""
    rng = np.random.default_rng(0)
    return [rng.integers(0, count, count) for _ in range(resamples)]


if __name__ == "__main__":
    main()
