"""Builds the built-in dataset (hlotune.data.builtin says where it lives and how it splits):
every program of every split collected in both spaces, then its data card.

    python -m hlotune.collect.builtin    # resumable: finished programs are skipped
"""

from __future__ import annotations

import json
import sys

import numpy as np

from hlotune.collect.collector import CollectSettings, collect
from hlotune.data.builtin import ROOT, SPLITS, VARIANTS, programs

CONFIGS, SAMPLES, SEED, BATCH = 64, 30, 0, 16


def build() -> None:
    """Collect both collections, split by split (finished programs are skipped)."""
    for space in ("flags", "layout"):
        settings = CollectSettings(space=space, configs=CONFIGS, samples=SAMPLES, seed=SEED, batch=BATCH)
        for split in SPLITS:
            for spec in programs(split):
                result = collect(spec, settings, ROOT / space / split)
                print(f"{space}/{split} {spec}: {result.configs} configs, noise floor "
                      f"{result.noise_floor:.1%}, spread {result.spread:.2f}x", flush=True)
    write_datacard()


def write_datacard() -> None:
    """DATACARD.md from the collected summaries: every number in it is read off the files."""
    lines = [
        "# hlotune built-in dataset",
        "",
        "Measured by `hlotune collect` on the machine below; regenerate with "
        "`python -m hlotune.collect.builtin` (resumable; the same seed draws the same configs).",
        f"Per program: {CONFIGS} configs drawn with seed {SEED} plus the default, at least "
        f"{SAMPLES} samples each (rounds x repeats), default replicas in every batch.",
        "Splits by architecture family: " + "; ".join(f"{s}: {', '.join(f)}" for s, f in SPLITS.items()) + ".",
        f"Variants of each family: {', '.join(VARIANTS)}.",
        "Failed configs (not in the npz, listed with their reason in each program's JSON): "
        "rejected by XLA, crashed it, or gave outputs other than the default's.",
        "",
    ]
    machine = None
    for space in ("flags", "layout"):
        rows = _summaries(space)
        if not rows:
            continue
        machine = machine or rows[0][1]["machine"]
        noise = [r["result"]["noise_floor"] for _, r in rows]
        spread = [r["result"]["spread"] for _, r in rows]
        lines += [
            f"## {space}: {len(rows)} graphs",
            "",
            f"Median noise floor {np.median(noise):.1%}, median spread (max/min runtime) "
            f"{np.median(spread):.2f}x. Configs measured {sum(r['result']['configs'] for _, r in rows)}, "
            f"failed {sum(r['result']['failed'] for _, r in rows)}.",
            "",
            "| split | program | configs | failed | noise floor | spread | seconds |",
            "|---|---|---|---|---|---|---|",
            *(
                f"| {split} | {r['program']} | {r['result']['configs']} | {r['result']['failed']} | "
                f"{r['result']['noise_floor']:.1%} | {r['result']['spread']:.2f}x | {r['result']['seconds']:.0f} |"
                for split, r in rows
            ),
            "",
        ]
    if machine:
        lines.insert(3, "Machine: " + ", ".join(f"{k} {v}" for k, v in machine.items()) + ".")
    (ROOT / "DATACARD.md").write_text("\n".join(lines) + "\n")


def _summaries(space: str) -> list[tuple[str, dict]]:
    return [
        (split, json.loads(path.read_text()))
        for split in SPLITS
        for path in sorted((ROOT / space / split).glob("*.json"))
    ]


if __name__ == "__main__":
    build()
    sys.exit(0)
