"""Kernel labels for the programs already collected: each config compiled again and profiled,
so that every config carries its compiled thunks (kernels and unfused instructions) and their
times, beside the program runtime the collection measured.

    hlotune rebuild kernel-labels flags -t 60    # an hour at most; run again to go on
    hlotune rebuild kernel-labels layout --splits train test    # these splits, in order

One file per program (`kernels/SPACE/SPLIT/PROGRAM.npz`, a card beside it), written when the
program is done: a stopped run loses the program in flight and nothing else. Each thunk's
module text is kept once per space (`kernels/SPACE/.kernels/FINGERPRINT.hlo`; the
dataset's shards compress it), for featurizing.
The program's runtime is not measured again (one timed round, as the profile needs a live
config); its label stays the collection's, measured to the noise floor.

Arrays, for c configs (npz rows of the collected program, the default first) and k thunks
(a name and fingerprint: the same name may compute something else under another config):
`rows` (c,), `names`, `fingerprints`, `kinds` (k,), `ns` (c, k) median ns per program run
(NaN where the config has no such thunk), `calls` (c, k) events per run, `static_calls` (c, k)
what the module says of them (compiler/xla/thunks.py: known trip counts), `partitions` (c, k, 6)
the kernel's outer-dimension partitions (0 past the last), `other_ns` (c,) the control-flow
thunks' own time.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from hlotune.compiler.measurement.measure import Measurement, Measurer, MeasureSettings
from hlotune.compiler.xla.thunks import Thunk, thunks_of
from hlotune.errors import HlotuneError
from hlotune.kernels.labels import collected_configs

MAX_DIMS = 6
MODULES = ".kernels"
SPLITS = ("test", "train", "valid")


@dataclass(frozen=True)
class LabelSettings:
    batch: int = 16
    profile_runs: int = 5
    profile_rounds: int = 2
    seed: int = 0

    def measure_settings(self) -> MeasureSettings:
        """One timed round (the runtime is the collection's), then the profile."""
        return MeasureSettings(rounds=1, repeats=1, default_replicas=1, seed=self.seed,
                               profile_runs=self.profile_runs, profile_rounds=self.profile_rounds)


@dataclass(frozen=True)
class LabelResult:
    program: str
    configs: int  # profiled, the default included
    thunks: int  # distinct (name, fingerprint) columns
    failed: int  # configs that failed to compile, run or profile this time
    noise_floor: float  # median over thunks of |replica / reference - 1| (the default's)
    seconds: float


def label_program(summary: Path, out: Path, settings: LabelSettings = LabelSettings()) -> LabelResult | None:
    """Profile every healthy config of the collected program `summary` (its JSON) into `out`;
    None where `out` already has it."""
    target = out / summary.with_suffix(".npz").name
    if target.exists():
        return None
    record = json.loads(summary.read_text())
    configs = collected_configs(summary)
    started = time.perf_counter()
    measured: list[Measurement | None] = [None] * len(configs)
    replicas: list[float] = []
    with Measurer(record["program"], settings.measure_settings()) as measurer:
        for start in range(1, len(configs), settings.batch):
            result = measurer.measure(configs[start:start + settings.batch])
            measured[0] = measured[0] or result.defaults[0]
            measured[start:start + settings.batch] = result.measurements
            replicas += _replica_errors(result.defaults)
    rows = [row for row, m in enumerate(measured) if m is not None and m.ok and m.kernel_ns and m.hlo]
    if 0 not in rows:
        raise HlotuneError(f"{record['program']}: the default could not be profiled")
    modules = out.parent / MODULES
    arrays = _table([measured[row] for row in rows], modules)
    out.mkdir(parents=True, exist_ok=True)
    result = LabelResult(record["program"], len(rows), len(arrays["names"]), len(configs) - len(rows),
                         float(np.median(replicas)) if replicas else float("nan"), time.perf_counter() - started)
    np.savez_compressed(target, rows=np.array(rows), **arrays)
    target.with_suffix(".json").write_text(json.dumps({"result": asdict(result), "settings": asdict(settings),
                                                      "machine": record["machine"]}, indent=1))
    return result


def _replica_errors(defaults: list[Measurement]) -> list[float]:
    reference = defaults[0].kernel_ns
    return [abs(ns / reference[name] - 1) for replica in defaults[1:] for name, ns in replica.kernel_ns.items()
            if reference.get(name)]


def _table(measured: list[Measurement], modules: Path) -> dict[str, np.ndarray]:
    """The (config, thunk) arrays of the module docstring; each new thunk's text is kept."""
    columns: dict[tuple[str, str], int] = {}
    per_config: list[tuple[Measurement, dict[str, Thunk]]] = []
    for measurement in measured:
        thunks = thunks_of(measurement.hlo, set(measurement.kernel_ns))
        per_config.append((measurement, thunks))
        for thunk in thunks.values():
            columns.setdefault((thunk.name, thunk.fingerprint), len(columns))
            _keep(modules, thunk)
    kinds = {(t.name, t.fingerprint): t.kind for _, thunks in per_config for t in thunks.values()}
    ns = np.full((len(measured), len(columns)), np.nan, np.float32)
    calls = np.zeros((len(measured), len(columns)), np.int32)
    static_calls = np.zeros((len(measured), len(columns)), np.int32)
    partitions = np.zeros((len(measured), len(columns), MAX_DIMS), np.int16)
    other = np.zeros(len(measured), np.float32)
    for row, (measurement, thunks) in enumerate(per_config):
        for name, time_ns in measurement.kernel_ns.items():
            if (thunk := thunks.get(name)) is None:
                other[row] += time_ns
                continue
            column = columns[(name, thunk.fingerprint)]
            ns[row, column] = time_ns
            calls[row, column] = measurement.kernel_calls.get(name, 1)
            static_calls[row, column] = thunk.calls
            partitions[row, column, :len(thunk.partitions[:MAX_DIMS])] = thunk.partitions[:MAX_DIMS]
    keys = list(columns)
    return {"names": np.array([n for n, _ in keys]), "fingerprints": np.array([f for _, f in keys]),
            "kinds": np.array([kinds[k] for k in keys]), "ns": ns, "calls": calls, "static_calls": static_calls,
            "partitions": partitions,
            "other_ns": other}


def _keep(modules: Path, thunk: Thunk) -> None:
    path = modules / f"{thunk.fingerprint}.hlo"
    if not path.exists():
        modules.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".part")
        partial.write_text(thunk.module)
        partial.replace(path)


def build(space: str, minutes: float | None = None, splits: tuple[str, ...] = SPLITS,
          settings: LabelSettings = LabelSettings()) -> None:
    """Label the built-in `space`'s programs of `splits`, split by split in that order (by
    default the test split first: what the program model is judged on), each in the edition's
    order (one variant of every family before a second of any)."""
    from hlotune.data.builtin import EDITION
    from hlotune.programs.program import slug_of

    deadline = None if minutes is None else time.monotonic() + 60 * minutes
    programs = [program for program in EDITION.order() if program[0] in splits]
    for split, spec in sorted(programs, key=lambda program: splits.index(program[0])):
        summary = EDITION.root / space / split / f"{slug_of(spec)}.json"
        if not summary.exists():
            continue
        if deadline is not None and time.monotonic() > deadline:
            print(f"stopped after {minutes:g} minutes; run again to go on", flush=True)
            return
        result = label_program(summary, EDITION.root / "kernels" / space / split, settings)
        if result is not None:
            print(f"kernels/{space}/{split} {spec}: {result.configs} configs, {result.thunks} thunks, "
                  f"{result.failed} failed, kernel noise {result.noise_floor:.1%}, {result.seconds:.0f} s", flush=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="hlotune rebuild kernel-labels",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("space", choices=("flags", "layout"))
    parser.add_argument("-t", "--minutes", type=float, help="start no program after this many minutes")
    parser.add_argument("--splits", nargs="+", choices=SPLITS, default=SPLITS,
                        help="the splits to label, in this order (default: test train valid)")
    args = parser.parse_args(argv)
    try:
        build(args.space, args.minutes, tuple(args.splits))
    except KeyboardInterrupt:  # each finished program is already written; run again to go on
        print("hlotune: interrupted: the programs done are kept, the one in flight is not; run "
              "again to go on", file=sys.stderr)
        return 130
    return 0
