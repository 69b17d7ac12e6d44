"""Compiled-call overhead benchmark: does what the user calls cost what the tuner measured?

In one process, per program and config, four callables timed interleaved (compiler/measurement/call_timing.py:
blocks of back-to-back calls in a fresh random order every round), twice: each call waiting for
its outputs (a loop that reads every result), and a block waiting once at its end (dispatch may
overlap compute):

- jit: `jax.jit(fn)` called with the user's arguments, what the user had before tuning;
- raw: the executable the tuner times (the flat build compiled with the config, called with its
  arguments already in their layouts: the measurement worker's call);
- compiled(): `hlotune.compiled(fn, *args, config=...)`, what `result.compiled()` returns,
  called with the user's arguments;
- autotune: `@hlotune.autotune` running the same config from a database decision;
- hlotune.jit: `hlotune.jit(fn)` recording the program and counting its calls, under the same
  decision (applied without a trial: the path every call takes after one), or (the default
  config) with none: what every call of a recorded program costs over jax.jit (issue 48's goal:
  at most 1% on a program of about 1 ms); with the default config also "2 signatures", the same
  after one call with bfloat16 arguments (issue 60's goal: no more than with one).

With --tune, each program is also tuned (`hlotune.tune(fn, *args, budget=...)`) and its best
config timed the same way, beside the speedup the tuner reported (issue 29's goal: compiled()
delivers at least 80% of it over `jax.jit`).

A callable's overhead is its per-call time less raw's, in µs, from the minima over rounds and
from the medians; "over" marks both beyond issue 29's bound, max(1%, 20 µs). Configs: the
default, a flag change (XNNPACK off), and an argument layout change (the first `p<i>` site's
dimension order reversed). Under the last, compiled() with the user's row-major arrays also
moves that argument into its layout on every call (real work that raw, given placed arguments,
never does); "compiled(), placed" is the same call given an array
already in its layout (a previous `jax.device_put(x, fmt)`), the wrapper's own cost.

Back-to-back calls that wait for their outputs amplify any Python before a call: XLA:CPU's
worker threads spin a few µs for the next task, then sleep, and waking them costs 20-40 µs on
this 2-core machine; a wrapper's few µs can cross that line where jax's C++ dispatch does not.

    python benchmarks/compiled_overhead_bench.py
    python benchmarks/compiled_overhead_bench.py --programs kmeans zoo:mlp@small --rounds 40 --out bench.json
    python benchmarks/compiled_overhead_bench.py --programs kmeans --tune 16   # and the tuned config
    python benchmarks/compiled_overhead_bench.py --programs kmeans-1ms --configs default flags --rounds 150
"""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import harness
import hlotune
from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.configs.flags import FlagConfig
from hlotune.compiler.xla.hook import compile_config
from hlotune.compiler.configs.layouts import LayoutConfig, LayoutSpace
from hlotune.programs import Program, load_program
from hlotune.compiler.measurement.call_timing import interleaved_call_times
from hlotune.tuning.storage import Decision, TuningDatabase

BOUND_FRACTION, BOUND_S = 0.01, 20e-6
PLACED = "compiled(), placed"
TWO = "hlotune.jit, 2 signatures"
BLOCK_S = 0.03
MODES = {"each call waits for its outputs": True, "pipelined: a block waits at its end": False}


def mlp(params, x):
    """A small MLP forward pass: a list of (w, b) layers, a dict out."""
    for w, b in params:
        x = jnp.tanh(x @ w + b)
    return {"y": x, "energy": jnp.sum(x * x)}


def kmeans(points, centroids):
    """One k-means (Lloyd) step: assign each point to its nearest centroid, move the centroids."""
    distances = (jnp.sum(points**2, 1)[:, None] - 2 * points @ centroids.T
                 + jnp.sum(centroids**2, 1)[None, :])
    assigned = jnp.argmin(distances, 1)
    onehot = jax.nn.one_hot(assigned, centroids.shape[0], dtype=points.dtype)
    counts = jnp.maximum(onehot.sum(0), 1.0)[:, None]
    return (onehot.T @ points) / counts, jnp.min(distances, 1).sum()


def _functions() -> dict[str, Program]:
    keys = jax.random.split(jax.random.key(0), 8)
    layers = [(jax.random.normal(keys[i], (128, 128)) / 12, jnp.zeros(128)) for i in range(3)]
    points = jax.random.normal(keys[6], (16384, 32))
    return {"mlp": Program("mlp", mlp, (layers, jax.random.normal(keys[5], (64, 128)))),
            "kmeans": Program("kmeans", kmeans, (points, points[:64])),
            "kmeans-1ms": Program("kmeans-1ms", kmeans, (points[:1024], points[:64]))}


def _configs(space: LayoutSpace) -> dict[str, CompileConfig]:
    configs = {"default": CompileConfig(),
               "flags": CompileConfig(FlagConfig.from_dict({"xla_cpu_use_xnnpack": False}))}
    site = next((s for s in space.sites if s.key.startswith("p")), None)
    if site is not None:  # minor-to-major 0, 1, ...: the reverse of row-major
        configs[f"layout {site.key}"] = CompileConfig(layout=LayoutConfig.from_dict({site.key: range(site.rank)}))
    return configs


def _raw(space: LayoutSpace, config: CompileConfig):
    """The measurement worker's call: the flat build, its arguments placed once."""
    executable = compile_config(space.build(config.layout).lower(*space.leaves), config)
    args = space.placed_args(config.layout)
    return lambda: executable(*args)


def _decided(wrap, program: Program, config: CompileConfig, db: Path):
    """`wrap(db)(fn)` (autotune or hlotune.jit) with a stored decision for `config`; none for
    the default under hlotune.jit, whose calls then run jax.jit's executable."""
    fingerprint = wrap(db)(program.fn).choice(*program.args).fingerprint
    if not (config.is_default and wrap is _jit):
        with TuningDatabase(db) as tuned:
            tuned.register(fingerprint, program.name)
            tuned.decide(Decision(fingerprint, config, config, 1.0, 1.0, 0.0, "bench", "all", 0.0))
    decorated = wrap(db)(program.fn)
    assert decorated.choice(*program.args).config == config
    return decorated


def _autotune(db: Path):
    return hlotune.autotune(db=db)


def _jit(db: Path):
    return lambda fn: hlotune.jit(fn, db=str(db), trial=False)  # the path after a trial, from the first call


def _two_signatures(program: Program, db: Path):
    """hlotune.jit of the program without a decision, called once with its float arguments in
    bfloat16 first: a function with two signatures, timed on the original one."""
    recorded = hlotune.jit(program.fn, db=str(db))
    other = jax.tree_util.tree_map(lambda a: a.astype(jnp.bfloat16) if jnp.issubdtype(a.dtype, jnp.floating) else a,
                                   program.args)
    jax.block_until_ready(recorded(*other))
    return recorded


def _row(name: str, program: Program, label: str, config: CompileConfig, space: LayoutSpace,
         folder: Path, rounds: int) -> dict:
    user = hlotune.compiled(program.fn, *program.args, config=config)
    jitted = jax.jit(program.fn)
    autotuned = _decided(_autotune, program, config, folder / f"{program.name}-{label}-autotune.sqlite")
    recorded = _decided(_jit, program, config, folder / f"{program.name}-{label}-jit.sqlite")
    calls = {"raw": _raw(space, config), "jit": lambda: jitted(*program.args),
             "compiled()": lambda: user(*program.args), "autotune": lambda: autotuned(*program.args),
             "hlotune.jit": lambda: recorded(*program.args)}
    if not config.layout.is_default:
        placed = jax.tree_util.tree_structure(program.args).unflatten(space.placed_args(config.layout))
        calls[PLACED] = lambda: user(*placed)
    if config.is_default:
        two = _two_signatures(program, folder / f"{program.name}-two.sqlite")
        calls[TWO] = lambda: two(*program.args)
    row = {"program": name, "config": label, "config_dict": config.to_dict()}
    for mode, wait_each in MODES.items():
        times = interleaved_call_times(calls, rounds=rounds, block_s=BLOCK_S, wait_each=wait_each)
        row[mode] = {"min_us": {k: float(t.min() * 1e6) for k, t in times.items()},
                     "median_us": {k: float(np.median(t) * 1e6) for k, t in times.items()}}
    return row


def _print(rows: list[dict], mode: str) -> None:
    print(f"\n{mode}: µs per call, block minimum (median); overheads over raw from the minima / "
          "the medians\n")
    header = ("program", "config", "jit", "raw", "compiled()", "compiled() − raw", "placed − raw",
              "autotune − raw", "hlotune.jit − raw", "2 signatures − raw", "jit / raw", "jit / compiled()",
              "jit / hlotune.jit", "jit / 2 signatures")
    print(harness.markdown(header, [_cells(row, row[mode]) for row in rows], align="ll" + "r" * 12))


def _cells(row: dict, times: dict) -> list[str]:
    """A row of one mode's table: the times, the overheads over raw, the speedups over jit."""
    cells = [row["program"], row["config"]]
    cells += [f"{times['min_us'][k]:.1f} ({times['median_us'][k]:.1f})" for k in ("jit", "raw", "compiled()")]
    cells += [_overhead(times, name) if name in times["min_us"] else "—"
              for name in ("compiled()", PLACED, "autotune", "hlotune.jit", TWO)]
    return cells + [f"{_speedup(times, name):.3f}x" if name in times["min_us"] else "—"
                    for name in ("raw", "compiled()", "hlotune.jit", TWO)]


def _overhead(times: dict, name: str) -> str:
    """Both differences, and `over` where both exceed the bound (a real cost shows in both)."""
    extra = [times[stat][name] - times[stat]["raw"] for stat in ("min_us", "median_us")]
    bound = max(BOUND_FRACTION * times["min_us"]["raw"], BOUND_S * 1e6)
    return f"{extra[0]:+.1f} / {extra[1]:+.1f}" + (" over" if min(extra) > bound else "")


def _speedup(times: dict, name: str) -> float:
    return times["min_us"]["jit"] / times["min_us"][name]


def _print_delivered(rows: list[dict]) -> None:
    """Issue 29's goal: compiled() delivers at least 80% of the gain the tuner reported."""
    mode = next(iter(MODES))
    cells = []
    for row in rows:
        reported, times = row["reported_speedup"], row[mode]
        delivered = _speedup(times, "compiled()")
        share = f"{(delivered - 1) / (reported - 1):.0%}" if reported > 1 else "—"
        cells.append([row["program"], f"`{json.dumps(row['config_dict'])}`", f"{reported:.3f}x",
                      f"{_speedup(times, 'raw'):.3f}x", f"{delivered:.3f}x", share])
    header = ("program", "tuned config", "tuner's speedup", "jit / raw", "jit / compiled()", "delivered")
    print("\n" + harness.markdown(header, cells, align="llrrrr"))


def main() -> None:
    parser = harness.parser(__doc__, programs=["mlp", "kmeans", "zoo:mlp@small"])
    parser.add_argument("--rounds", type=int, default=30, help="interleaved rounds (blocks of ~30 ms)")
    parser.add_argument("--configs", nargs="+", metavar="CONFIG",
                        help="only these of default, flags and layout (default: all)")
    parser.add_argument("--tune", type=int, metavar="BUDGET",
                        help="also tune each program (hlotune.tune, flags) and time its best config")
    harness.add_common(parser, out=None)
    args = parser.parse_args()
    functions = _functions()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name in args.programs:
            program = functions[name] if name in functions else load_program(name)
            space = LayoutSpace(program)
            for label, config in _configs(space).items():
                if args.configs and label.split()[0] not in args.configs:
                    continue
                rows.append(_row(name, program, label, config, space, Path(folder), args.rounds))
                print(f"{name} {label}: done", file=sys.stderr)
            if args.tune:
                result = hlotune.tune(program.fn, *program.args, budget=args.tune, progress=False,
                                      db=Path(folder) / "tune.sqlite")
                row = _row(name, program, "tuned", result.best_config, space, Path(folder), args.rounds)
                rows.append(row | {"reported_speedup": result.speedup})
    for mode in MODES:
        _print(rows, mode)
    print(f"\n'over': both overheads beyond max({BOUND_FRACTION:.0%}, {BOUND_S * 1e6:.0f} µs). "
          f"{os.cpu_count()} cores.")
    if args.tune:
        _print_delivered([row for row in rows if "reported_speedup" in row])
    if args.out:
        machine = {"cpus": os.cpu_count(), "processor": platform.processor(), "jax": jax.__version__}
        harness.write_json(args.out, {"settings": vars(args) | {"out": str(args.out)},
                                      "machine": machine, "rows": rows})


if __name__ == "__main__":
    main()
