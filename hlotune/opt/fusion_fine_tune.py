"""`hlotune opt train --measure`: the GO policy's fusion head fine-tuned on MEASURED speedups.

The shipped policy learnt its fuse bits on the simulator. Here it learns from XLA:CPU itself,
on training programs: each round, for each program, it samples `samples` fuse assignments of
the program's kernel graph, turns them into fusion configs as `opt fuse --measure` does
(measured_fusion.FusionProblem.decisions), measures the distinct ones in one batch beside XLA's
fusion, and takes PPO steps with each sample's reward, the log of its measured speedup over
the batch's default. A config that fails or computes something else gets the batch's worst
healthy reward less a margin. Only the bits of ops that decide a kernel's fusion enter the
loss: the others change no config, so the measurement says nothing about them.

Measurements cost seconds each and fusion's stakes on this CPU are a few percent (docs/go.md),
so a run is a few rounds of a few programs; the rewards are noisy at the batch's noise floor.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from hlotune.compiler.measurement.measure import MeasureSettings, measure
from hlotune.errors import HlotuneError
from hlotune.progress import note
from hlotune.opt.measured_fusion import FusionProblem

FAILED_MARGIN = math.log(1.1)  # a failed config's reward: the batch's worst healthy one less this


@dataclass(frozen=True)
class FineTuneStep:
    """One program's batch: what was measured and what the samples' configs ran at."""

    round: int
    program: str
    measured: int  # distinct configs measured beside the default
    failed: int
    noise: float  # the batch's noise floor
    mean_speedup: float  # geomean over the healthy samples (a sample of XLA's own fusion is 1)
    best_speedup: float


@dataclass(frozen=True)
class FineTuneSettings:
    rounds: int = 2  # passes over the programs
    samples: int = 8  # fuse assignments sampled per program and round
    seed: int = 0
    learning_rate: float = 3e-4
    epochs: int = 4  # PPO epochs per batch
    clip: float = 0.2
    measure: MeasureSettings = MeasureSettings(rounds=3)

    def __post_init__(self) -> None:
        if self.rounds < 1 or self.samples < 2:
            raise HlotuneError(f"fine-tuning needs at least 1 round and 2 samples to compare, got "
                               f"{self.rounds} and {self.samples}")


def fine_tune(policy, problems: Sequence[FusionProblem], settings: FineTuneSettings = FineTuneSettings(),
              progress: Callable[[FineTuneStep], None] | None = None) -> list[FineTuneStep]:
    """PPO on measured speedups, round robin over `problems`; the policy is updated in place."""
    import torch

    if not problems:
        raise HlotuneError("fine-tuning needs at least one program")
    generator = torch.Generator().manual_seed(settings.seed)
    optimizer = torch.optim.Adam(policy.parameters(), lr=settings.learning_rate)
    steps = []
    for round_ in range(settings.rounds):
        for problem in problems:
            step = _step(policy, problem, settings, optimizer, generator, round_)
            steps.append(step)
            if progress is not None:
                progress(step)
    return steps


def _step(policy, problem: FusionProblem, settings: FineTuneSettings, optimizer, generator, round_: int) -> FineTuneStep:
    import torch

    from hlotune.opt.device import DeviceModel
    from hlotune.opt.ppo import Problem

    opt = Problem.make(problem.graph, DeviceModel.uniform(1), ["fuse"], name=problem.program)
    with torch.no_grad():
        out = policy(opt.inputs, opt.devices, opt.tasks)
        batch = out.actions.sample(settings.samples, generator)
        old_log_prob = out.actions.log_prob(batch)
    configs = [problem.decisions(batch.fuse[k].numpy()) for k in range(settings.samples)]
    result = measure(problem.program, [c for c in dict.fromkeys(configs) if not c.is_default], settings.measure)
    speedups = {m.config: result.default_ns / m.median_ns for m in result.measurements if m.ok}
    healthy = [math.log(speedups.get(c, 1.0)) for c in configs if c.is_default or c in speedups]
    worst = min(healthy, default=0.0) - FAILED_MARGIN
    rewards = torch.tensor([math.log(speedups[c]) if c in speedups else 0.0 if c.is_default else worst
                            for c in configs])
    advantage = (rewards - rewards.mean()) / (rewards.std() + 1e-3)
    deciding = torch.tensor(sorted(problem.kernel_of_op), dtype=torch.long)
    for _ in range(settings.epochs):
        out = policy(opt.inputs, opt.devices, opt.tasks)
        ratio = (out.actions.log_prob(batch) - old_log_prob)[:, deciding].exp()  # (K, ops that decide)
        clipped = ratio.clamp(1 - settings.clip, 1 + settings.clip)
        loss = -torch.minimum(ratio * advantage[:, None], clipped * advantage[:, None]).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return FineTuneStep(round_, problem.program, len(result.measurements),
                        sum(not m.ok for m in result.measurements), result.noise_floor,
                        float(np.exp(np.mean(healthy))) if healthy else float("nan"),
                        float(np.exp(max(healthy))) if healthy else float("nan"))


def run(args: argparse.Namespace) -> int:
    """The `opt train --measure` handler: fine-tune a fuse-trained policy on --programs, save it."""
    from hlotune.opt.commands import PRETRAINED_DIR, save_policy
    from hlotune.opt.policy import GOPolicy, trained_tasks

    unsupported = [flag for flag, value in (("--devices", args.devices), ("--architecture", args.architecture != "summary"),
                                            ("--curriculum", args.curriculum)) if value]
    if unsupported:
        raise HlotuneError(f"{unsupported[0]} is for simulated training; --measure fine-tunes a "
                           "policy's fusion head on this machine")
    folder = args.policy or PRETRAINED_DIR
    policy, training = GOPolicy.load(folder)
    if "fuse" not in trained_tasks(training):
        raise HlotuneError(f"{folder}: this policy was not trained to fuse")
    settings = FineTuneSettings(rounds=args.iterations, samples=args.samples, seed=args.seed)
    problems = [FusionProblem.load(program) for program in args.programs]
    empty = [p.program for p in problems if not p.kernel_of_op]
    if empty:
        raise HlotuneError(f"{empty[0]}: no kernel to split or merge, nothing to learn from")
    start = time.perf_counter()
    steps = fine_tune(policy, problems, settings, lambda step: note(
        f"round {step.round + 1}/{settings.rounds} {step.program}: {step.measured} measured, "
        f"sampled speedup {step.mean_speedup:.3f}x (best {step.best_speedup:.3f}x, noise floor "
        f"{step.noise:.1%}; MEASURED)", show=not args.quiet))
    summary = {"fine_tuned_from": str(folder), "measured_on": "this machine", "programs": list(args.programs),
               "rounds": settings.rounds, "samples": settings.samples, "seed": settings.seed,
               "steps": [asdict(step) for step in steps], "train_s": time.perf_counter() - start}
    return save_policy(policy, args, {**training, "measured_fine_tune": summary}, summary,
                       f"fine-tuned on {len(problems)} programs for {settings.rounds} rounds "
                       f"({sum(s.measured for s in steps)} configs measured) in {summary['train_s']:.1f} s")
