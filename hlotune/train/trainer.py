"""Training a GraphCostModel on folders of TpuGraphs-format graphs.

Each step takes `graphs_per_step` graphs (one by default) and `configs_per_batch` measured
configs of each: ranking is learned between configs of the same graph (runtimes of different
graphs are not comparable), and a graph's config-independent work is shared by its batch.
Large graphs can train by Graph Segment Training (`gst`, see gst.py), and under torchrun the
step's graphs are spread over the processes (distributed.py). AdamW with gradient clipping and
a cosine learning rate, an epoch's steps in epoch.py; after each epoch the model is validated
(Kendall tau, OPA), the best one is kept in `out_dir/model/`, and a checkpoint is written so
that `resume=True` continues the run. Every epoch reseeds from (seed, epoch), so a run is
reproducible on CPU and a resumed run matches an uninterrupted one.

    out_dir/model/        best model by validation (config.json, model.safetensors)
    out_dir/checkpoint/   last finished epoch (model, optimizer, trainer_state.json)
    out_dir/log.csv       epoch, train_loss, valid_tau, valid_opa, lr, seconds
    out_dir/curves.png    log.csv drawn, at most every 30 s and after the last epoch
"""

from __future__ import annotations

import itertools
import json
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch

from hlotune.data.dataset import Dataset
from hlotune.data.sample import GraphSample
from hlotune.deprecation import renamed_keyword
from hlotune.errors import HlotuneError
from hlotune.models.settings import ModelSettings
from hlotune.models.ensemble import member_folders
from hlotune.models.files import TRAINED_MODEL_DIR
from hlotune.models.gnn import GraphCostModel
from hlotune.models.inputs import check_compatible, data_fields
from hlotune.models.normalizer import fit_feature_stats
from hlotune.train import distributed
from hlotune.train.checkpoint import TrainerState, load_checkpoint, replace_folder, save_checkpoint
from hlotune.train.distributed import Group
from hlotune.train.epoch import Step, TrainingRun, train_epoch
from hlotune.train.gst import GSTSettings, SegmentTraining
from hlotune.train.log import Curves, EpochLog, write_csv
from hlotune.train.multitask import JointTask, transfer_node_layers
from hlotune.train.losses import CombinedLoss
from hlotune.train.validate import validate

PathLike = str | os.PathLike[str]

MODEL_DIR = TRAINED_MODEL_DIR
JOINT_MODEL_DIR = "joint-model"
CHECKPOINT_DIR = "checkpoint"
LOG_FILE = "log.csv"
PLOT_FILE = "curves.png"
MONITORS = ("kendall_tau", "opa")
# Settings a resumed run may change; any other change would make it a different run.
RESUMABLE = ("epochs", "patience")


def _folders(dirs: PathLike | Sequence[PathLike]) -> list[PathLike]:
    return [dirs] if isinstance(dirs, (str, os.PathLike)) else list(dirs)


@dataclass(frozen=True, kw_only=True)
class TrainSettings:
    """How a run trains, built by keyword and given to `train` whole; `TrainSettings()` is the
    default recipe. A checkpoint stores it, and a resumed run must match it but for RESUMABLE.
    Paths are kept as strings, as the checkpoint's JSON holds them."""

    epochs: int = 20
    loss: str = "pairwise_hinge"  # a CombinedLoss spec: "mse:1,pairwise_hinge:1", "listmle"
    seed: int = 0
    configs_per_batch: int = 16
    lr: float = 1e-3
    weight_decay: float = 1e-2
    clip_norm: float = 1.0
    patience: int = 5  # epochs without a better validation score before stopping
    monitor: str = "kendall_tau"  # the validation metric early stopping and the best model follow
    valid_max_configs: int | None = 1000
    graphs_per_step: int = 1  # per process; a step of K processes takes K times as many
    drop_duplicate_configs: bool = False  # see hlotune.models.compress
    gst: GSTSettings | None = None  # Graph Segment Training; None trains on whole graphs
    relative_targets: bool = False  # see targets.centred
    init_from: PathLike | None = None  # a model whose node layers this run starts from
    joint_data: Sequence[PathLike] = ()  # the other space's graphs (folders), trained on jointly
    joint_weight: float = 1.0  # of the joint companion's loss

    def __post_init__(self) -> None:
        if self.init_from is not None:
            object.__setattr__(self, "init_from", str(self.init_from))
        object.__setattr__(self, "joint_data", tuple(map(str, _folders(self.joint_data))))
        CombinedLoss.parse(self.loss)  # its errors name the loss
        if self.monitor not in MONITORS:
            raise HlotuneError(f"monitor must be {' or '.join(MONITORS)}, got {self.monitor!r}")
        for name in ("epochs", "configs_per_batch", "patience", "valid_max_configs", "graphs_per_step"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise HlotuneError(f"{name} must be at least 1, got {value}")
        for name in ("lr", "clip_norm", "joint_weight"):
            if not getattr(self, name) > 0:
                raise HlotuneError(f"{name} must be positive, got {getattr(self, name)}")
        if not self.weight_decay >= 0:
            raise HlotuneError(f"weight_decay must not be negative, got {self.weight_decay}")
        if self.joint_data and self.gst is not None:
            raise HlotuneError("joint_data (--joint-data) trains on whole graphs: not with gst "
                               "(--segment-size)")


@dataclass
class TrainResult:
    model_dir: Path  # the best model: what eval and predict load
    epochs_run: int
    best_epoch: int | None
    best_value: float | None  # of the monitored metric; None without validation
    stopped_early: bool
    history: list[EpochLog]


def train(
    train_dirs: PathLike | Sequence[PathLike],
    valid_dir: PathLike | None,
    out_dir: PathLike,
    settings: TrainSettings = TrainSettings(),
    *,
    model_settings: ModelSettings | None = None,
    resume: bool = False,
    progress: bool = True,
    model_config: ModelSettings | None = None,
) -> TrainResult:
    """Train on the graphs under `train_dirs` (one collection), validating on `valid_dir`, as
    `settings` say.

    `model_settings` (`model_config`, its old name, for one release) sets the architecture; its data fields are filled from the data. Without
    `valid_dir` the last epoch is the best and training never stops early. `resume=True`
    continues the run in `out_dir`, with the same settings except `epochs` (more epochs also
    stretch the cosine schedule) and `patience`; without it `out_dir` must not hold a run
    already. A run that stopped early stays stopped. Unlabelled graphs are skipped. Under
    torchrun this process is one of several data-parallel trainers (distributed.py).
    `settings.relative_targets` trains on each config's log runtime relative to the other
    configs of its batch (`targets.centred`). `settings.init_from` (a model folder, of any
    collection) gives the node layers their starting weights (`transfer_node_layers`): what one
    space taught about graphs, another starts from. `settings.joint_data` (the other space's
    graphs) trains a companion model on them beside this one, sharing its node layers
    (multitask.py), its loss weighted by `joint_weight`; the companion at the best epoch goes to
    `out_dir/joint-model/`. A joint run cannot be resumed.
    """
    model_settings = renamed_keyword(model_settings, model_config, call="hlotune.train.train",
                                     old="model_config", new="model_settings")
    group = distributed.join()
    try:
        result = _train(train_dirs, valid_dir, Path(out_dir), settings, model_settings, resume,
                        progress and group.is_main, group)
        distributed.finish(group)
        return result
    finally:
        distributed.leave(group)


def _train(
    train_dirs: PathLike | Sequence[PathLike],
    valid_dir: PathLike | None,
    out: Path,
    settings: TrainSettings,
    model_settings: ModelSettings | None,
    resume: bool,
    progress: bool,
    group: Group,
) -> TrainResult:
    epochs, seed, monitor, patience = (
        settings.epochs, settings.seed, settings.monitor, settings.patience
    )
    loss_fn = CombinedLoss.parse(settings.loss)
    train_sets = [Dataset(folder) for folder in _folders(train_dirs)]
    valid_set = None if valid_dir is None else Dataset(valid_dir)
    device = distributed.device(group)

    if settings.joint_data and (resume or group.active):
        raise HlotuneError("a joint run (--joint-data) runs in one process and cannot be resumed")
    if resume:
        model, optimizer_state, state = load_checkpoint(out / CHECKPOINT_DIR, device)
        _check_resumable(state, settings, model_settings, model.config)
        state.settings = asdict(settings)
    else:
        if (out / CHECKPOINT_DIR).exists() or (out / MODEL_DIR).exists():
            raise HlotuneError(
                f"{out}: holds a training run already; resume it or use another folder"
            )
        torch.manual_seed(seed)
        model, steps_per_epoch = _new_model(train_sets, model_settings or ModelSettings())
        if settings.init_from is not None:
            transfer_node_layers(GraphCostModel.load(member_folders(settings.init_from)[0]), model)
        model.to(device)
        optimizer_state, state = None, TrainerState(asdict(settings), steps_per_epoch)
    if valid_set is not None and valid_set.collection != model.config.collection:
        raise HlotuneError(
            f"{valid_set.root}: {valid_set.collection} graphs, "
            f"training on {model.config.collection}"
        )
    joint = _joint_task(model, settings, device)
    trained = torch.nn.ModuleList([model] + ([] if joint is None else [joint.companion]))
    optimizer = torch.optim.AdamW(
        trained.parameters(), lr=settings.lr, weight_decay=settings.weight_decay
    )
    if optimizer_state is not None:
        optimizer.load_state_dict(optimizer_state)
    if settings.gst is not None and model.layout_late:
        raise HlotuneError("graph segment training propagates layouts: it needs layout_join 'nodes'")
    step = Step(model, None if settings.gst is None else SegmentTraining(settings.gst),
                 None if joint is None else joint.companion)
    wrapped = distributed.wrap(step, group, unused=settings.gst is not None)
    run = TrainingRun(wrapped, optimizer, loss_fn, train_sets,
               _labelled_files(train_sets), settings, group, joint)

    curves = Curves(out / PLOT_FILE)
    while state.epoch < epochs and not state.stopped_early:
        started = time.perf_counter()
        train_loss = distributed.mean(train_epoch(run, state, progress), group)
        if not group.is_main:  # rank 0 validates and saves, then tells the others
            state = distributed.from_main(None, group)
            continue
        summary = None
        if valid_set is not None:
            summary = validate(model, valid_set, max_configs=settings.valid_max_configs)
        state.epoch += 1
        state.history.append(EpochLog(
            epoch=state.epoch,
            train_loss=train_loss,
            valid_tau=None if summary is None else summary["kendall_tau"],
            valid_opa=None if summary is None else summary["opa"],
            lr=optimizer.param_groups[0]["lr"],
            seconds=time.perf_counter() - started,
        ))
        value = None if summary is None else summary[monitor]
        _keep_best(model, out / MODEL_DIR, state, value, patience, joint)
        save_checkpoint(out / CHECKPOINT_DIR, model, optimizer, state)
        write_csv(out / LOG_FILE, state.history)
        curves.update(state.history, last=state.epoch >= epochs or state.stopped_early)
        distributed.from_main(state, group)
    return TrainResult(
        model_dir=out / MODEL_DIR,
        epochs_run=state.epoch,
        best_epoch=state.best_epoch,
        best_value=state.best_value,
        stopped_early=state.stopped_early,
        history=state.history,
    )


def _new_model(train_sets: list[Dataset], config: ModelSettings) -> tuple[GraphCostModel, int]:
    """A model for the data with its feature scaling fitted in one pass, and the labelled
    graph count (the steps of an epoch)."""
    labelled = _labelled(train_sets)
    first = next(labelled, None)
    if first is None:
        folders = ", ".join(str(dataset.root) for dataset in train_sets)
        raise HlotuneError(f"{folders}: no labelled graphs to train on")
    model = GraphCostModel(config.with_data(**data_fields(first)))

    def checked() -> Iterator[GraphSample]:
        for sample in itertools.chain([first], labelled):
            check_compatible(sample, model.config)
            yield sample

    stats = fit_feature_stats(checked())
    model.set_feature_stats(stats)
    return model, stats.graphs


def _joint_task(model: GraphCostModel, settings: TrainSettings, device) -> JointTask | None:
    """The companion of a joint run, on `settings.joint_data`, sharing `model`'s node layers."""
    if not settings.joint_data:
        return None
    train_sets = [Dataset(folder) for folder in settings.joint_data]
    companion, _ = _new_model(train_sets, model.config.without_data())
    joint = JointTask.tied(model, companion, train_sets, _labelled_files(train_sets),
                           settings.joint_weight)
    joint.companion.to(device)
    return joint


def _labelled(train_sets: list[Dataset]) -> Iterator[GraphSample]:
    return (sample for dataset in train_sets for sample in dataset if sample.labelled)


def _labelled_files(train_sets: list[Dataset]) -> list[tuple[int, int]]:
    """(dataset, index) of every labelled graph: the files an epoch shuffles and shares out."""
    return [
        (d, i) for d, dataset in enumerate(train_sets) for i, sample in enumerate(dataset)
        if sample.labelled
    ]


def _keep_best(
    model: GraphCostModel,
    folder: Path,
    state: TrainerState,
    value: float | None,
    patience: int,
    joint: JointTask | None = None,
) -> None:
    """Save the model if it is the best so far (always, without validation), and a joint run's
    companion beside it, their shared layers the same; count stale epochs."""
    if value is None or state.best_value is None or value > state.best_value:
        state.best_epoch, state.best_value, state.stale_epochs = state.epoch, value, 0
        replace_folder(folder, model.save)
        if joint is not None:
            replace_folder(folder.with_name(JOINT_MODEL_DIR), joint.companion.save)
    else:
        state.stale_epochs += 1
        state.stopped_early = state.stale_epochs >= patience


def _check_resumable(
    state: TrainerState,
    settings: TrainSettings,
    model_settings: ModelSettings | None,
    saved: ModelSettings,
) -> None:
    defaults = {f.name: f.default for f in fields(TrainSettings)}  # of settings added later
    changed = [
        name for name, value in asdict(settings).items()
        if name not in RESUMABLE and _as_json(state.settings.get(name, defaults[name])) != _as_json(value)
    ]
    if changed:
        raise HlotuneError(
            f"cannot resume with other settings ({', '.join(changed)}: was "
            f"{', '.join(repr(state.settings.get(n)) for n in changed)})"
        )
    if model_settings is not None:
        wanted = model_settings.with_data(
            saved.collection, saved.node_feat_dim, saved.config_dim, saved.config_feat_names
        )
        if wanted != saved:
            raise HlotuneError("cannot resume with another model config than the checkpoint's")


def _as_json(value):
    """`value` as the checkpoint's JSON holds it (a tuple is a list)."""
    return json.loads(json.dumps(value))
