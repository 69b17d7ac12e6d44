"""Ranking quality of GST and of the compressions against whole-graph training, builtin:layout.

Each variant trains with `hlotune train` on builtin:layout/train (validating on valid) and is
scored with `hlotune eval --json` on builtin:layout/test; seeds are averaged, since one short
run's Kendall tau moves by a few hundredths with the seed alone.

    OMP_NUM_THREADS=1 python benchmarks/gst_parity.py [--epochs 10] [--seeds 0,1,2]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import harness

VARIANTS = {
    "full": [],
    "gst": ["--segment-size", "512", "--segments-sampled", "1"],
    "gst+dropout": ["--segment-size", "512", "--segment-dropout", "0.2"],
    "prune_hops=2": ["--prune-hops", "2"],
    "collapse_chains": ["--collapse-chains"],
    "drop_duplicate_configs": ["--drop-duplicate-configs"],
}


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--seeds", type=harness.int_list, default=[0, 1, 2])
    parser.add_argument("--variants", type=harness.text_list, default=list(VARIANTS))
    args = parser.parse_args(argv)
    rows = {}
    with tempfile.TemporaryDirectory() as folder:
        for name in args.variants:
            taus = [_tau(Path(folder) / f"{name}-{seed}", VARIANTS[name], seed, args.epochs)
                    for seed in args.seeds]
            rows[name] = {"taus": taus, "mean": round(statistics.mean(taus), 4)}
            print(json.dumps({"variant": name, **rows[name]}), flush=True)
    full = rows.get("full", {}).get("mean")
    for name, row in rows.items():
        delta = "" if full is None else f"{row['mean'] - full:+.4f}"
        print(f"{name:<24} tau {row['mean']:.4f} {delta}")


def _tau(out: Path, options: list[str], seed: int, epochs: int) -> float:
    _cli("train", "--data", "builtin:layout/train", "--valid", "builtin:layout/valid", "--out",
         str(out), "--epochs", str(epochs), "--seed", str(seed), *options)
    result = json.loads(_cli("eval", "--model", str(out / "model"), "--data",
                             "builtin:layout/test", "--json").splitlines()[-1])
    return round(result["kendall_tau"], 4)


def _cli(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "hlotune.cli", *args], capture_output=True,
                          text=True)
    if done.returncode != 0:
        raise SystemExit(f"hlotune {' '.join(args)}: {done.stderr.strip()[-500:]}")
    return done.stdout


if __name__ == "__main__":
    main()
