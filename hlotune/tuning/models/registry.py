"""The models `hlotune tune --model` names: the tuner's own (PRIORS), and every one `hlotune eval`
scores (evaluation/registry.py's MODELS), which ranks as a scorer. Each of the tuner's own builds
the tune's prior from its Build, `load(build, name)`, imported when built: the command line lists
them without importing any."""

from __future__ import annotations

from hlotune.evaluation.registry import MODELS, ModelKind, described
from hlotune.lazy import Imported

# The shipped models. At 32 on the nineteen programs, the search without them (the online model
# alone) found 1.031x less [1.005, 1.060] and kept 1.007x less.
DEFAULT_MODEL = "pretrained"
TRANSFER = "transfer"
NO_MODEL = "none"


def _prior(name: str) -> Imported:
    return Imported("hlotune.tuning.recipes.base", name)


PRIORS: dict[str, ModelKind] = {
    DEFAULT_MODEL: ModelKind(_prior("shipped_prior"), "the shipped model of each collection the space needs, "
                             "flags and layout in the all space"),
    TRANSFER: ModelKind(_prior("transfer_prior"), "flags: what the options did to the built-in training "
                        "programs, or to those collected in DIR", at="DIR"),
    NO_MODEL: ModelKind(None, "no prior: this program's own measurements rank alone (with "
                        "--no-online, nothing)"),
}


def tune_models() -> dict[str, str]:
    """Every `--model` spelling and what it is: the tuner's own, then the scorers'."""
    return described(PRIORS) | described(MODELS)
