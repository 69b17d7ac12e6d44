"""Describe and validate TpuGraphs files: what `hlotune inspect` prints.

An npz is read lazily and checked against the schema; a `.pb` or HLO text file is featurized
first, so raw records describe themselves the same way as the npz made from them.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from hlotune.data.builtin import resolve
from hlotune.data.dataset import split_info
from hlotune.data.npz import check_file
from hlotune.data.sample import GraphSample, LayoutConfigArrays, TileConfigArrays
from hlotune.errors import HlotuneError
from hlotune.hlo.opcodes import OPCODE_NAMES
from hlotune.hlo.sources import featurize_source

INSPECTABLE = (".npz", ".pb", ".hlo", ".txt")
_TOP_OPCODES = 10


@dataclass
class Inspection:
    """What one file holds, and whether it follows the schema (JSON-ready)."""

    path: str
    family: str | None = None  # the program's name before `@`, or a TpuGraphs file's model
    source: str = "file"  # zoo, corpus, tpugraphs or file
    noise_floor: float | None = None  # measured collections: the batches' median noise floor
    collection: str | None = None
    nodes: int = 0
    edges: int = 0
    configs: int = 0
    configurable_nodes: int = 0
    labelled: bool = False
    split: dict = field(default_factory=dict)
    opcodes: dict[str, int] = field(default_factory=dict)  # the most frequent, by count
    runtime_ns: dict[str, float] = field(default_factory=dict)  # min / median / max
    valid: bool = True
    errors: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


def inspect(path: str | Path) -> Iterator[Inspection]:
    """One Inspection per file: `path` itself, or every inspectable file under a folder
    (`builtin:...` names the built-in dataset), leaving out hidden folders' files (the tile
    collection keeps its kernels' module texts in `.kernels/`, the sources of its npz files)."""
    path = resolve(path)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.suffix in INSPECTABLE and p.is_file()
                       and not any(part.startswith(".") for part in p.relative_to(path).parts))
        if not files:
            raise HlotuneError(f"{path}: no {', '.join(INSPECTABLE)} files in this folder")
    elif path.exists():
        files = [path]
    else:
        raise HlotuneError(f"{path}: no such file or folder")
    for file in files:
        yield from inspect_file(file)


def inspect_file(path: Path) -> list[Inspection]:
    if path.suffix == ".npz":
        sample, errors = check_file(path)
        return [describe(sample, str(path), errors)]
    try:
        samples = featurize_source(str(path))
    except HlotuneError as error:
        return [describe(None, str(path), [str(error)])]
    many = len(samples) > 1
    return [describe(s, f"{path}#{s.name}" if many else str(path), []) for s in samples]


def describe(sample: GraphSample | None, path: str, errors: list[str]) -> Inspection:
    info = Inspection(path=path, split=_split(path), valid=not errors, errors=errors)
    info.source, info.family, info.noise_floor = _provenance(path, info.split, sample)
    if sample is None:
        return info
    graph, configs = sample.graph, sample.configs
    info.collection = sample.collection
    info.nodes, info.edges, info.configs = graph.num_nodes, graph.num_edges, sample.num_configs
    info.labelled = sample.labelled
    if isinstance(configs, LayoutConfigArrays):
        info.configurable_nodes = int(configs.node_config_ids.shape[0])
    counts = Counter(graph.node_opcode.tolist()).most_common(_TOP_OPCODES)
    info.opcodes = {_opcode_name(op): n for op, n in counts}
    if sample.labelled:
        info.runtime_ns = _runtime_stats(configs)
    return info


def family_of(path: Path, sample: GraphSample) -> str:
    """The architecture family of a graph file, as `describe` reports it: what leave-family-out
    cross-validation holds out together."""
    return _provenance(str(path), _split(str(path)), sample)[1]


def _provenance(path: str, split: dict, sample: GraphSample | None) -> tuple[str, str | None, float | None]:
    """(source, family, noise floor): from the summary `hlotune collect` writes beside an npz
    (or the tile collection's kernel card), else the program spec a sample was built from, else
    the TpuGraphs folder layout."""
    file = Path(path.split("#")[0])
    summary = file.with_suffix(".json")
    spec, noise = (sample.source if sample is not None else ""), None
    if file.suffix == ".npz" and summary.is_file():
        try:
            document = json.loads(summary.read_text())
            if "programs" in document:  # a tile kernel's card: the first program it came from
                spec, noise = document["programs"][0], document["noise_floor"]
            else:
                spec, noise = document["program"], float(document["result"]["noise_floor"])
        except (ValueError, KeyError, TypeError):
            pass  # not a collection summary: the npz speaks for itself
    prefix, sep, rest = spec.partition(":")
    if sep and prefix in ("zoo", "corpus", "numerics"):
        return prefix, rest.partition("@")[0], noise
    if split.get("source") and split.get("collection") in ("tile", "layout"):
        return "tpugraphs", file.stem.split(".")[0], noise
    return "file", file.stem.partition("@")[0], noise


def _split(path: str) -> dict:
    return {k: v for k, v in asdict(split_info(path.split("#")[0])).items() if v is not None}


def _opcode_name(opcode: int) -> str:
    return OPCODE_NAMES[opcode] if opcode < len(OPCODE_NAMES) else f"#{opcode}"


def _runtime_stats(configs) -> dict[str, float]:
    runtimes = configs.config_runtime.astype(np.float64)
    stats = {"min": runtimes.min(), "median": float(np.median(runtimes)), "max": runtimes.max()}
    if isinstance(configs, TileConfigArrays):
        normalised = runtimes / configs.config_runtime_normalizers
        stats |= {"normalised_min": normalised.min(), "normalised_max": normalised.max()}
    return {key: float(value) for key, value in stats.items()}


def _stat(name: str, value: float) -> str:
    if name.startswith("normalised"):
        return f"{name} {value:.4g}"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if value >= scale:
            return f"{name} {value / scale:.4g} {unit}"
    return f"{name} {value:.4g} ns"


def format_inspection(info: Inspection) -> str:
    """A short human-readable block for one file."""
    status = "valid" if info.valid else f"INVALID: {len(info.errors)} problem(s)"
    split = "/".join(str(v) for v in info.split.values())
    kind = info.collection or ("graph-only" if info.nodes else "unreadable")
    lines = [
        f"{info.path}: {kind}{f' [{split}]' if split else ''}, {status}",
        f"  nodes {info.nodes:,}  edges {info.edges:,}  configs {info.configs:,}"
        + (f"  configurable nodes {info.configurable_nodes:,}" if info.configurable_nodes else ""),
    ]
    noise = "" if info.noise_floor is None else f", noise floor {info.noise_floor:.1%}"
    lines.append(f"  family {info.family} ({info.source}){noise}")
    if info.opcodes:
        lines.append("  opcodes: " + ", ".join(f"{op} {n}" for op, n in info.opcodes.items()))
    if info.runtime_ns:
        lines.append("  runtime: " + ", ".join(_stat(k, v) for k, v in info.runtime_ns.items()))
    elif info.configs:
        lines.append("  runtimes: all 0 (unlabelled test split)")
    lines += [f"  error: {error}" for error in info.errors]
    return "\n".join(lines)
