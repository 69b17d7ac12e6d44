"""The model folder on disk: `config.json` (what to build) and `model.safetensors` (the tensors).

Model files are shared between users, so they carry no code: safetensors holds only named
arrays (loading it cannot run anything, unlike a pickle), and the JSON holds only the
ModelSettings. Writes are atomic so a crash never leaves half a model behind; reads turn every
problem into a one-line HlotuneError naming the file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hlotune.atomic import write_bytes_atomic
from hlotune.errors import HlotuneError

if TYPE_CHECKING:  # torch loads with the tensors, so that the baselines' files need none
    from torch import Tensor

# The models shipped in models/pretrained/: one per collection, and `kernels`, the kernel
# program model (kernels/program_model.py) that ranks flags configs from their compiled kernels.
PRETRAINED = ("flags", "layout", "tile", "kernels")
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
FORMAT = "hlotune-graph-cost-model"
VERSION = 1
TRAINED_MODEL_DIR = "model"  # where `hlotune train OUT` keeps its best model: OUT/model


def model_folder(path: str | os.PathLike[str]) -> Path:
    """A model folder given as itself or as `hlotune train`'s output folder."""
    path = Path(path)
    return path / TRAINED_MODEL_DIR if (path / TRAINED_MODEL_DIR).is_dir() else path


def pretrained_folder(collection: str) -> Path:
    """The shipped model folder for a built-in collection (`pretrained:COLLECTION`)."""
    if collection not in PRETRAINED:
        raise HlotuneError(
            f"no pretrained model for {collection!r}; shipped: "
            + ", ".join(f"pretrained:{name}" for name in PRETRAINED)
        )
    return Path(__file__).parent / "pretrained" / collection


def write_model_files(
    model_dir: str | os.PathLike[str], config: dict[str, Any], tensors: dict[str, Tensor]
) -> None:
    folder = Path(model_dir)
    document = {"format": FORMAT, "version": VERSION, "model": config}
    write_bytes_atomic(folder / WEIGHTS_FILE, save_tensors(tensors))
    write_bytes_atomic(folder / CONFIG_FILE, (json.dumps(document, indent=2) + "\n").encode())


def read_model_files(
    model_dir: str | os.PathLike[str],
) -> tuple[dict[str, Any], dict[str, Tensor]]:
    """The `model` object of config.json and the tensors, both checked for readability only."""
    folder = Path(model_dir)
    if not folder.is_dir():
        raise HlotuneError(f"{folder}: no such model folder")
    document = read_document(folder / CONFIG_FILE, FORMAT, VERSION, "model config")
    return document.get("model"), load_tensors(folder / WEIGHTS_FILE)


def read_document(path: Path, format: str, version: int, what: str) -> dict[str, Any]:
    """The config.json of a saved network, checked for its format marker and version."""
    document = read_json(path)
    if not isinstance(document, dict) or document.get("format") != format:
        raise HlotuneError(f"{path}: not an hlotune {what}")
    if document.get("version") != version:
        raise HlotuneError(
            f"{path}: format version {document.get('version')!r}, this hlotune reads {version}"
        )
    return document


def save_tensors(tensors: dict[str, Tensor]) -> bytes:
    import safetensors.torch

    return safetensors.torch.save({k: v.detach().cpu().contiguous() for k, v in tensors.items()})


def load_tensors(path: Path) -> dict[str, Tensor]:
    import safetensors.torch

    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise HlotuneError(f"{path}: missing") from None
    except OSError as err:
        raise HlotuneError(f"{path}: cannot read ({err.strerror or err})") from None
    try:
        return safetensors.torch.load(data)
    except Exception as err:  # safetensors raises its own and Rust-side errors on damaged bytes
        why = _first_line(err)
        raise HlotuneError(f"{path}: not a readable safetensors file ({why})") from None


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise HlotuneError(f"{path}: missing") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise HlotuneError(f"{path}: not valid JSON ({_first_line(err)})") from None


def _first_line(err: Exception) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0]
