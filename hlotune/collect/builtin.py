"""Builds the built-in dataset (hlotune.data.builtin says where it lives, how it splits and how
it is measured): every program collected in both spaces, then its data card.

    hlotune rebuild dataset -t 60    # for an hour at most (needs the [corpus] extra)
    hlotune rebuild dataset --tile -t 60    # the tile collection (kernels/tile_collection.py)

Resumable: a finished program is skipped, a program stopped mid-way resumes at its last batch,
and the same seed draws the same configs. Measure with the machine otherwise quiet.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter

import numpy as np

from hlotune.collect.collector import CollectSettings, collect
from hlotune.data.builtin import EDITION, TILE_EDITION, TILE_VARIANTS, Edition
from hlotune.data.npz import read_sample
from hlotune.errors import HlotuneError
from hlotune.kernels.tile_collection import TileSettings, collect_tiles
from hlotune.kernels.tile_files import TileSummary, write_tile_files
from hlotune.spellings import python_m

SAMPLES, SEED, BATCH = 30, 0, 16
MEASURED = ("flags", "layout")  # the edition's collections that collect() measures (tile: build_tiles)
TILE_SETTINGS = TileSettings(seed=SEED)


def build(edition: Edition, minutes: float | None = None) -> None:
    """Collect `edition` program by program, both spaces each, in its order (held-out families
    first, quick ones first); with `minutes`, start no program after that long. The data card
    is rewritten after each one."""
    deadline = None if minutes is None else time.monotonic() + 60 * minutes
    for split, spec in edition.order(family_seconds(edition)):
        if deadline is not None and time.monotonic() > deadline:
            print(f"stopped after {minutes:g} minutes; run again to go on", flush=True)
            break
        for space in MEASURED:
            result = collect(spec, settings(edition, space), edition.root / space / split, progress=False)
            print(f"{space}/{split} {spec}: {result.configs} configs, noise floor "
                  f"{result.noise_floor:.1%}, spread {result.spread:.2f}x, {result.seconds:.0f} s"
                  + (" (collected before)" if result.resumed else ""), flush=True)
        write_datacard(edition)


def build_tiles(edition: Edition, minutes: float | None = None) -> None:
    """The tile collection, program by program in `edition`'s order (TILE_EDITION: the
    edition's programs, then the tile collection's own variants), each split's files and the
    data card rewritten after each program."""
    deadline = None if minutes is None else time.monotonic() + 60 * minutes
    for split, spec in edition.order(family_seconds(edition)):
        if deadline is not None and time.monotonic() > deadline:
            print(f"stopped after {minutes:g} minutes; run again to go on", flush=True)
            break
        folder = edition.root / "tile" / split
        try:
            result = collect_tiles(spec, TILE_SETTINGS, folder, progress=False)
        except HlotuneError as error:  # one program that cannot be measured stops no other
            print(f"tile/{split} {spec}: skipped: {error}", flush=True)
            continue
        if result.resumed and not result.samples:
            continue
        summary = write_tile_files(folder)
        print(f"tile/{split} {spec}: {result.kernels} kernels ({result.new_kernels} new), "
              f"{result.samples} samples, {result.failed} failed configs, {result.seconds:.0f} s; "
              f"split: {summary.kernels} kernels, {summary.samples} samples", flush=True)
        write_datacard(EDITION)


def family_seconds(edition: Edition) -> dict[str, float]:
    """Each family's median seconds per collected program, both spaces summed."""
    per_program: dict[str, float] = {}
    for summary in (path for space in MEASURED for path in (edition.root / space).glob("*/*.json")):
        result = json.loads(summary.read_text())["result"]
        per_program[result["program"]] = per_program.get(result["program"], 0.0) + result["seconds"]
    by_family: dict[str, list[float]] = {}
    for program, seconds in per_program.items():
        by_family.setdefault(program.partition("@")[0], []).append(seconds)
    return {family: float(np.median(times)) for family, times in by_family.items()}


def settings(edition: Edition, space: str) -> CollectSettings:
    return CollectSettings(space=space, configs=edition.configs, samples=SAMPLES, seed=SEED, batch=BATCH,
                           noise_target=edition.noise_target)


def write_datacard(edition: Edition) -> None:
    """DATACARD.md from the collected summaries: every number in it is read off the files."""
    target = f"; more rounds until each median is known within {edition.noise_target:.0%} (95% CI)" \
        if edition.noise_target else ""
    lines = [
        "# hlotune built-in dataset",
        "",
        "Measured by `hlotune collect` on the machine below; regenerate with "
        "`hlotune rebuild dataset` "
        "(resumable; the same seed draws the same configs).",
        f"Per program: {edition.configs} configs drawn with seed {SEED} plus the default, at least "
        f"{SAMPLES} samples each (rounds x repeats){target}, default replicas in every batch.",
        "Splits by family: " + "; ".join(f"{s}: {', '.join(f)}" for s, f in edition.splits.items()) + ".",
        "Variants: " + "; ".join(f"{k}: {', '.join(v)}" for k, v in edition.variants.items()) + ".",
        "Failed configs (not in the npz, listed with their reason in each program's JSON): "
        "rejected by XLA, crashed it, or gave outputs other than the default's; each is replaced "
        "by the next config the seed draws, up to twice as many again (programs collected under a "
        "lower cap were topped up).",
        "Columns: noise floor, the default's replicas against it (median over batches); spread, "
        "slowest over fastest config; best, the default's runtime over the fastest config's.",
        "",
    ]
    machines: Counter[str] = Counter()
    for space in MEASURED:
        rows = _summaries(edition, space)
        if not rows:
            continue
        machines.update(", ".join(f"{k} {v}" for k, v in r["machine"].items()) for _, r, _ in rows)
        noise = [r["result"]["noise_floor"] for _, r, _ in rows]
        families = {r["program"].partition("@")[0] for _, r, _ in rows}
        lines += [
            f"## {space}: {len(rows)} graphs of {len(families)} families",
            "",
            f"Median noise floor {np.median(noise):.1%}, median spread "
            f"{np.median([r['result']['spread'] for _, r, _ in rows]):.2f}x, median best "
            f"{np.median([best for _, _, best in rows]):.2f}x. Configs measured "
            f"{sum(r['result']['configs'] for _, r, _ in rows)}, failed {sum(r['result']['failed'] for _, r, _ in rows)}.",
            "",
            "| split | program | source | configs | failed | noise floor | spread | best | seconds |",
            "|---|---|---|---|---|---|---|---|---|",
            *(
                f"| {split} | {r['program']} | {r['program'].partition(':')[0]} | {r['result']['configs']} | "
                f"{r['result']['failed']} | {r['result']['noise_floor']:.1%} | {r['result']['spread']:.2f}x | "
                f"{best:.2f}x | {r['result']['seconds']:.0f} |"
                for split, r, best in rows
            ),
            "",
        ]
    lines += _tile_section(edition)
    if machines:  # a collection spanning sessions may span machines: each graph's JSON says which
        lines.insert(3, "Machines: " + "; ".join(f"{m} ({n} graphs)" for m, n in machines.most_common()) + ".")
    (edition.root / "DATACARD.md").write_text("\n".join(lines) + "\n")


def _tile_section(edition: Edition) -> list[str]:
    """The tile collection's counts per split, read off its kernels' cards."""
    summaries = {split: write_tile_files(edition.root / "tile" / split) for split in edition.splits
                 if (edition.root / "tile" / split).is_dir()}
    if not summaries:
        return []
    total = TileSummary(*(sum(getattr(s, f) for s in summaries.values()) for f in ("kernels", "samples", "programs", "families")),
                        float(np.nanmedian([s.noise_floor for s in summaries.values()])), 0)
    settings = TILE_SETTINGS
    return [
        f"## tile: {total.kernels} kernels, {total.samples} kernel-config samples, from {total.programs} programs",
        "",
        "Programs: the edition's, then variants of the tile collection's own: "
        + "; ".join(f"{k}: {', '.join(v)}" for k, v in TILE_VARIANTS.items()) + ".",
        f"Measured by `hlotune rebuild dataset --tile` (kernels/tile_collection.py): per program "
        f"{settings.configs} configs, each giving every tunable kernel its own outer-dimension "
        f"partitions (balanced draws), {settings.profile_runs} profiled runs each; a sample is a "
        "kernel's median time relative to XLA's own choice in the same batch. A kernel (by its "
        f"fingerprint) sampled {settings.enough} times in a split is left at XLA's choice later; "
        f"kernels under {settings.min_kernel_ns / 1e3:g} us under XLA's choice are not labelled. "
        f"Noise floor: a default replica's kernel time against the reference's, median over "
        f"kernels ({total.noise_floor:.1%}).",
        "",
        "| split | kernels | samples | programs | families | noise floor |",
        "|---|---|---|---|---|---|",
        *(f"| {split} | {s.kernels} | {s.samples} | {s.programs} | {s.families} | {s.noise_floor:.1%} |"
          for split, s in summaries.items()),
        "",
    ]


def _summaries(edition: Edition, space: str) -> list[tuple[str, dict, float]]:
    """(split, summary, default runtime over the fastest config's) of each collected program."""
    rows = []
    for split in edition.splits:
        for path in sorted((edition.root / space / split).glob("*.json")):
            runtimes = read_sample(path.with_suffix(".npz")).configs.config_runtime
            rows.append((split, json.loads(path.read_text()), float(runtimes[0] / runtimes.min())))
    return rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="hlotune rebuild dataset",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("-t", "--minutes", type=float, help="start no program after this long")
    parser.add_argument("--tile", action="store_true", help="the tile collection (kernels), not flags and layout")
    args = parser.parse_args(argv)
    if args.tile:
        build_tiles(TILE_EDITION, args.minutes)
    else:
        build(EDITION, args.minutes)
    return 0


if __name__ == "__main__":
    python_m("hlotune.collect.builtin", ["rebuild", "dataset"])
