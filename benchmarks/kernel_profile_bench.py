"""Kernel-profile benchmark: do a program's kernels account for its run, and does profiling
leave the measured runtimes alone?

1. Coverage: per program, what `hlotune profile` reports: the run's wall time (median of the
   timed rounds), the kernels' summed time, their ratio and the number of kernels; then the
   median ratio over programs (issue 28's goal: the sum within 15% of the wall time on the
   median program). Below 1 is time outside any kernel (the runtime's dispatch, argument
   handling, hand-offs between threads); above 1, kernels overlapping on threads. The ratio
   splits in two: the kernels' sum over a profiled run's span in the trace (its first kernel's
   start to its last kernel's end: the gaps between kernels), and that span over the wall time
   (what happens before the first kernel and after the last, and drift between the rounds).
2. Overhead: the default config's runtime, measured by one Measurer (one worker) in batches
   that alternate between profile_runs=0 and profiling on, the order flipped every seed. A
   profiled batch times its rounds before it profiles, so the claim to check is that the
   runtimes agree within the noise floor (a batch's default replicas' spread). On a shared
   machine whole batches drift (each compiles afresh, and other load comes and goes: the
   spread between the unprofiled batches shows how much), so the ratio is the median over
   seeds of each pair's profiled / unprofiled: two batches back to back.

3. Coverage over the built-in dataset, measuring nothing: every program with committed kernel
   labels (kernels/label_collection.py), each of its configs' thunks summed (control flow
   included) against the runtime the collection measured for that config; a program's ratio is
   the median over its configs, and the goal is read off the median program. Five programs
   chosen by hand are a small sample; the edition's are the programs hlotune ships.

    python benchmarks/kernel_profile_bench.py                                  # the default programs
    python benchmarks/kernel_profile_bench.py --programs zoo:mlp@small zoo:gpt@tiny --seeds 2 --out bench.json
    python benchmarks/kernel_profile_bench.py --labels-only                    # 3. alone, in seconds
"""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import harness
import numpy as np

from hlotune.compiler.measurement.measure import Measurer, MeasureSettings
from hlotune.compiler.profiles.program_profile import profile_program
from hlotune.data.builtin import EDITION
from hlotune.data.npz import read_sample
from hlotune.kernels.labels import LABELS, ProgramKernels

PROGRAMS = ("zoo:vit@small", "zoo:mlp@small", "zoo:cnn@small", "zoo:gpt@tiny", "corpus:hf-bert@tiny")
GOAL = 0.15  # the kernels' sum within this of the wall time, on the median program


@dataclass(frozen=True)
class Coverage:
    program: str
    wall_ms: float
    kernels_ms: float
    kernels: int
    span_ms: float

    @property
    def ratio(self) -> float:
        return self.kernels_ms / self.wall_ms

    @property
    def filled(self) -> float:
        """The kernels' sum over the profiled run's span: 1 - the gaps between kernels."""
        return self.kernels_ms / self.span_ms


@dataclass(frozen=True)
class Overhead:
    program: str
    unprofiled_ms: list[float]  # the default's median, one per batch without profiling
    profiled_ms: list[float]  # the same, per batch with profiling, paired by seed
    noise_floors: list[float]  # every batch's

    @property
    def pair_ratios(self) -> list[float]:
        return [p / u for p, u in zip(self.profiled_ms, self.unprofiled_ms)]

    @property
    def ratio(self) -> float:
        return statistics.median(self.pair_ratios)

    @property
    def noise_floor(self) -> float:
        return statistics.median(self.noise_floors)

    @property
    def batch_spread(self) -> float:
        """(max - min) / min of the unprofiled batches' medians: "no change" between batches."""
        return max(self.unprofiled_ms) / min(self.unprofiled_ms) - 1

    @property
    def within_noise(self) -> bool:
        return abs(self.ratio - 1) <= self.noise_floor


def main() -> None:
    parser = harness.parser(__doc__, programs=list(PROGRAMS))
    parser.add_argument("--runs", type=int, default=10, help="profiled runs per profile round")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per batch")
    parser.add_argument("--seeds", type=int, default=4, help="pairs of batches for the overhead")
    harness.add_common(parser, out=None, json=False)
    parser.add_argument("--labels-only", action="store_true",
                        help="only the built-in programs' coverage from their kernel labels")
    args = parser.parse_args()
    settings = MeasureSettings(rounds=args.rounds)
    programs = [] if args.labels_only else args.programs
    coverage = [_coverage(program, args.runs, settings) for program in programs]
    overhead = [_overhead(program, args.runs, args.seeds, settings) for program in programs]
    labelled = _label_coverage(EDITION.root)
    if programs:
        _print_coverage(coverage)
        _print_overhead(overhead)
    _print_label_coverage(labelled)
    results = {"settings": vars(args) | {"out": args.out and str(args.out)},
               "coverage": [asdict(c) | {"ratio": c.ratio, "filled": c.filled} for c in coverage],
               "overhead": [asdict(o) | {"ratio": o.ratio, "noise_floor": o.noise_floor,
                                         "batch_spread": o.batch_spread, "within_noise": o.within_noise,
                                         "pair_ratios": o.pair_ratios}
                            for o in overhead],
               "labels": labelled}
    if args.out:
        harness.write_json(args.out, results)
    if args.json:
        print(json.dumps(results))


def _coverage(program: str, runs: int, settings: MeasureSettings) -> Coverage:
    profile = profile_program(program, runs=runs, settings=settings)
    return Coverage(program, profile.wall_ms, profile.kernels_ms, len(profile.kernels), profile.span_ms)


def _overhead(program: str, runs: int, seeds: int, settings: MeasureSettings) -> Overhead:
    """Batches of the default alone in one worker: unprofiled then profiled, flipped per seed."""
    medians: dict[int, list[float]] = {0: [], runs: []}
    floors = []
    with Measurer(program, settings) as measurer:
        for seed in range(seeds):
            for profile_runs in (0, runs) if seed % 2 == 0 else (runs, 0):
                measurer.settings = replace(settings, seed=seed, profile_runs=profile_runs)
                batch = measurer.measure([])
                medians[profile_runs].append(batch.default_ns / 1e6)
                floors.append(batch.noise_floor)
    return Overhead(program, medians[0], medians[runs], floors)


def _label_coverage(root: Path) -> list[dict]:
    """Per labelled program: the median over its configs of the thunks' sum over the collected
    runtime, and the default's runtime."""
    rows = []
    for path in sorted((root / LABELS).glob("*/*/*.npz")):
        space, split = path.parent.parent.name, path.parent.name
        labels = ProgramKernels.load(path)
        runtimes = read_sample(root / space / split / path.name).configs.config_runtime[labels.rows]
        sums = np.nansum(labels.ns, axis=1) + labels.other_ns
        rows.append({"space": space, "split": split, "program": path.stem, "configs": len(labels.rows),
                     "default_ms": float(runtimes[0]) / 1e6, "ratio": float(np.median(sums / runtimes))})
    return rows


def _print_label_coverage(rows: list[dict]) -> None:
    header = ("space", "programs", "sum / wall: median program", "10th-90th percentile", "programs within 15%",
              "median, programs under 1 ms", "median, programs of 1 ms and more")
    cells = []
    for space in sorted({row["space"] for row in rows}):
        ratios = np.array([r["ratio"] for r in rows if r["space"] == space])
        small = [r["ratio"] for r in rows if r["space"] == space and r["default_ms"] < 1]
        large = [r["ratio"] for r in rows if r["space"] == space and r["default_ms"] >= 1]
        low, high = np.percentile(ratios, [10, 90])
        cells.append([space, str(len(ratios)), f"{np.median(ratios):.2f}", f"{low:.2f}-{high:.2f}",
                      f"{np.mean(abs(ratios - 1) <= GOAL):.0%}", f"{np.median(small):.2f} ({len(small)})",
                      f"{np.median(large):.2f} ({len(large)})"])
    print(harness.markdown(header, cells, align="lrrlrrr"))


def _print_coverage(rows: list[Coverage]) -> None:
    header = ("program", "wall ms", "profiled span ms", "kernels ms", "sum / wall", "sum / span", "span / wall",
              "kernels")
    print(harness.markdown(header, [
        [row.program, f"{row.wall_ms:.4f}", f"{row.span_ms:.4f}", f"{row.kernels_ms:.4f}", f"{row.ratio:.2f}",
         f"{row.filled:.2f}", f"{row.span_ms / row.wall_ms:.2f}", str(row.kernels)] for row in rows],
        align="l" + "r" * 7))
    median = statistics.median(row.ratio for row in rows)
    verdict = "within" if abs(median - 1) <= GOAL else "outside"
    print(f"\nmedian sum / wall over {len(rows)} programs: {median:.2f} "
          f"({verdict} the goal of 1 +- {GOAL:.0%}); median sum / span "
          f"{statistics.median(row.filled for row in rows):.2f}\n")


def _print_overhead(rows: list[Overhead]) -> None:
    header = ("program", "unprofiled ms", "profiled ms", "profiled / unprofiled (pairs)", "pairs slower profiled",
              "noise floor", "spread between unprofiled batches", "within the floor")
    print(harness.markdown(header, [
        [row.program, f"{statistics.median(row.unprofiled_ms):.4f}", f"{statistics.median(row.profiled_ms):.4f}",
         f"{row.ratio:.3f}", f"{sum(r > 1 for r in row.pair_ratios)}/{len(row.pair_ratios)}",
         f"{row.noise_floor:.1%}", f"{row.batch_spread:.1%}", "yes" if row.within_noise else "no"] for row in rows],
        align="l" + "r" * 6 + "l"))
    median = statistics.median(row.ratio for row in rows)
    print(f"\nmedian profiled / unprofiled over {len(rows)} programs: {median:.3f} "
          f"({len(rows[0].unprofiled_ms)} pairs of batches each, alternating in one worker per program)")


if __name__ == "__main__":
    main()
