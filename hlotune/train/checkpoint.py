"""A training run's checkpoint: everything needed to continue it exactly where it stopped.

The folder holds the model files, the optimizer's moments (`optimizer.safetensors`, tensors
only, so no pickle is ever loaded) and `trainer_state.json` (epoch, step, best score, history,
the optimizer's hyper-parameters). Random state is not saved: the trainer reseeds every epoch
from (seed, epoch), so an interrupted run resumed at epoch e continues as if never stopped.
A checkpoint is written to a new folder and swapped in, so it is always whole.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from hlotune.errors import HlotuneError
from hlotune.atomic import write_bytes_atomic
from hlotune.models.files import load_tensors, read_json, save_tensors
from hlotune.models.gnn import GraphCostModel
from hlotune.train.log import EpochLog

OPTIMIZER_FILE = "optimizer.safetensors"
STATE_FILE = "trainer_state.json"


@dataclass
class TrainerState:
    settings: dict[str, Any]  # TrainSettings of the run
    steps_per_epoch: int
    epoch: int = 0  # epochs finished
    step: int = 0  # optimizer steps taken
    best_epoch: int | None = None
    best_value: float | None = None  # of the monitored validation metric
    stale_epochs: int = 0  # epochs since the best
    stopped_early: bool = False
    history: list[EpochLog] = field(default_factory=list)


def save_checkpoint(
    folder: Path, model: GraphCostModel, optimizer: torch.optim.Optimizer, state: TrainerState
) -> None:
    optimizer_state = optimizer.state_dict()
    tensors = {
        f"{param}.{key}": value
        for param, values in optimizer_state["state"].items()
        for key, value in values.items()
    }
    document = asdict(state) | {"optimizer_groups": optimizer_state["param_groups"]}

    def fill(staging: Path) -> None:
        model.save(staging)
        write_bytes_atomic(staging / OPTIMIZER_FILE, save_tensors(tensors))
        write_bytes_atomic(staging / STATE_FILE, (json.dumps(document, indent=1) + "\n").encode())

    replace_folder(folder, fill)


def load_checkpoint(
    folder: Path, device: torch.device | str
) -> tuple[GraphCostModel, dict[str, Any], TrainerState]:
    """The model, the optimizer's state_dict and the trainer state; HlotuneError when damaged."""
    recover_folder(folder)
    if not folder.is_dir():
        raise HlotuneError(f"{folder}: no checkpoint to resume")
    model = GraphCostModel.load(folder, device)
    document = read_json(folder / STATE_FILE)
    try:
        groups = document.pop("optimizer_groups")
        for group in groups:
            group["betas"] = tuple(group["betas"])
        history = [EpochLog(**row) for row in document.pop("history")]
        state = TrainerState(**document, history=history)
    except (AttributeError, KeyError, TypeError) as err:
        raise HlotuneError(f"{folder / STATE_FILE}: not a trainer state ({err})") from None
    moments: dict[int, dict[str, torch.Tensor]] = {}
    for name, tensor in load_tensors(folder / OPTIMIZER_FILE).items():
        param, _, key = name.partition(".")
        if not param.isdigit():
            raise HlotuneError(f"{folder / OPTIMIZER_FILE}: unexpected tensor {name!r}")
        moments.setdefault(int(param), {})[key] = tensor
    return model, {"state": moments, "param_groups": groups}, state


def replace_folder(folder: Path, fill: Callable[[Path], None]) -> None:
    """Fill a staging folder, then swap it in; `recover_folder` undoes a swap cut short."""
    staging, old = folder.with_name(folder.name + ".new"), folder.with_name(folder.name + ".old")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    fill(staging)
    shutil.rmtree(old, ignore_errors=True)
    if folder.exists():
        folder.rename(old)
    staging.rename(folder)
    shutil.rmtree(old, ignore_errors=True)


def recover_folder(folder: Path) -> None:
    """After a crash between the two renames of `replace_folder`, the previous folder is `.old`."""
    old = folder.with_name(folder.name + ".old")
    if not folder.exists() and old.is_dir():
        old.rename(folder)
