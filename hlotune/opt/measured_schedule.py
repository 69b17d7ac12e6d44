"""`hlotune opt schedule PROGRAM --measure`: GO's scheduling task on XLA:CPU, compiled and run.

The program's entry computation is ordered four ways (hlotune.opt.schedules) and each order is
compiled by XLA:CPU at POST_SCHEDULER (hlotune.compiler.xla.schedule):

- xla: the best of XLA:CPU's own schedulers (`xla_cpu_scheduler_type`: default, memory,
  concurrency) by peak bytes, each listed with its peak;
- depth_first and memory_greedy: the baselines;
- policy: GO's policy (zero-shot) gives priorities, sampled `samples` times besides its greedy
  ones; each distinct order is compiled and the lowest peak kept. Peak bytes need a compile,
  not a run, so the choice is made on XLA's own buffer assignment, not on an estimate;
- search (with a budget): a hill climb from the lower peak of the policy's and XLA's, one
  instruction moved at a time (hlotune.opt.schedules.Moves), each move compiled and kept when
  its peak is no higher, as GO's search refines a sampled placement.

Peak bytes are the executable's temporary bytes (what an order changes). Times are measured in
this process, interleaved (hlotune.compiler.measurement.call_timing), beside a second compile of XLA's best
order: `ms` is the minimum over rounds of a block's mean, and `noise` how far XLA's two
replicas differ (relative), what "no change" looks like. Every order's outputs are checked
against those of XLA's default schedule.

The schedule `chosen` is the lowest peak of the policy's, the search's and XLA's; XLA's unless
another is below it, and the report says so when neither beats it.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from typing import Any

from hlotune.errors import HlotuneError
from hlotune.progress import note

ROUNDS = 20
ORDERS = ("policy", "xla", "depth_first", "memory_greedy")
SEARCH = "search"


@dataclass(frozen=True)
class MeasuredOrder:
    """One order of the entry computation, compiled and run."""

    peak_bytes: int
    ms: float  # minimum over rounds of a block's mean call time
    ms_median: float
    outputs_ok: bool
    max_rel_error: float

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class ScheduleReport:
    """A program's orders: peaks and times measured on this machine."""

    graph: str
    instructions: int  # of the entry computation
    results: dict[str, MeasuredOrder]  # ORDERS (and SEARCH with a budget) -> measured
    xla_schedulers: dict[str, int]  # each XLA:CPU scheduler -> its peak bytes
    xla_best: str  # the scheduler `results["xla"]` is
    policy_orders: int  # distinct orders compiled (of the sampled and greedy ones)
    noise: float  # relative difference of the two replicas of XLA's best
    search_s: float  # building the orders and compiling them
    moves: int = 0  # the search's moves compiled (distinct orders)
    kept: int = 0  # moves kept (peak no higher than before)

    @property
    def policy_beats_xla(self) -> bool:
        return self.results["policy"].peak_bytes < self.results["xla"].peak_bytes

    @property
    def chosen(self) -> str:
        """The lowest peak; XLA's on a tie, then the policy's."""
        return min(("xla", "policy", SEARCH), key=lambda name: (
            self.results[name].peak_bytes if name in self.results else float("inf"),
            name != "xla"))

    def to_json(self) -> dict:
        return {
            "graph": self.graph, "task": "schedule", "measured": True,
            "instructions": self.instructions,
            "results": {name: order.to_json() for name, order in self.results.items()},
            "xla_schedulers": dict(self.xla_schedulers), "xla_best": self.xla_best,
            "chosen": self.chosen, "policy_beats_xla": self.policy_beats_xla,
            "policy_orders": self.policy_orders, "noise": self.noise, "search_s": self.search_s,
            "search_moves": self.moves, "search_kept": self.kept,
        }


def measure_schedules(spec: str, policy: Any, *, samples: int, seed: int = 0,
                      rounds: int = ROUNDS, budget_s: float = 0.0,
                      max_moves: int | None = None) -> ScheduleReport:
    """Compile `spec` under every order, pick the policy's best by peak, search from the better
    of it and XLA's for `budget_s` seconds (or `max_moves` compiles), and time them all."""
    from hlotune.compiler.configs.layouts import DEFAULT_LAYOUT, LayoutSpace
    from hlotune.compiler.xla.schedule import SCHEDULERS, EntrySchedule, compile_schedule
    from hlotune.hlo.sources import from_text
    from hlotune.opt import schedules
    from hlotune.programs import load_program

    start = time.perf_counter()
    layouts = LayoutSpace(load_program(spec))
    lowered = layouts.build(DEFAULT_LAYOUT).lower(*layouts.leaves)
    by_xla = {name: compile_schedule(lowered, scheduler=name) for name in SCHEDULERS}
    best = min(by_xla, key=lambda name: by_xla[name].peak_bytes)  # ties: the first, default
    text = by_xla["default"].text
    ops = schedules.EntryOps.of(EntrySchedule.parse(text), from_text(text))
    candidates = dict.fromkeys(schedules.policy_orders(policy, ops, samples, seed))
    compiled = {
        "policy": min((compile_schedule(lowered, order) for order in candidates),
                      key=lambda c: c.peak_bytes),
        "xla": by_xla[best],
        "depth_first": compile_schedule(lowered, schedules.depth_first(ops)),
        "memory_greedy": compile_schedule(lowered, schedules.memory_greedy(ops)),
        "replica": compile_schedule(lowered, by_xla[best].order),
    }
    moves = kept = 0
    if budget_s > 0 or max_moves:
        start_from = min(compiled["xla"], compiled["policy"], key=lambda c: c.peak_bytes)
        climb = ScheduleClimber(lowered, schedules.Moves(ops), start_from, seed)
        compiled[SEARCH] = climb.run(budget_s if budget_s > 0 else float("inf"), max_moves)
        moves, kept = climb.moves, climb.kept
    search_s = time.perf_counter() - start
    results, noise = _run(compiled, by_xla["default"], layouts.placed_args(DEFAULT_LAYOUT),
                          rounds, seed)
    return ScheduleReport(spec, len(ops.entry.names), results,
                          {name: c.peak_bytes for name, c in by_xla.items()}, best,
                          len(candidates), noise, search_s, moves, kept)


class ScheduleClimber:
    """A hill climber over entry orders, judged by XLA's buffer assignment: each move is one
    instruction moved (hlotune.opt.schedules.Moves), compiled, and kept when its peak is no
    higher (a plateau is crossed, not stopped at); no order is compiled twice."""

    def __init__(self, lowered: Any, moves: Any, start: Any, seed: int) -> None:
        import numpy as np

        self.lowered, self.steps, self.best = lowered, moves, start
        self.rng = np.random.default_rng(seed)
        self.seen = {start.order}
        self.moves = self.kept = 0

    def run(self, budget_s: float, max_moves: int | None) -> Any:
        """The lowest-peak compile found in `budget_s` seconds or `max_moves` moves."""
        from hlotune.compiler.xla.schedule import compile_schedule

        deadline, draws = time.perf_counter() + budget_s, 0
        while time.perf_counter() < deadline and (max_moves is None or self.moves < max_moves):
            draws += 1
            if draws > 20 * (self.moves + 10):  # nothing new to draw: a tiny entry, all tried
                break
            order = self.steps.move(self.best.order, self.rng)
            if order is None or order in self.seen:
                continue
            self.seen.add(order)
            self.moves += 1
            candidate = compile_schedule(self.lowered, order)
            if candidate.peak_bytes <= self.best.peak_bytes:
                self.best, self.kept = candidate, self.kept + 1
        return self.best


def _run(compiled: dict, default: Any, args: list, rounds: int,
         seed: int) -> tuple[dict[str, MeasuredOrder], float]:
    """Each order timed beside the replica of XLA's and checked against XLA's default: the
    measured orders, and the replicas' relative difference."""
    import jax
    import numpy as np

    from hlotune.compiler.measurement.output_check import check_outputs
    from hlotune.compiler.measurement.call_timing import interleaved_call_times

    def outputs(executable) -> list:
        return [np.asarray(x) for x in jax.tree_util.tree_leaves(executable(*args))]

    reference = outputs(default.executable)
    times = interleaved_call_times({name: _caller(c.executable, args) for name, c in compiled.items()},
                                   rounds=rounds, seed=seed)
    results = {}
    for name in [*ORDERS, *([SEARCH] if SEARCH in compiled else [])]:
        check = check_outputs(outputs(compiled[name].executable), reference)
        results[name] = MeasuredOrder(compiled[name].peak_bytes, float(times[name].min() * 1e3),
                                      float(np.median(times[name]) * 1e3), check.ok,
                                      check.max_rel_error)
    fast, slow = sorted([times["xla"].min(), times["replica"].min()])
    return results, float(slow / fast - 1.0)


def format_report(report: ScheduleReport) -> str:
    """The report as a table, with the verdict on the policy."""
    lines = [f"{report.graph}: {report.instructions} entry instructions, MEASURED on this "
             f"machine (peak = XLA's temporary bytes; ms = min over rounds; noise "
             f"{report.noise:.1%})",
             f"{'order':<14} {'peak bytes':>12} {'ms':>9} {'median ms':>10}  outputs"]
    for name, order in report.results.items():
        ok = "ok" if order.outputs_ok else f"DIFFER ({order.max_rel_error:.3g})"
        lines.append(f"{name:<14} {order.peak_bytes:>12,} {order.ms:>9.3f} "
                     f"{order.ms_median:>10.3f}  {ok}")
    schedulers = ", ".join(f"{name} {peak:,}" for name, peak in report.xla_schedulers.items())
    lines.append(f"XLA's schedulers (peak bytes): {schedulers}; best: {report.xla_best}")
    xla = report.results["xla"].peak_bytes
    lines.append(f"policy ({report.policy_orders} distinct orders) "
                 f"{report.results['policy'].peak_bytes / xla - 1:+.1%} peak vs XLA's best")
    if SEARCH in report.results:
        lines.append(f"search ({report.moves} moves compiled, {report.kept} kept) "
                     f"{report.results[SEARCH].peak_bytes / xla - 1:+.1%} peak vs XLA's best")
    lines.append(f"chosen: {report.chosen}" if report.chosen != "xla"
                 else "chosen: xla (nothing beat XLA's best peak)")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """The `opt schedule --measure` handler (hlotune.cli hands it to hlotune.opt.commands:
    a real compile is a stage above opt)."""
    policy = measured_policy(args, "schedule")
    search = f", then searching for {args.budget:g} s" if args.budget else ""
    note(f"compiling {args.graph} under XLA's, the baselines' and {args.samples + 1} policy "
         f"orders{search}", show=not args.quiet)
    report = measure_schedules(args.graph, policy, samples=args.samples, seed=args.seed,
                               budget_s=args.budget)
    print(json.dumps(report.to_json()) if args.json else format_report(report))
    return 0


def measured_policy(args: argparse.Namespace, task: str) -> Any:
    """The policy an `opt TASK --measure` run applies zero-shot (the shipped one by default),
    after checking that the command line asks for nothing only the simulated task does."""
    from hlotune.opt.commands import PRETRAINED_DIR
    from hlotune.opt.policy import GOPolicy, trained_tasks
    from hlotune.programs import is_program_spec

    if not is_program_spec(args.graph):
        raise HlotuneError(f"--measure compiles and runs a program: give a program spec (zoo:, "
                           f"corpus:, go:, file.py:FACTORY), not {args.graph!r}")
    unsupported = [flag for flag, value in (("--devices", args.devices), ("--iterations", args.iterations),
                                             ("--trace", args.trace), ("--plot", args.plot)) if value]
    if args.budget and task != "schedule":  # schedule --measure searches orders with it
        unsupported.insert(0, "--budget")
    if unsupported:
        raise HlotuneError(f"{unsupported[0]} is for the simulated task; --measure applies the "
                           "policy zero-shot on this machine")
    if args.budget < 0:
        raise HlotuneError(f"--budget must not be negative, got {args.budget:g}")
    if args.samples < 0:
        raise HlotuneError(f"--samples must not be negative, got {args.samples}")
    folder = args.policy or PRETRAINED_DIR
    policy, training = GOPolicy.load(folder)
    if task not in trained_tasks(training):
        raise HlotuneError(f"{folder}: this policy was not trained to {task}")
    return policy


def _caller(executable: Any, args: list):
    return lambda: executable(*args)
