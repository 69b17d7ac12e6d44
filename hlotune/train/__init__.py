"""Training cost models: losses, targets, the training loop, checkpoints and validation."""

from hlotune.train.log import EpochLog
from hlotune.train.losses import LOSSES, CombinedLoss
from hlotune.train.gst import GSTSettings
from hlotune.train.trainer import TrainResult, TrainSettings, train
from hlotune.train.validate import validate

__all__ = [
    "LOSSES",
    "CombinedLoss",
    "EpochLog",
    "GSTSettings",
    "TrainResult",
    "TrainSettings",
    "train",
    "validate",
]
