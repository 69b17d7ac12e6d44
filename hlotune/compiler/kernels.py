"""The kernels of a compiled XLA:CPU module, read from its HLO text.

A kernel is what XLA:CPU's runtime runs as one thunk: a fusion instruction outside any fused
computation (in the entry, a loop body, a branch). The profile names its event after the
instruction, so the instruction name is how timings find their kernel; the fused computation,
printed canonically (no names, no metadata), is how the same kernel is recognised in another
program. A kernel's `key` joins the two: stable across compiles of one program, and distinct for
two identical kernels of the same program.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

from hlotune.errors import HlotuneError

_HEADER = re.compile(r"^(?:ENTRY )?%([\w.\-]+) \(.*\{$")
_INSTRUCTION = re.compile(r"^\s*(?:ROOT )?%([\w.\-]+) = (.*?) ([a-z][\w\-]*)\(")
CALLS = re.compile(r"\bcalls=%([\w.\-]+)")
KIND = re.compile(r"\bkind=(k\w+)")
APPLIES = re.compile(r"\b(?:to_apply|calls|body|condition|branch_computations)=\{?%([\w.\-]+)")
_METADATA = re.compile(r', metadata=\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\}')
_OP_NAME = re.compile(r'op_name="((?:[^"\\]|\\.)*)"')
_FRAME_ID = re.compile(r"stack_frame_id=(\d+)")
_NAME = re.compile(r"%[\w.\-]+")
BACKEND_CONFIG = "backend_config="


@dataclass(frozen=True)
class Kernel:
    name: str  # the HLO instruction, as the profile names its event
    key: str  # NAME#FINGERPRINT: this kernel in any compile of the same program
    fingerprint: str  # the fused computation's canonical hash: the same kernel in any program
    kind: str  # kLoop, kInput, kOutput, kCustom (a library fusion: YNNPACK, oneDNN)
    computation: str  # the fused computation it calls
    shape: str  # its result shape
    backend_config: dict = field(hash=False, compare=False)
    op_names: tuple[str, ...] = ()  # the framework ops fused into it (metadata op_name)
    stack_frames: tuple[int, ...] = ()  # metadata stack frames, for source lines

    @property
    def partitions(self) -> tuple[int, ...]:
        """XLA's outer-dimension partitioning: () leaves the kernel on one thread."""
        return tuple(int(p) for p in self.backend_config.get("outer_dimension_partitions", []))


@dataclass(frozen=True)
class HloText:
    """A module's text split into computations: name -> its lines (header and closing brace
    excluded)."""

    lines: list[str]
    computations: dict[str, list[int]]  # name -> indices into `lines`
    headers: dict[str, int]  # name -> the index of its header line

    @classmethod
    def parse(cls, text: str) -> HloText:
        lines = text.splitlines()
        computations: dict[str, list[int]] = {}
        headers: dict[str, int] = {}
        current: list[int] | None = None
        for index, line in enumerate(lines):
            if (header := _HEADER.match(line)) is not None:
                headers[header.group(1)] = index
                current = computations.setdefault(header.group(1), [])
            elif line.startswith("}"):
                current = None
            elif current is not None and line.strip():
                current.append(index)
        return cls(lines, computations, headers)

    def instructions(self, computation: str) -> Iterator[tuple[int, re.Match]]:
        for index in self.computations[computation]:
            if (match := _INSTRUCTION.match(self.lines[index])) is not None:
                yield index, match

    def fused_computations(self) -> set[str]:
        """Computations called by fusions, and what they call in turn: never kernel hosts."""
        fused = {
            calls.group(1)
            for name in self.computations
            for _, match in self.instructions(name)
            if match.group(3) == "fusion" and (calls := CALLS.search(match.string))
        }
        return set(self._closure(sorted(fused)))

    def _closure(self, names: set[str] | list[str]) -> dict[str, None]:
        """`names` and every computation they call, in the order first reached (an ordered set:
        a canonical text must not depend on how a program named its computations)."""
        pending, seen = list(names)[::-1], {}
        while pending:
            name = pending.pop()
            if name in seen or name not in self.computations:
                continue
            seen[name] = None
            called = [m.group(1) for i in self.computations[name] for m in APPLIES.finditer(self.lines[i])]
            pending += called[::-1]
        return seen

    def canonical(self, computation: str) -> str:
        """The computation and everything it calls, without names or metadata."""
        text = "\n--\n".join(
            "\n".join(without_metadata(self.lines[i]) for i in self.computations[name])
            for name in self._closure([computation])
        )
        return without_names(text)


    def module_of(self, computation: str, name: str) -> str:
        """A module whose entry is `computation` (with what it calls): a kernel standing alone,
        to featurize as the TpuGraphs tile collection has each kernel."""
        return "\n".join([f"HloModule {name}", "", *self.definitions([computation], entry=computation)])

    def definitions(self, computations: list[str], *, entry: str | None) -> list[str]:
        """The lines defining `computations` and what they call, callees first; `entry` is
        marked as the module's entry (None: none is)."""
        lines = []
        for called in reversed(list(self._closure(computations))):
            header = self.lines[self.headers[called]].removeprefix("ENTRY ")
            lines += [("ENTRY " if called == entry else "") + header,
                      *(self.lines[i] for i in self.computations[called]), "}", ""]
        return lines


def without_names(text: str) -> str:
    """HLO text with each name replaced by its order of first appearance: the same computation
    printed by any program reads the same."""
    names: dict[str, str] = {}
    return _NAME.sub(lambda m: names.setdefault(m.group(0), f"%v{len(names)}"), text)


def without_metadata(line: str) -> str:
    """An instruction line without its metadata (op names, source lines): what it computes."""
    return _METADATA.sub("", line)


def kernels_of(text: str) -> list[Kernel]:
    """The fusion kernels of an HLO module's text, in the order the text gives them."""
    return [kernel for _, kernel in kernel_lines(HloText.parse(text))]


def kernel_lines(hlo: HloText) -> Iterator[tuple[int, Kernel]]:
    """(index of its line, kernel) for each kernel of the module."""
    fused = hlo.fused_computations()
    for host in hlo.computations:
        if host in fused:
            continue
        for index, match in hlo.instructions(host):
            if match.group(3) == "fusion":
                yield index, kernel_at(hlo, match)


def kernel_at(hlo: HloText, match: re.Match) -> Kernel:
    """The kernel of a fusion instruction (a match of its line)."""
    line, name, shape = match.string, match.group(1), match.group(2)
    called = CALLS.search(line).group(1)
    kind = (k.group(1) if (k := KIND.search(line)) else "kLoop")
    body = [hlo.lines[i] for i in hlo.computations.get(called, [])]
    digest = hashlib.sha1(f"{kind} {shape}\n{hlo.canonical(called)}".encode()).hexdigest()[:12]
    op_names = tuple(dict.fromkeys(m.group(1) for l in body for m in _OP_NAME.finditer(l)))
    frames = tuple(dict.fromkeys(int(m.group(1)) for l in [line, *body] for m in _FRAME_ID.finditer(l)))
    return Kernel(name, f"{name}#{digest}", digest, kind, called, shape, backend_config(line),
                  op_names, frames)


def backend_config(line: str) -> dict:
    """An instruction line's backend_config JSON ({} where it has none)."""
    start = line.find(BACKEND_CONFIG)
    if start < 0:
        return {}
    try:
        value, _ = json.JSONDecoder().raw_decode(line, start + len(BACKEND_CONFIG))
    except json.JSONDecodeError as error:
        raise HlotuneError(f"unreadable backend_config in HLO line {line.strip()[:120]!r}: {error}") from None
    return value


def with_backend_config(line: str, config: dict) -> str:
    """The instruction line with `config` as its backend_config (added where it had none)."""
    encoded = BACKEND_CONFIG + json.dumps(config, separators=(",", ":"))
    start = line.find(BACKEND_CONFIG)
    if start < 0:
        return line + ", " + encoded
    _, end = json.JSONDecoder().raw_decode(line, start + len(BACKEND_CONFIG))
    return line[:start] + encoded + line[end:]


_TABLE_ROW = re.compile(r'^(\d+) (?:"((?:[^"\\]|\\.)*)"|\{(.*)\})$')


def source_lines(text: str) -> dict[int, str]:
    """stack_frame_id -> "file:line (function)" of the frame's own location, from the module's
    FileNames, FunctionNames, FileLocations and StackFrames tables."""
    tables: dict[str, dict[int, str]] = defaultdict(dict)
    table = None
    for line in text.splitlines():
        if line in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            table = line
        elif table and (row := _TABLE_ROW.match(line)):
            tables[table][int(row.group(1))] = row.group(2) if row.group(2) is not None else row.group(3)
        elif line.startswith(("%", "ENTRY")):
            break
    fields = {table: {i: dict(f.split("=", 1) for f in row.split()) for i, row in rows.items()}
              for table, rows in tables.items() if table in ("FileLocations", "StackFrames")}
    lines = {}
    for frame, row in fields.get("StackFrames", {}).items():
        location = fields.get("FileLocations", {}).get(int(row.get("file_location_id", 0)), {})
        file = tables["FileNames"].get(int(location.get("file_name_id", 0)), "?")
        function = tables["FunctionNames"].get(int(location.get("function_name_id", 0)), "?")
        lines[frame] = f"{file}:{location.get('line', '?')} ({function})"
    return lines
