"""Training cost models: losses, targets, the training loop, checkpoints and validation.

Heavy imports (torch) wait until first use, so `hlotune --help` stays fast.
"""

from __future__ import annotations

from hlotune.lazy import lazy_attributes

_API = {
    "LOSSES": ("hlotune.train.losses", "LOSSES"),
    "CombinedLoss": ("hlotune.train.losses", "CombinedLoss"),
    "EpochLog": ("hlotune.train.log", "EpochLog"),
    "GSTSettings": ("hlotune.train.gst", "GSTSettings"),
    "TrainResult": ("hlotune.train.trainer", "TrainResult"),
    "TrainSettings": ("hlotune.train.trainer", "TrainSettings"),
    "train": ("hlotune.train.trainer", "train"),
    "validate": ("hlotune.train.validate", "validate"),
}

__all__ = list(_API)


__getattr__ = lazy_attributes(__name__, _API)
