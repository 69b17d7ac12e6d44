"""Leave-family-out cross-validation: `hlotune cv --folds K`.

A fixed test split of a small dataset holds a few families (the built-in one: 2 families, 8
graphs), too few to tell two models apart. Here every family is held out once: the families
are dealt into K folds of about equal graph counts, and for each fold the model is trained on
the other folds' graphs and scored by `evaluate` on the fold's, so no family is both trained
on and scored. The report is each fold's Evaluation and every metric's mean and standard
deviation across folds.

What can be cross-validated is what can be trained per fold: `gnn` (by `hlotune train`'s
trainer, with `settings`; there is no validation set, as the held-out fold must not pick
the model, so each fold scores its last epoch's model), `baseline:gbdt` and
`baseline:gbdt-rank` (fitted per fold, not cached), and the baselines that learn nothing
(`baseline:analytical`, `baseline:random`), which each fold only scores. A model folder,
`pretrained:*` or `baseline:gbdt@DIR` was trained on fixed data that held most families.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from hlotune.data.dataset import Dataset
from hlotune.deprecation import renamed_keyword
from hlotune.errors import HlotuneError
from hlotune.evaluation.evaluate import Evaluation, evaluate
from hlotune.evaluation.scorers import GBDT_OBJECTIVES, GNN, ModelScorer, Scorer, load_scorer
from hlotune.hlo.inspection import family_of
from hlotune.progress import progress_bar

if TYPE_CHECKING:
    from hlotune.models.settings import ModelSettings
    from hlotune.train.trainer import TrainSettings

GBDT = {f"baseline:{name}": objective for name, objective in GBDT_OBJECTIVES.items()}
UNTRAINED = ("baseline:analytical", "baseline:random")
MODELS = (GNN, *GBDT, *UNTRAINED)


@dataclass
class FoldResult:
    fold: int  # from 1
    families: list[str]  # held out
    train_graphs: int
    train_seconds: float
    evaluation: Evaluation  # on the held-out families' graphs


@dataclass
class CrossValidation:
    model: str
    collection: str
    seed: int
    folds: list[FoldResult]
    mean: dict  # Evaluation's metrics (kendall_tau, opa, top_k_error, noise_ceiling_tau)
    std: dict  # the same metrics' sample standard deviation across folds
    seconds: float

    def to_json(self) -> dict:
        return asdict(self)


def cross_validate(
    data: str | Path | Sequence[str | Path],
    model: str,
    *,
    folds: int,
    seed: int = 0,
    settings: TrainSettings | None = None,
    model_settings: ModelSettings | None = None,
    progress: bool = False,
    model_config: ModelSettings | None = None,
) -> CrossValidation:
    """Leave-family-out cross-validation of `model` (one of MODELS) on the labelled graphs
    of `data` (folders or files, pooled). `seed` deals the families and seeds GNN training;
    `settings` (but their seed) and `model_settings` (`model_config`, its old name, for one
    release) are `hlotune.train.train`'s for `gnn`."""
    model_settings = renamed_keyword(model_settings, model_config, call="hlotune.cross_validate",
                                     old="model_config", new="model_settings")
    if model not in MODELS:
        raise HlotuneError(
            f"{model} cannot be cross-validated: only a model trained per fold can "
            f"(a model folder, pretrained:* or baseline:gbdt@DIR was trained on fixed data); "
            f"use {', '.join(MODELS)}"
        )
    if settings is not None and settings.init_from is not None:
        raise HlotuneError("cannot cross-validate with --init-from: that model was trained on "
                           "fixed data, which may hold the families each fold holds out")
    started = time.perf_counter()
    graphs = _labelled_graphs(Dataset(data))
    groups = partition(list(graphs.values()), folds, seed)
    fit = _trainer(model, seed, settings, model_settings, progress)
    results = [
        _run_fold(index, held_out, graphs, fit)
        for index, held_out in enumerate(progress_bar(groups, show=progress, desc="cv",
                                                      unit="fold", leave=False), 1)
    ]
    evaluations = [result.evaluation for result in results]
    return CrossValidation(
        model=model, collection=evaluations[0].collection, seed=seed, folds=results,
        mean=_across(evaluations, statistics.fmean), std=_across(evaluations, statistics.stdev),
        seconds=time.perf_counter() - started,
    )


def partition(families: Sequence[str], folds: int, seed: int) -> list[list[str]]:
    """Deal the families of `families` (one entry per graph) into `folds` groups of about equal
    graph counts: largest family first, each to the group with the fewest graphs so far (the
    first such); `seed` shuffles which of equally large families go together."""
    counts = Counter(families)
    if folds < 2:
        raise HlotuneError(f"--folds must be at least 2, got {folds}")
    if folds > len(counts):
        raise HlotuneError(f"--folds {folds} is more than the data's {len(counts)} families")
    shuffled = np.random.default_rng(seed).permutation(sorted(counts)).tolist()
    groups: list[list[str]] = [[] for _ in range(folds)]
    sizes = [0] * folds
    for family in sorted(shuffled, key=lambda name: -counts[name]):
        smallest = sizes.index(min(sizes))
        groups[smallest].append(family)
        sizes[smallest] += counts[family]
    return [sorted(group) for group in groups]


def _labelled_graphs(dataset: Dataset) -> dict[Path, str]:
    """Each labelled graph's path and family; all must be of one collection."""
    graphs, collections = {}, set()
    for path, sample in zip(dataset.paths, dataset):
        if sample.labelled:
            graphs[path] = family_of(path, sample)
            collections.add(sample.collection)
    if not graphs:
        raise HlotuneError(f"{dataset.root}: no labelled graphs to cross-validate on")
    if len(collections) > 1:
        raise HlotuneError(f"{dataset.root}: graphs of several collections "
                           f"({', '.join(sorted(collections))}); cross-validate one at a time")
    return graphs


def _run_fold(index: int, held_out: list[str], graphs: dict[Path, str],
              fit: Callable[[list[Path]], Scorer]) -> FoldResult:
    train = [path for path, family in graphs.items() if family not in held_out]
    started = time.perf_counter()
    score = fit(train)
    seconds = time.perf_counter() - started
    test = Dataset([path for path, family in graphs.items() if family in held_out])
    return FoldResult(index, held_out, len(train), seconds, evaluate(test, score))


def _trainer(model: str, seed: int, settings: TrainSettings | None,
             model_settings: ModelSettings | None, progress: bool) -> Callable[[list[Path]], Scorer]:
    """A function from a fold's training files to the scorer trained on them."""
    if model == GNN:
        return lambda files: _train_gnn(files, seed, settings, model_settings, progress)
    if model in GBDT:
        from hlotune.models.baselines.gbdt import GbdtBaseline

        return lambda files: GbdtBaseline.fit(Dataset(files), objective=GBDT[model]).scores
    return lambda files: load_scorer(model)


def _train_gnn(files: list[Path], seed: int, settings: TrainSettings | None,
               model_settings: ModelSettings | None, progress: bool) -> Scorer:
    from hlotune.train import TrainSettings, train

    settings = replace(settings or TrainSettings(), seed=seed)
    with tempfile.TemporaryDirectory(prefix="hlotune-cv-") as out:
        result = train(files, None, out, settings, model_settings=model_settings, progress=progress)
        return ModelScorer.load(result.model_dir)


def _across(evaluations: list[Evaluation], reduce: Callable[[list[float]], float]) -> dict:
    """One statistic of every metric over the folds' evaluations."""
    ceilings = [e.noise_ceiling_tau for e in evaluations if e.noise_ceiling_tau is not None]
    return {
        "kendall_tau": reduce([e.kendall_tau for e in evaluations]),
        "opa": reduce([e.opa for e in evaluations]),
        "top_k_error": {k: reduce([e.top_k_error[k] for e in evaluations])
                        for k in evaluations[0].top_k_error},
        "noise_ceiling_tau": reduce(ceilings) if len(ceilings) == len(evaluations) else None,
    }


def format_cross_validation(result: CrossValidation, data: str) -> str:
    graphs = sum(fold.evaluation.graphs for fold in result.folds)
    lines = [f"{result.model} on {data} ({result.collection}, {graphs} graphs), leave-family-out, "
             f"{len(result.folds)} folds, seed {result.seed}: {result.seconds:.1f} s"]
    for fold in result.folds:
        lines.append(f"  fold {fold.fold} {', '.join(fold.families)} ({fold.evaluation.graphs} "
                     f"held out, {fold.train_graphs} to train on, {fold.train_seconds:.1f} s): "
                     f"{_metrics(fold.evaluation.to_json())}")
    lines.append(f"  mean ± std: {_metrics(result.mean, result.std)}")
    return "\n".join(lines)


def _metrics(values: dict, std: dict | None = None) -> str:
    """tau, OPA, top-K errors and the noise ceiling, each `± std` when given."""
    spreads = _flat(std) if std is not None else [None] * len(_flat(values))
    return ", ".join(
        f"{label} {value:{style}}" + ("" if spread is None else f" ± {spread[1]:{style}}")
        for (label, value, style), spread in zip(_flat(values), spreads) if value is not None
    )


def _flat(metrics: dict) -> list[tuple[str, float | None, str]]:
    """(label, value, format) of each metric of an Evaluation-shaped dict."""
    return [("tau", metrics["kendall_tau"], ".3f"), ("OPA", metrics["opa"], ".3f")] + [
        (f"top-{k}", v, ".1%") for k, v in metrics["top_k_error"].items()
    ] + [("noise ceiling", metrics["noise_ceiling_tau"], ".3f")]
