"""Models by name, for `hlotune eval` and `hlotune predict`: each becomes a scorer.

A scorer maps a GraphSample to one score per config, lower = predicted faster. The names are
registry.py's (MODELS), each loaded here:
- a folder written by `hlotune train` (its `model/`), a saved model folder, or an ensemble of
  them (`hlotune ensemble`);
- `pretrained:flags`, `pretrained:layout`: the models shipped in the package, trained on the
  built-in collections' train splits (docs/cost_model.md has their scores on the test splits);
- `pretrained:kernels` (or a folder `hlotune rebuild kernel-model` wrote): a program's
  configs scored from the kernels XLA compiled for them (kernels/program_model.py);
- `baseline:random`: uniform scores, seeded by the graph's name, the floor any model must beat;
- `baseline:analytical`: hand-written rules per collection, nothing trained;
- `baseline:gbdt`: gradient-boosted trees, trained at the first graph on the built-in train
  split of its collection (`baseline:gbdt@DIR`: on the files in DIR) and cached;
- `baseline:gbdt-rank[@DIR]`: the same trees trained with LambdaRank on each graph's order.

`gnn` names a GNN yet to be trained, which only cross-validation (crossval.py) trains.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

from hlotune.data.dataset import Dataset
from hlotune.data.sample import GraphSample
from hlotune.errors import HlotuneError
from hlotune.evaluation.registry import BASELINES, FOLDER, MODELS, model_kind

# Any ranking model as evaluate, crossval and the tuner's ScorerCostModel take it: one score per
# config of a sample, lower = predicted faster.
Scorer = Callable[[GraphSample], np.ndarray]

GBDT_OBJECTIVES = {"gbdt": "regression", "gbdt-rank": "lambdarank"}
GNN = "gnn"


def load_scorer(name: str) -> Scorer:
    """The scorer `name` names: its kind's in MODELS (registry.py), else a folder's."""
    return (model_kind(MODELS, name) or MODELS[FOLDER]).load(name)


def baseline_scorer(name: str) -> Scorer:
    """`baseline:NAME`: one of BASELINES."""
    baseline, at, train = name.removeprefix("baseline:").partition("@")
    if baseline in GBDT_OBJECTIVES and (train or not at):
        return _gbdt(train or None, GBDT_OBJECTIVES[baseline])
    if baseline == "random" and not at:
        return random_scores
    if baseline == "analytical" and not at:
        from hlotune.models.baselines.analytical import analytical_scores

        return analytical_scores
    raise HlotuneError(f"unknown baseline {name!r}; known: {', '.join(BASELINES)}")


def pretrained_scorer(name: str) -> Scorer:
    """`pretrained:NAME`: a model shipped in the package."""
    from hlotune.models.files import pretrained_folder

    return _trained(name, pretrained_folder(name.removeprefix("pretrained:")))


def folder_scorer(name: str) -> Scorer:
    """A model folder; `gnn`, unless a folder, is a GNN to train."""
    if name == GNN and not Path(name).exists():
        raise HlotuneError("gnn is a GNN to train: `hlotune cv` trains one per "
                           "fold; elsewhere give a trained model folder")
    return _trained(name, Path(name))


def _trained(name: str, folder: Path) -> Scorer:
    """The kernel program model `name` names, else the GNN (or ensemble) in `folder`."""
    from hlotune.kernels.program_model import KernelScorer, load_kernel_program_model

    if (kernel_model := load_kernel_program_model(name)) is not None:
        return KernelScorer(kernel_model)
    return ModelScorer.load(folder)


def random_scores(sample: GraphSample) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(sample.name.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).random(sample.num_configs)


def _gbdt(train: str | None, objective: str) -> Scorer:
    """Trained (or taken from the cache) at the first graph, whose collection picks the data."""
    from hlotune.models.baselines.gbdt import GbdtBaseline, load_lightgbm

    load_lightgbm()  # a missing extra fails now, not at the first graph
    data = Dataset(train) if train is not None else None  # a wrong DIR fails now, not mid-eval
    models: dict[str | None, GbdtBaseline] = {}

    def scores(sample: GraphSample) -> np.ndarray:
        collection = sample.collection
        if collection not in models:
            train_data = data if data is not None else _builtin_train(collection)
            models[collection] = GbdtBaseline.cached(train_data, objective)
        return models[collection].scores(sample)

    return scores


def _builtin_train(collection: str | None) -> Dataset:
    try:
        return Dataset(f"builtin:{collection}/train")
    except HlotuneError:
        raise HlotuneError(
            f"baseline:gbdt trains on builtin:{collection}/train, which this installation lacks: "
            f"name {collection} training files with baseline:gbdt@DIR"
        ) from None


class ModelScorer:
    """A trained GraphCostModel, or a seed ensemble of them (`models/ensemble.py`), as a scorer,
    which a tuner may fine-tune on its measurements."""

    def __init__(self, models) -> None:
        self.models = list(models)

    @classmethod
    def load(cls, folder: Path) -> ModelScorer:
        from hlotune.models.ensemble import member_folders
        from hlotune.models.gnn import GraphCostModel

        if not folder.exists():
            raise HlotuneError(f"{folder}: no such model folder (or use baseline:random)")
        return cls(GraphCostModel.load(member) for member in member_folders(folder))

    def __call__(self, sample: GraphSample) -> np.ndarray:
        from hlotune.models.ensemble import average_standardised
        from hlotune.models.predict import predict_scores

        if len(self.models) == 1:
            return predict_scores(self.models[0], sample)
        return average_standardised([predict_scores(model, sample) for model in self.models])

    def fine_tune(self, sample: GraphSample, seed: int = 0) -> None:
        """Adapt the model(s) to one program's measured configs (`sample`'s runtimes)."""
        from hlotune.train.fine_tune import fine_tune

        for model in self.models:
            fine_tune(model, sample, seed=seed)
