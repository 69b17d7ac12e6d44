"""`hlotune opt`: GO-style placement, scheduling and fusion on the SIMULATED machine.

The machine is DeviceModel.uniform(N): N identical, illustrative V100-class devices (see
hlotune.opt.device); every step time printed is the simulator's, not a measurement.

`--policy pretrained` is the policy shipped in hlotune/opt/pretrained/ (trained on zoo and GO
graphs for 2, 4 and 8 devices and every task: see its config.json); a folder of that name is
`--policy ./pretrained`. Without --policy, a fresh policy is trained on the graph itself first,
for --iterations PPO iterations (DEFAULT_ITERATIONS by default: 5 to 15 s for zoo graphs of 170
to 750 ops on one CPU thread), and that training counts in the reported search time. With
--policy the policy is applied zero-shot, or fine-tuned on the graph for --iterations first.
--budget adds policy-guided hill climbing after the sampling (hlotune.opt.local_search); with
`schedule --measure`, a hill climb over real orders, each move compiled.

With --json stdout holds one JSON object per graph and nothing else: {"graph", "devices", "tasks",
"simulated": true, "results": {policy, human, metis, hdp, random: step seconds or null},
"speedups", "oom", "search_s"}. For schedule and fuse, "human" is HEFT and greedy fusion, and
"metis" and "hdp" are null (see hlotune.opt.report). `opt train --json` prints one object: the
training summary saved in the policy's config.json, with "out".

--trace and --plot write the policy's best step as the simulator ran it (hlotune.opt.trace);
with several graphs, OUT-0.json, OUT-1.json, ...

`--measure` is the one path that is not simulated: `schedule` orders the program's real entry
computation on XLA:CPU and reports measured peak bytes and times (hlotune.opt.
measured_schedule); `fuse` splits and merges XLA:CPU's own fusions and measures the best few
beside XLA's (hlotune.opt.measured_fusion); `train --measure` fine-tunes the fusion head on
measured speedups (hlotune.opt.fusion_fine_tune).

Heavy modules (torch, jax) load inside the handlers so that `hlotune --help` stays fast.
"""

from __future__ import annotations

import argparse
import copy
import importlib
import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from hlotune.errors import HlotuneError
from hlotune.progress import add_quiet, note, progress_bar

if TYPE_CHECKING:
    from hlotune.opt.costs import OpGraph

Handler = Callable[[argparse.Namespace], int]
DEFAULT_ITERATIONS = 100
DEFAULT_SAMPLES = 64
PRETRAINED = "pretrained"
PRETRAINED_DIR = Path(__file__).resolve().parent / "pretrained"


def _measured(module: str) -> Handler:
    """A task's --measure handler, imported when run: the real compiler loads only then."""
    def run(args: argparse.Namespace) -> int:
        return importlib.import_module(f"hlotune.opt.{module}").run(args)
    return run


MEASURED: Mapping[str, Handler] = MappingProxyType({
    "schedule": _measured("measured_schedule"), "fuse": _measured("measured_fusion"),
    "train": _measured("fusion_fine_tune")})


MEASURE_HELP = {
    "schedule": "schedule the program for real on XLA:CPU: MEASURED results on this machine "
    "instead of simulated ones",
    "fuse": "evaluate the policy on the real compiler: its decisions applied to XLA:CPU's own "
    "fusions and MEASURED beside XLA's, greedy and random (tune --space fusion searches the "
    "same decisions; opt train --measure fine-tunes the policy on them)",
}


def add_commands(subparsers, measured: Mapping[str, Handler] = MEASURED) -> None:
    """Register `opt` and its sub-commands on the main parser's subparsers. `measured` gives
    each task's --measure handler: the real compiler's path (opt/measured_*.py)."""
    opt = subparsers.add_parser(
        "opt",
        help="GO-style device placement, scheduling and fusion (SIMULATED)",
        description="Optimise a program's op graph on a simulated machine of N devices with "
        "an RL policy (GO, Zhou et al. 2020) and compare it with the baselines. Step times "
        "are the simulator's (hlotune.opt.simulator), not measurements.",
    )
    commands = opt.add_subparsers(title="opt commands", required=True, metavar="COMMAND")
    for task, what in (("place", "a device per op"), ("schedule", "a priority per op"),
                       ("fuse", "which ops fuse into their consumer")):
        command = commands.add_parser(
            task,
            help=f"choose {what}; table of SIMULATED step times vs the baselines",
            description=f"Choose {what} of PROGRAM_OR_GRAPH with the policy (best of "
            "--samples sampled assignments) and print the SIMULATED step times of the policy "
            "and the baselines, with speedups and search time.",
        )
        command.add_argument("graph", metavar="PROGRAM_OR_GRAPH",
                             help="zoo:, corpus: or go:NAME[@VARIANT], file.py:FACTORY, HLO "
                             "text or a .pb")
        command.add_argument("--devices", type=int, metavar="N",
                             help="simulated identical devices (DeviceModel.uniform); required "
                             "unless --measure")
        if task in measured:
            command.add_argument("--measure", action="store_true", help=MEASURE_HELP[task])
            command.set_defaults(measured=measured[task])
        if task == "fuse" and task in measured:
            command.add_argument("--per-method", type=int, default=4, metavar="K",
                                 help="with --measure: configs measured per method (the "
                                 "policy's best-ranked, random), beside XLA's fusion (default 4)")
        command.add_argument("--policy", type=policy_folder, metavar="DIR",
                             help=f"a trained policy, or {PRETRAINED!r} for the shipped one "
                             "(default: train one on this graph first)")
        command.add_argument("--iterations", type=int, metavar="I",
                             help="PPO iterations on this graph before the search (default "
                             f"{DEFAULT_ITERATIONS} without --policy, 0 with it)")
        command.add_argument("--samples", type=int, default=DEFAULT_SAMPLES, metavar="K",
                             help=f"assignments the search samples (default {DEFAULT_SAMPLES})")
        command.add_argument("--budget", type=float, default=0.0, metavar="SECONDS",
                             help="after sampling, hill-climb from the best assignment until "
                             "SECONDS of search have passed (default 0: sampling only); "
                             "schedule --measure: moves of the best order, each compiled")
        command.add_argument("--seed", type=int, default=0)
        command.add_argument("--json", action="store_true", help="print one JSON object per graph")
        command.add_argument("--trace", type=Path, metavar="OUT.json",
                             help="write the policy's SIMULATED step as a Chrome trace / "
                             "Perfetto JSON (one track per device and per link)")
        command.add_argument("--plot", type=Path, metavar="OUT.png",
                             help="write the policy's SIMULATED step as a Gantt chart")
        add_quiet(command)
        command.set_defaults(run=optimise, opt_task=task)

    train = commands.add_parser(
        "train",
        help="train a policy on a set of programs (SIMULATED rewards)",
        description="Train one policy with PPO on every PROGRAM x N devices x TASKS, round "
        "robin, and write it to DIR (config.json + policy.safetensors).",
    )
    train.add_argument("--programs", nargs="+", required=True, metavar="SPEC")
    train.add_argument("--devices", nargs="+", type=int, metavar="N",
                       help="simulated machine sizes (required unless --measure)")
    train.add_argument("--tasks", nargs="+", default=["place", "schedule", "fuse"],
                       metavar="TASKS", help="task sets, each like place or place+fuse "
                       "(default: place schedule fuse, each alone)")
    train.add_argument("--out", type=Path, required=True, metavar="DIR")
    train.add_argument("--iterations", type=int, metavar="I",
                       help=f"PPO iterations per problem (default {DEFAULT_ITERATIONS}); with "
                       "--measure, rounds over the programs (default 2)")
    train.add_argument("--architecture", default="summary", metavar="NAME",
                       help="the policy's attention: summary (default) or recurrent (GO's "
                       "segment recurrence, with a layer per task)")
    train.add_argument("--curriculum", action="store_true",
                       help="start on the smallest graphs and take in larger ones")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    if "train" in measured:
        train.add_argument("--measure", action="store_true",
                           help="fine-tune the opt fuse policy on the real compiler: its fusion "
                           "head learns from MEASURED speedups of the programs' XLA:CPU fusions "
                           "on this machine (--policy, fuse-trained, default the shipped one; "
                           "--iterations rounds, --samples per program and round); opt fuse "
                           "--measure evaluates the result")
        train.add_argument("--policy", type=policy_folder, metavar="DIR",
                           help=f"with --measure: the policy to start from (default {PRETRAINED!r})")
        train.add_argument("--samples", type=int, default=8, metavar="K",
                           help="with --measure: fuse assignments measured per program and round (default 8)")
        train.set_defaults(measured=measured["train"])
    add_quiet(train)
    train.set_defaults(run=train_policy)


def optimise(args: argparse.Namespace) -> int:
    """`opt place|schedule|fuse`: search, compare with the baselines, print the table."""
    if getattr(args, "measure", False):
        return args.measured(args)
    from hlotune.opt.device import DeviceModel
    from hlotune.opt.policy import GOPolicy, trained_tasks
    from hlotune.opt.ppo import PPOSettings, Problem, search, train
    from hlotune.opt.report import compare, format_table
    from hlotune.opt.trace import numbered, write_schedule

    if args.devices is None:
        raise HlotuneError(f"opt {args.opt_task} needs --devices N, the simulated machine's size "
                           "(opt schedule --measure runs on this machine instead)")
    _check_devices([args.devices])
    _check_counts(iterations=args.iterations or 0, samples=args.samples, budget=args.budget)
    task = args.opt_task
    iterations = args.iterations
    if args.policy is None:
        iterations = DEFAULT_ITERATIONS if iterations is None else iterations
    else:
        loaded, training = GOPolicy.load(args.policy)
        iterations = iterations or 0
        if not iterations and task not in trained_tasks(training):
            raise HlotuneError(f"{args.policy}: this policy was not trained to {task} "
                               "(train it with --tasks, or fine-tune with --iterations)")

    devices = DeviceModel.uniform(args.devices)
    comparisons = []
    graphs = load_graphs(args.graph)
    for index, (name, graph) in enumerate(graphs):
        problem = Problem.make(graph, devices, [task], name=name)
        # Each graph starts from the same weights: fine-tuning on one must not leak to the next.
        policy = GOPolicy(seed=args.seed) if args.policy is None else copy.deepcopy(loaded)
        start = time.perf_counter()
        if iterations:
            with progress_bar(total=iterations, show=not args.quiet, desc=f"PPO {name}",
                              unit="it", leave=False) as bar:
                train(policy, [problem], PPOSettings(iterations=iterations, seed=args.seed),
                      lambda log: _advance(bar, log))
        found = search(policy, problem, args.samples, args.seed, budget_s=args.budget)
        about = {"graph": name, "devices": args.devices, "task": task, "method": "policy"}
        write_schedule(graph, devices, found.result, about, numbered(args.trace, index, len(graphs)),
                       numbered(args.plot, index, len(graphs)))
        comparisons.append(compare(problem, found, time.perf_counter() - start, args.seed))
    if args.json:
        for comparison in comparisons:
            print(json.dumps(comparison.to_json()))
    else:
        print(format_table(comparisons))
    return 0


def _advance(bar, log) -> None:
    bar.update()
    bar.set_postfix(reward=f"{log.mean_reward:+.3f}")


def train_policy(args: argparse.Namespace) -> int:
    """`opt train`: one policy, PPO over every program x devices x task set, saved to --out."""
    from hlotune.opt.device import DeviceModel
    from hlotune.opt.policy import GOPolicy, PolicySettings, task_set
    from hlotune.opt.ppo import PPOSettings, Problem, train

    if getattr(args, "measure", False):
        args.iterations = 2 if args.iterations is None else args.iterations
        _check_counts(iterations=args.iterations, samples=args.samples)
        return args.measured(args)
    if not args.devices:
        raise HlotuneError("opt train needs --devices N ..., the simulated machines' sizes "
                           "(opt train --measure fine-tunes on this machine instead)")
    args.iterations = DEFAULT_ITERATIONS if args.iterations is None else args.iterations
    _check_devices(args.devices)
    _check_counts(iterations=args.iterations)
    task_sets = ["+".join(task_set(text)) for text in args.tasks]
    policy = GOPolicy(PolicySettings(architecture=args.architecture), seed=args.seed)
    problems = [
        Problem.make(graph, DeviceModel.uniform(n), tasks, name=f"{name} N={n} {tasks}")
        for spec in args.programs
        for name, graph in load_graphs(spec)
        for n in args.devices
        for tasks in task_sets
    ]
    rounds = args.iterations
    report_every = len(problems) * max(1, rounds // 10)
    rewards: list[float] = []

    def progress(log) -> None:
        rewards.append(log.mean_reward)
        if len(rewards) % report_every == 0:
            last_round = rewards[-len(problems):]
            note(f"round {len(rewards) // len(problems)}/{rounds}: mean sampled reward "
                 f"{sum(last_round) / len(last_round):+.4f} (simulated)", show=not args.quiet)

    start = time.perf_counter()
    config = PPOSettings(iterations=rounds * len(problems), seed=args.seed,
                       curriculum=args.curriculum)
    logs = train(policy, problems, config, progress)
    summary = {
        "programs": list(args.programs),
        "devices": list(args.devices),
        "tasks": task_sets,
        "problems": [p.name for p in problems],
        "iterations": config.iterations,
        "seed": args.seed,
        "curriculum": args.curriculum,
        "final_mean_reward": {log.problem: log.mean_reward for log in logs[-len(problems):]},
        "curve": learning_curve(logs, len(problems)),
        "train_s": time.perf_counter() - start,
    }
    return save_policy(policy, args, summary, summary, f"trained on {len(problems)} problems for "
                       f"{config.iterations} iterations in {summary['train_s']:.1f} s")


def save_policy(policy, args: argparse.Namespace, training: dict, summary: dict, done: str) -> int:
    """Write a trained policy to --out with its `training` record; print `summary` (--json) or
    the `done` line."""
    policy.save(args.out, training=training)
    if args.json:
        print(json.dumps({"out": str(args.out), **summary}))
    else:
        print(f"{done} -> {args.out}")
    return 0


def learning_curve(logs, per_round: int) -> dict[str, list[float]]:
    """Mean sampled reward per task set and round of `per_round` iterations (simulated): the
    learning curve a policy folder keeps (docs/img/go_learning_curves.png plots it)."""
    curve: dict[str, list[float]] = {}
    for begin in range(0, len(logs), per_round):
        by_tasks: dict[str, list[float]] = {}
        for log in logs[begin:begin + per_round]:
            by_tasks.setdefault(log.problem.rsplit(" ", 1)[-1], []).append(log.mean_reward)
        for tasks, rewards in by_tasks.items():
            curve.setdefault(tasks, []).append(round(sum(rewards) / len(rewards), 5))
    return curve


def load_graphs(source: str) -> list[tuple[str, OpGraph]]:
    """(name, op graph) of each module in a program spec (hlotune.programs: zoo:, go:,
    file.py:FACTORY...), HLO text file or .pb."""
    from hlotune.hlo.sources import from_jax, read_file
    from hlotune.opt.costs import op_graph
    from hlotune.programs import is_program_spec, load_program

    if is_program_spec(source):
        program = load_program(source, abstract=True)
        graph = op_graph(from_jax(program.fn, *program.args, name=program.name))
        return [(program.name, graph)]
    records = read_file(source)[1]
    if len(records) == 1:
        return [(Path(source).name, op_graph(records[0].graph))]
    return [(record.graph.name, op_graph(record.graph)) for record in records]


def policy_folder(text: str) -> Path:
    """--policy's folder: the shipped policy for PRETRAINED, else the path given."""
    return PRETRAINED_DIR if text == PRETRAINED else Path(text)


def _check_devices(counts: list[int]) -> None:
    bad = [n for n in counts if n < 1]
    if bad:
        raise HlotuneError(f"--devices must be at least 1, got {bad[0]}")


def _check_counts(**counts: float) -> None:
    for name, value in counts.items():
        if value < 0:
            raise HlotuneError(f"--{name} must not be negative, got {value}")
