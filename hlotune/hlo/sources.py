"""Every way into an HloGraph: JAX callables, HLO text, HloModuleProto and raw TpuGraphs files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from hlotune.hlo import lowering
from hlotune.hlo.text_parser import text_to_proto, texts_to_protos
from hlotune.data.sample import GraphSample
from hlotune.errors import HlotuneError
from hlotune.hlo.featurize import featurize
from hlotune.hlo.graph import HloGraph
from hlotune.hlo.proto import graph_from_proto
from hlotune.hlo.records import MODULE, ModuleRecord, read_pb
from hlotune.programs import is_program_spec, load_program


def from_jax(fn: Callable, *args, optimized: bool = False, name: str = "") -> HloGraph:
    """The graph of `jax.jit(fn)(*args)`; `optimized` takes it after XLA:CPU's passes."""
    graph = graph_from_proto(lowering.lowered_proto(fn, args, optimized=optimized))
    if name:
        graph.name = name
    return graph


def from_text(text: str, *, optimized: bool = False) -> HloGraph:
    proto = text_to_proto(text)
    return graph_from_proto(lowering.optimize_proto(proto) if optimized else proto)


def from_texts(texts: list[str]) -> list[HloGraph]:
    """Many modules' graphs, parsed in one child process (one start-up, not one per text); the
    first text XLA rejects raises its error."""
    graphs = []
    for proto in texts_to_protos(texts):
        if isinstance(proto, HlotuneError):
            raise proto
        graphs.append(graph_from_proto(proto))
    return graphs


def from_proto(data: bytes, *, optimized: bool = False) -> HloGraph:
    return graph_from_proto(lowering.optimize_proto(data) if optimized else data)


def read_file(path: str | Path, *, optimized: bool = False) -> tuple[str, list[ModuleRecord]]:
    """Read an HLO text file or any `.pb`: (kind, one record per module in it)."""
    path = Path(path)
    data = _read_bytes(path)
    try:
        if path.suffix == ".pb":
            return _read_pb(data, path.name.removesuffix(".pb"), optimized)
        return "HloText", [ModuleRecord(from_text(_utf8(data), optimized=optimized), None)]
    except HlotuneError as error:
        raise HlotuneError(f"{path}: {error}") from None


def _read_pb(data: bytes, name: str, optimized: bool) -> tuple[str, list[ModuleRecord]]:
    kind, records = read_pb(data, name=name)
    if optimized:
        if kind != MODULE:
            raise HlotuneError(f"--optimized applies to programs, not to {kind} records")
        records[0].graph = from_proto(data, optimized=True)
    return kind, records


def _utf8(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise HlotuneError("not HLO text (not UTF-8); protobuf files need the .pb suffix") from None


def _read_bytes(path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise HlotuneError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise HlotuneError(f"{path}: is a folder, expected a file") from None
    except OSError as error:
        raise HlotuneError(f"{path}: cannot read ({error.strerror})") from None
    if not data:
        raise HlotuneError(f"{path}: empty file")
    return data


def featurize_source(source: str, *, optimized: bool = False, extended: bool = False,
                     progress: bool = True) -> list[GraphSample]:
    """Featurize a program spec (hlotune.programs: `zoo:NAME[@VARIANT]`, `go:NAME[@VARIANT]`,
    `file.py:FACTORY`...), an HLO text file or a `.pb`: one GraphSample per module, with the
    configs a raw record carries."""
    if is_program_spec(source):
        program = load_program(source, abstract=True)
        graph = from_jax(program.fn, *program.args, optimized=optimized, name=program.slug)
        named = [(program.slug, ModuleRecord(graph, None))]
    else:
        records = read_file(source, optimized=optimized)[1]
        named = [(_record_name(source, record, len(records)), record) for record in records]
    return [
        GraphSample(featurize(record.graph, extended=extended, progress=progress), record.configs,
                    name=name, source=source)
        for name, record in named
    ]


def _record_name(source: str, record: ModuleRecord, count: int) -> str:
    """The file's name for its only module; each module's own name in a file of several."""
    if count == 1:
        return Path(source).name.removesuffix(".pb").removesuffix(".hlo").removesuffix(".txt")
    return "".join(c if c.isalnum() or c in "@.-_" else "_" for c in record.graph.name)
