"""Trial benchmark: is hlotune.jit never slower than jax.jit, process by process, once each
process has trialled its decision (AutoFDO v2, issue 60)?

Per program (fleet_programs.py), in fresh processes as a user's jobs are:

1. record: a process runs the program under `hlotune.jit`;
2. tune: `tune_recorded` (flags, `--budget`), as `hlotune tune NAME` does: the tune, its tuning
   time logged, a kept config verified beside jax.jit;
3. jobs: where a config was kept, `--processes` fresh processes each run the program `--calls`
   times under `hlotune.jit` (the trial takes the first calls; with `--seconds` past the trial's
   RECHECK_S, a decision kept by a small margin is tried again), then time, interleaved in that
   process (compiler/measurement/call_timing.py): what hlotune.jit now runs, the jax.jit wrapper it holds
   (`Jitted.jax_jit`: the executable its trial ran against), a second jax.jit of the function
   (jax reuses the compile: the same executable), a jax.jit of a wrapper of it (compiled
   again), the decision's own executable (`hlotune.compiled`), and the same config on the
   recorded program (the export) beside jax.jit of it;
4. planted: a second database gets, with `db import`, a config that disables fusion (slower on
   these programs); `--processes` fresh jobs run it, and each must reject it; the field retires
   it after RETIRE_AFTER processes, so the later jobs run no trial at all.

Each figure is the median over rounds of one round's ratio, with its 95% interval (`_ci`).
Per job: `after_trial` is jax.jit's call over hlotune.jit's (the goal: no job below 0.99x),
jax.jit being the wrapper hlotune.jit holds, so that a trial that kept it compares one executable
with itself; `itself` is that jax.jit's call over the second wrapper's (one executable: the
timing's own noise), `recompiled` over the second compile's (how far two compiles of one
program differ in one process);
`oracle` is max(1, jax.jit's over the decision's), what choosing per process with hindsight
keeps; `trial_cost` is the calls run at the losing executable times their excess over the
winner's median call, over the job's time in the program (the goal, for 200 calls or more: at
most 1%), besides the second compile (`compile_s`); `path` is the decision's speedup on the
user's function over the same config's on the recorded program (the goal: within 10%). Rows are
kept as they finish (--out, JSON lines), so a stopped run resumes.

    python benchmarks/trial_bench.py --programs jacobi2d euler2d cnn_sgd --out trial.jsonl
    python benchmarks/trial_bench.py --programs attention_adamw heat3d --seconds 15 --out near_ties.jsonl
    python benchmarks/trial_bench.py --report trial.jsonl
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import harness

CALLS = 200
ROUNDS = 15
UNFUSED = {"flags": {"xla_disable_hlo_passes": ["fusion"]}}
FIGURES = ("after_trial", "itself", "recompiled", "oracle", "decision", "recorded")  # a job's, as the table shows them
# each figure of a job but the oracle: the callable timed over the one it is a speedup of, round by round
PAIRED = {"after_trial": ("jit", "hlotune.jit"), "itself": ("jit", "again"), "recompiled": ("jit", "apart"),
          "decision": ("jit", "tuned"),
          "recorded": ("recorded_jit", "recorded")}


def _job(name: str, db: str, calls: int, seconds: float, rounds: int) -> dict:
    """In a fresh process: the program's calls under hlotune.jit (`calls`, and on until
    `seconds` have passed), then the interleaved timing."""
    import time

    import jax

    import hlotune
    from fleet_programs import BY_NAME
    from hlotune.compiler.measurement.call_timing import interleaved_call_times
    from hlotune.fleet.recorder import recorder_for
    from hlotune.tuning.storage import TuningDatabase

    fn, args = BY_NAME[name].make()
    ours = hlotune.jit(fn, db=db)
    out, made, until = None, 0, time.monotonic() + seconds
    while made < calls or time.monotonic() < until:
        out, made = ours(*args), made + 1
    jax.block_until_ready(out)
    choice = ours.choice(*args)
    row = {"program": name, "source": choice.source, "fingerprint": choice.fingerprint}
    trial = recorder_for(db).trials.get(choice.fingerprint)
    if trial is None:
        return row
    with TuningDatabase(db) as database:
        config = database.state(choice.fingerprint).decision.chosen
    plain, again, apart = ours.jax_jit, jax.jit(fn), jax.jit(lambda *a: fn(*a))
    tuned = hlotune.compiled(fn, *args, config=config.to_dict())
    recorded, recorded_plain = _recorded(db, choice.fingerprint, config)
    times = interleaved_call_times({"jit": lambda: plain(*args), "again": lambda: again(*args),
                                    "apart": lambda: apart(*args),
                                    "hlotune.jit": lambda: ours(*args),
                                    "tuned": lambda: tuned(*args), "recorded": recorded,
                                    "recorded_jit": recorded_plain}, rounds=rounds, block_s=0.1)
    median = {key: statistics.median(values) for key, values in times.items()}
    paired = {name: _paired(times[over], times[under]) for name, (over, under) in PAIRED.items()}
    outcome = trial.outcome()
    winner_s, loser_s = ((outcome.tuned_ns, outcome.jit_ns) if outcome.verdict == "kept"
                         else (outcome.jit_ns, outcome.tuned_ns))
    excess = max(0.0, (loser_s - winner_s) / 1e9) * trial.pairs
    return row | {"verdict": outcome.verdict, "rechecked": trial.recheck, "calls": made,
                  "pairs": trial.pairs, "wins": trial.wins,
                  "trial_speedup": trial.speedup, "ratios": [round(r, 3) for r in trial.ratios],
                  "compile_s": trial.compile_s,
                  **{name: ratio for name, (ratio, _) in paired.items()},
                  **{f"{name}_ci": interval for name, (_, interval) in paired.items()},
                  "oracle": max(1.0, paired["decision"][0]),
                  "trial_cost": excess / (made * winner_s / 1e9), "jit_ms": median["jit"] * 1e3}


def _paired(over, under) -> tuple[float, list[float]]:
    """The median of the rounds' ratios `over` / `under` (each round times both, close in time,
    so the drift of a shared machine cancels) and its 95% interval."""
    from hlotune.compiler.measurement.measure import median_interval

    ratios = over / under
    return float(statistics.median(ratios)), list(median_interval(ratios))


def _recorded(location: str, fingerprint: str, config) -> tuple:
    """The recorded program compiled with `config` and by jax.jit, as callables of no arguments."""
    import jax

    from hlotune.fleet.recorded import recorded_spec
    from hlotune.programs import load_program
    from hlotune.tuning.compiled import compile_program
    from hlotune.tuning.storage import TuningDatabase

    with TuningDatabase(location) as db:
        loaded = load_program(recorded_spec(db, next(r for r in db.recordings() if r.fingerprint == fingerprint)))
    tuned, plain = compile_program(loaded, config), jax.jit(loaded.fn)
    return (lambda: tuned(*loaded.args)), (lambda: plain(*loaded.args))


def _in_process(name: str, db: str, calls: int, rounds: int, seconds: float = 0.0) -> dict:
    command = [sys.executable, __file__, "--job", name, "--db", db, "--calls", str(calls), "--seconds", str(seconds),
               "--rounds", str(rounds)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"{name}: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(name: str, folder: Path, budget: int, seed: int, processes: int, calls: int, seconds: float,
        rounds: int) -> list[dict]:
    from hlotune.fleet.recorded import find_recording, tune_recorded
    from hlotune.fleet.savings import fleet_savings
    from hlotune.tuning.options import TuneOptions
    from hlotune.tuning.storage import TuningDatabase

    db, planted = str(folder / f"{name}.sqlite"), str(folder / f"{name}-planted.sqlite")
    fingerprint = _in_process(name, db, 3, rounds)["fingerprint"]
    with TuningDatabase(db) as database:
        recording = find_recording(database, fingerprint)
    result = tune_recorded(db, recording, TuneOptions(budget=budget, seed=seed))
    tune = {"program": name, "kind": "tuned", "reported": result.speedup, "kept_default": result.kept_default,
            "verified": result.verified_speedup, "tune_s": result.seconds}
    with TuningDatabase(db) as database:
        trialled = database.state(fingerprint).candidate is not None
    rows = [tune | {"job": i} | _in_process(name, db, calls, rounds, seconds)
            for i in range(processes if trialled else 0)]
    tune["state"] = "trialled" if trialled else "nothing to trial"
    with TuningDatabase(db) as database:  # what fleet report states of the jobs' saving
        tune["reported_share"] = next(p.saved_share for p in fleet_savings(database).programs
                                      if p.fingerprint == fingerprint)
    if _in_process(name, planted, 3, rounds)["fingerprint"] != fingerprint:
        tune["state"] = "its fingerprint changes from process to process: no decision applies"
        return [tune] + rows
    (folder / "unfused.json").write_text(json.dumps({"program": fingerprint, "config": UNFUSED}))
    with TuningDatabase(planted) as database:
        database.import_decision(folder / "unfused.json")
    rows += [{"program": name, "kind": "planted", "job": i} | _in_process(name, planted, calls, rounds)
             for i in range(processes)]
    with TuningDatabase(planted) as database:
        rows[-1]["planted_state"] = database.state(fingerprint).state
    return [tune] + rows


def report(rows: list[dict]) -> str:
    cells = []
    for row in (r for r in rows if "job" in r):
        trialled = "verdict" in row
        cells.append([row["program"], row["kind"], str(row.get("job", "")), row["source"],
                      row.get("verdict", "no trial") + (" (second trial)" if row.get("rechecked") else ""),
                      f"{row['pairs']}" if trialled else "",
                      *(f"{row[k]:.3f}x" if k in row else "" for k in FIGURES),
                      f"{row['trial_cost']:.2%}" if trialled else "", f"{row['compile_s']:.2f}" if trialled else "",
                      row.get("planted_state", "")])
    header = ("program", "decision", "job", "runs", "trial", "pairs", "after trial", "itself", "recompiled", "oracle",
              "decision's", "on recording", "trial cost", "compile s", "field")
    tuned = [r for r in rows if r["kind"] == "tuned" and "after_trial" in r]
    planted = [r for r in rows if r["kind"] == "planted"]
    lines = [harness.markdown(header, cells, align="llrllrrrrrrrrrl"), ""]
    if tuned:
        kept = sum(1 - 1 / r["after_trial"] for r in tuned)  # shares of jax.jit's time saved, summed
        oracle = sum(1 - 1 / r["oracle"] for r in tuned)
        stated = sum(next(t["reported_share"] for t in rows if t["program"] == r["program"] and "state" in t)
                     for r in tuned)
        lines.append(f"tuned jobs: {len(tuned)}; lowest after trial {min(r['after_trial'] for r in tuned):.3f}x; "
                     f"saving kept over the oracle's {kept / oracle if oracle else float('nan'):.2f}; "
                     f"delivered over what fleet report states {kept / stated if stated else float('nan'):.2f}; "
                     f"largest trial cost {max(r['trial_cost'] for r in tuned):.2%}")
    for row in (r for r in rows if "state" in r):
        lines.append(f"{row['program']}: tuned {row['reported']:.3f}x ({'default kept' if row['kept_default'] else 'kept'}), "
                     f"verified {row['verified'] or 0:.3f}x, {row['state']}; fleet report's saved share "
                     f"{row['reported_share']:.1%}")
    if rechecked := [r for r in tuned if r.get("rechecked")]:
        lines.append(f"second trials (a first kept below RECHECK_BELOW): {len(rechecked)} of {len(tuned)} tuned jobs; "
                     f"jax.jit's executable put back in {sum(r['verdict'] != 'kept' for r in rechecked)}")
    if planted:
        lines.append(f"planted jobs: {len(planted)}; kept in {sum(r.get('verdict') == 'kept' for r in planted)}; "
                     f"ran jax.jit's in {sum(r['source'] == 'jit' for r in planted)}")
    lines += _spread_lines([r for r in rows if "after_trial" in r])
    return "\n".join(lines)


def _spread_lines(jobs: list[dict]) -> list[str]:
    """Every trialled job's after-trial figure against the noise of its own timing: the jobs
    shown below 0.99x (their interval's top under it), and the timing's noise: one executable
    over itself, and over a second compile of its program."""
    if not jobs or "after_trial_ci" not in jobs[0]:
        return []
    below = [r for r in jobs if r["after_trial_ci"][1] < 0.99]
    itself, recompiled = (sorted(r[k] for r in jobs) for k in ("itself", "recompiled"))
    names = ", ".join(f"{r['program']} {r['kind']} {r['job']}" for r in below) or "none"
    return [f"trialled jobs: {len(jobs)}; after trial {min(r['after_trial'] for r in jobs):.3f}x at the lowest; "
            f"shown below 0.99x (95% interval): {len(below)} ({names}); "
            f"jax.jit over itself {itself[0]:.3f}-{itself[-1]:.3f}x, over a second compile "
            f"{recompiled[0]:.3f}-{recompiled[-1]:.3f}x"]


def main() -> None:
    if "--job" in sys.argv:
        value = lambda flag: sys.argv[sys.argv.index(flag) + 1]  # noqa: E731
        print(json.dumps(_job(value("--job"), value("--db"), int(value("--calls")), float(value("--seconds")),
                              int(value("--rounds")))))
        return
    parser = harness.parser(__doc__, programs=["jacobi2d", "euler2d", "tv3d", "kmeans", "cnn_sgd", "rk4_lorenz96"],
                            seed=0)
    parser.add_argument("--budget", type=int, default=16, help="configs a tune evaluates (default 16)")
    parser.add_argument("--processes", type=int, default=5, help="fresh jobs per decision (default 5)")
    parser.add_argument("--calls", type=int, default=CALLS, help=f"calls a job makes (default {CALLS})")
    parser.add_argument("--seconds", type=float, default=0.0,
                        help="a tuned decision's job calls on until this many seconds have passed (past the "
                             "trial's RECHECK_S, a decision kept by a small margin is tried again in the job)")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="interleaved rounds after the calls")
    parser.add_argument("--report", type=Path, help="print the table of a results file and stop")
    harness.add_common(parser, out=None)
    args = parser.parse_args()
    if args.report:
        print(report(harness.read_rows(args.report, lines=True)))
        return
    log = harness.RowLog(args.out or Path(tempfile.mkdtemp()) / "rows.jsonl", lines=True)
    with tempfile.TemporaryDirectory() as folder:
        for name in log.todo("program", args.programs):
            rows = run(name, Path(folder), args.budget, args.seed, args.processes, args.calls, args.seconds,
                       args.rounds)
            print(f"{name}: {len(rows)} jobs", file=sys.stderr)
            log.add(*rows)
    print(report([row for row in log.rows if row["program"] in args.programs]))
    print(f"\n{os.cpu_count()} cores; budget {args.budget}, seed {args.seed}, {args.processes} jobs of "
          f"{args.calls} calls (and {args.seconds:g} s), {args.rounds} rounds.")


if __name__ == "__main__":
    main()
