"""Training cost models: losses, targets, the training loop, checkpoints and validation.

Heavy imports (torch) wait until first use, so `hlotune --help` stays fast.
"""

from __future__ import annotations

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


def __getattr__(name: str):
    if name not in _API:
        raise AttributeError(f"module 'hlotune.train' has no attribute {name!r}")
    from importlib import import_module

    module, attribute = _API[name]
    return getattr(import_module(module), attribute)
