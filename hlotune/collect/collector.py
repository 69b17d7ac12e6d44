"""Programs x configurations -> measured runtimes -> TpuGraphs-format files.

For each program: featurize its graph once, draw the configs (same seed, same configs), measure
them in batches with the default's replicas in each batch, and write `NAME.npz` (the graph, the
configs, the runtimes and every sample) with `NAME.json` beside it (what was measured, on what,
the failures and their reasons, noise floors). A journal makes it resumable. Configs that fail
(rejected by XLA, crashing it, or computing something else) are replaced by further draws of the
same stream until `configs` are measured, at most twice as many again (XLA:CPU computes some
programs wrongly under half of the options).

Batches run minutes apart and a shared machine drifts, so each config's runtime is corrected by
its batch: `median(config) * default / median(batch default)`, where `default` is the median of
the batches' defaults. The raw samples are kept as measured.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from hlotune.collect.journal import Journal
from hlotune.compiler.measurement.argument_files import offer
from hlotune.compiler.configs.config import DEFAULT_CONFIG, CompileConfig
from hlotune.compiler.spaces.encode import ConfigEncoder
from hlotune.compiler.configs.layouts import LayoutSpace
from hlotune.compiler.measurement.machine import this_machine
from hlotune.compiler.measurement.measure import OK, BatchResult, MeasureSettings, Measurement, Measurer
from hlotune.compiler.spaces.space import SearchSpace
from hlotune.data.collections import COLLECTED
from hlotune.data.npz import write_sample
from hlotune.errors import HlotuneError
from hlotune.programs import load_program
from hlotune.programs.program import slug_of
from hlotune.progress import progress_bar
from hlotune.tuning.strategies.base import Strategy
from hlotune.tuning.strategies.chain import Chain
from hlotune.tuning.strategies.exhaustive import Exhaustive
from hlotune.tuning.strategies.random_search import RandomSearch

LAYOUT_SEARCHES = ("random", "default")
REPLACEMENTS = 2  # failed configs are replaced by at most this many times `configs` further draws


@dataclass(frozen=True)
class CollectSettings:
    space: str
    configs: int = 64
    samples: int = 30  # per config, at least
    seed: int = 0
    search: str = "random"  # layout, fusion: random or default (perturbations of the compiler's choice)
    batch: int = 8
    repeats: int = 3
    rtol: float | None = None  # float outputs' tolerance; None: per dtype
    noise_target: float | None = None  # more rounds until each median is this certain (95% CI)

    def __post_init__(self) -> None:
        if self.space not in COLLECTED:
            raise HlotuneError(f"unknown space {self.space!r}: use {', '.join(COLLECTED)}")
        if self.search not in LAYOUT_SEARCHES:
            raise HlotuneError(f"unknown layout search {self.search!r}: use {' or '.join(LAYOUT_SEARCHES)}")
        if min(self.configs, self.samples, self.batch, self.repeats) < 1:
            raise HlotuneError("--configs, --samples, --batch and --repeats must be at least 1")

    def measure_settings(self) -> MeasureSettings:
        """Every config timed in full (no early stop, no fewer rounds for long runs): its
        samples are its label."""
        return MeasureSettings(
            rounds=math.ceil(self.samples / self.repeats), repeats=self.repeats,
            rtol=self.rtol, seed=self.seed, noise_target=self.noise_target, early_stop=False,
            timed_s=None,
        )


@dataclass
class CollectResult:
    program: str
    path: str
    configs: int  # measured successfully, the default included
    failed: int
    noise_floor: float  # median over batches
    spread: float  # max / min runtime over the configs
    seconds: float
    resumed: bool


def collect(spec: str, settings: CollectSettings, out: Path, *, progress: bool = True) -> CollectResult:
    """Measure one program and write its files into `out` (resuming where a run stopped)."""
    if (done := _collected(out / f"{slug_of(spec)}.json", spec, settings)) is not None:
        return done  # known from its summary, without building the program
    program = load_program(spec)
    name = program.slug
    summary_path = out / f"{name}.json"
    if (done := _collected(summary_path, program.name, settings)) is not None:
        return done
    started = time.perf_counter()
    encoder = ConfigEncoder(LayoutSpace(program))
    candidates = draw_configs(encoder, settings)
    journal = Journal(out / ".journal" / f"{name}.jsonl", asdict(settings) | {"program": program.name})
    resumed = bool(journal.rounds)
    offer(program)  # its workers need not run its init again
    with Measurer(program.name, settings.measure_settings()) as measurer:  # one worker for all
        batches = _measure_batches(measurer, _in_batches(candidates, settings.batch), journal, progress)
        replaced = _replace_failures(measurer, encoder, settings, candidates, batches, journal, progress)
    sample, records = _assemble(encoder, batches, settings)
    write_sample(out / f"{name}.npz", sample)
    result = CollectResult(
        program=program.name, path=str(out / f"{name}.npz"),
        configs=sample.num_configs, failed=sum(r["status"] != OK for r in records),
        noise_floor=float(np.median([b["noise_floor"] for b in batches])),
        spread=float(sample.configs.config_runtime.max() / sample.configs.config_runtime.min()),
        seconds=time.perf_counter() - started, resumed=resumed,
    )
    summary = {
        "program": program.name, "space": settings.space, "settings": asdict(settings),
        "machine": this_machine().to_dict(), "result": asdict(result) | {"resumed": False},
        "batches": [{k: b[k] for k in ("default_ns", "noise_floor")} for b in batches],
        "configs": records, "replacements": replaced,
    }
    summary_path.write_text(json.dumps(summary, indent=1))
    return result


def _collected(summary_path: Path, name: str, settings: CollectSettings) -> CollectResult | None:
    """The result of `name` collected before under `settings`, or None if it is not complete."""
    if not summary_path.exists():
        return None
    done = json.loads(summary_path.read_text())
    if done.get("program") != name or done.get("settings") != asdict(settings) or not _complete(done, settings):
        return None
    return CollectResult(**done["result"] | {"resumed": True})


def draw_configs(
    encoder: ConfigEncoder, settings: CollectSettings, count: int | None = None
) -> list[CompileConfig]:
    """The first `count` (default `settings.configs`) configs of the seed's stream, drawn through
    the tuner's space and strategies: the same seed draws the same configs, and a longer draw
    begins with a shorter one. The fusion space's choices are those of the encoder's fused module."""
    fusion = encoder.fusion.choices if settings.space == "fusion" else None
    space = SearchSpace(settings.space, encoder.layouts, allow_numerics_change=True,  # data wants variety
                        fusion=fusion)
    return _strategy(space, settings).ask(settings.configs if count is None else count)


def _complete(summary: dict, settings: CollectSettings) -> bool:
    """Whether a finished program's files need no more replacement draws: enough are healthy,
    or the cap was drawn (files written under a lower cap, or none, are topped up)."""
    healthy = summary["result"]["configs"] - 1  # the default is not drawn
    return healthy >= settings.configs or summary.get("replacements", 0) >= REPLACEMENTS * settings.configs


def _replace_failures(measurer, encoder, settings, candidates, batches, journal, progress) -> int:
    """Measure further draws, one batch per shortfall, until `settings.configs` configs are
    healthy or REPLACEMENTS times as many were drawn again; extends `candidates` and
    `batches`, returns how many were drawn. Deterministic given the journal, so resuming
    redraws the same batches."""
    first = len(candidates)
    while True:
        healthy = sum(r["status"] == OK for b in batches for r in b["configs"])
        short = min(settings.configs - healthy, first + REPLACEMENTS * settings.configs - len(candidates))
        extra = draw_configs(encoder, settings, len(candidates) + short)[len(candidates):] if short > 0 else []
        if not extra:  # enough, the cap, or the space has no more configs
            return len(candidates) - first
        batches += _measure_batches(measurer, [extra], journal, progress, first=len(batches))
        candidates += extra


def _in_batches(candidates: list[CompileConfig], size: int) -> list[list[CompileConfig]]:
    return [candidates[start : start + size] for start in range(0, len(candidates), size)]


def _strategy(space: SearchSpace, settings: CollectSettings) -> Strategy:
    """Flags: every single change of the default first (the knobs that matter differ per graph),
    then random combinations. Layouts and fusion, as TpuGraphs' two layout searches: each site
    (kernel) set with probability 1/2 (`random`), or the compiler's choice perturbed at one to
    three sites (`default`)."""
    if settings.space == "flags":
        return Chain(Exhaustive.around_default(space, seed=settings.seed), RandomSearch(space, settings.seed))
    if settings.search == "random":
        return RandomSearch(space, settings.seed, rate=0.5)
    return RandomSearch(space, settings.seed, near_default=3)


def _measure_batches(
    measurer: Measurer, groups: list[list[CompileConfig]], journal: Journal, progress: bool,
    first: int = 0,
) -> list[dict]:
    """Measure each group of configs as one batch (numbered from `first` in the journal)."""
    rounds = measurer.settings.rounds
    bar = progress_bar(total=len(groups) * rounds, desc=measurer.program, unit="round",
                       show=progress, leave=False)
    summaries = []
    for batch, group in enumerate(groups, first):
        if batch not in journal.batches:
            prior = journal.rounds.get(batch, {})
            bar.update(len(prior.get("d0", [])))
            result = measurer.measure(
                group,
                prior=prior,
                on_round=lambda index, samples, b=batch: (journal.record_round(b, index, samples), bar.update()),
            )
            journal.record_batch(batch, _batch_summary(result))
        else:
            bar.update(rounds)
        summaries.append(journal.batches[batch])
    bar.close()
    return summaries


def _batch_summary(result: BatchResult) -> dict:
    return {
        "default_ns": result.default_ns,
        "noise_floor": result.noise_floor,
        "loop": result.loop,
        "reference_samples": result.defaults[0].samples_ns,
        "configs": [_record(m) for m in result.measurements],
    }


def _record(measurement: Measurement) -> dict:
    return {
        "config": measurement.config.to_dict(),
        "status": measurement.status,
        "reason": measurement.reason,
        "median_ns": measurement.median_ns if measurement.samples_ns else None,
        "compile_s": measurement.compile_s,
        "max_rel_error": measurement.max_rel_error,
        "converged": measurement.converged,
        "samples": measurement.samples_ns,
    }


def _assemble(encoder: ConfigEncoder, batches: list[dict], settings: CollectSettings):
    """The npz sample (default first, then the healthy configs) and one record per candidate."""
    default_ns = float(np.median([b["default_ns"] for b in batches]))
    configs, runtimes, samples, records = [DEFAULT_CONFIG], [default_ns], [batches[0]["reference_samples"]], []
    for batch, summary in enumerate(batches):
        scale = default_ns / summary["default_ns"]
        for record in summary["configs"]:
            records.append({k: v for k, v in record.items() if k != "samples"} | {"batch": batch})
            if record["status"] == OK:
                configs.append(CompileConfig.from_dict(record["config"]))
                runtimes.append(record["median_ns"] * scale)
                samples.append(record["samples"])
    sample = encoder.graph_sample(settings.space, configs, np.array(runtimes), stored_samples(samples))
    return sample, records


def stored_samples(samples: list[list[int]]) -> np.ndarray:
    """Each config's samples cut to the fewest any config has, taken evenly over its rounds
    rather than the first ones: a batch sampled to its noise target can drift part-way, and its
    first rounds alone would then miss the config's median."""
    width = min(len(s) for s in samples)
    return np.array([np.asarray(s)[np.linspace(0, len(s) - 1, width).round().astype(int)] for s in samples],
                    np.int64)
