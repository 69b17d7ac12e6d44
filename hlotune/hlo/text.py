"""One reader of XLA's HLO text: computations and their instruction lines, parsed once.

hlotune's pass inside XLA:CPU is handed the module as text (compiler/xla/hook.py), and the compiler
reads and edits it as text, line by line, so that an edit keeps every byte it does not mean to
change. XLA's own parser (text_parser.py) gives a proto instead: right for graphs, but it cannot
say where in the text an instruction is. This reader keeps the raw lines beside what it read.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property, lru_cache

from hlotune.errors import HlotuneError
from hlotune.hlo.graph import TUPLE, Shape

NAME = re.compile(r"%([\w.\-]+)")
_HEADER = re.compile(r"^(?:ENTRY )?%([\w.\-]+) \(.*\{$")
_HEAD = re.compile(r"^\s*(ROOT )?%([\w.\-]+) = (.*?) ([a-z][\w\-]*)\(")
_METADATA = re.compile(r', metadata=\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\}')
_FIELD = re.compile(r'(\w+)=(?:"((?:[^"\\]|\\.)*)"|([^\s"}]*))')
_LAYOUT = re.compile(r"\{[^{}]*\}")
_PARENTHESIS = re.compile(r"[()]")
_TABLE_ROW = re.compile(r'^(\d+) (?:"((?:[^"\\]|\\.)*)"|\{(.*)\})$')
_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
# The attributes whose value names computations the instruction runs (XLA's called_computations).
_CALLING = frozenset({"to_apply", "calls", "body", "condition", "branch_computations", "called_computations",
                     "select", "scatter", "true_computation", "false_computation"})
_OPEN, _CLOSE = "{[(", "}])"
# What splits attributes: a whole string literal (skipped), a bracket, a comma.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]()]|,')
_ARRAY = re.compile(r"\b([a-z][a-z0-9]*)\[([\d,]*)\]")
# The xla PrimitiveType number of each element type as the text spells it (its size: graph.py).
ELEMENT_TYPES = {"pred": 1, "s8": 2, "s16": 3, "s32": 4, "s64": 5, "u8": 6, "u16": 7, "u32": 8, "u64": 9,
                 "f16": 10, "f32": 11, "f64": 12, "c64": 15, "bf16": 16, "token": 17, "c128": 18,
                 "f8e5m2": 19, "f8e4m3fn": 20, "s4": 21, "u4": 22, "f8e4m3b11fnuz": 23, "f8e5m2fnuz": 24,
                 "f8e4m3fnuz": 25, "f8e4m3": 28, "f8e3m4": 29, "f4e2m1fn": 32, "f8e8m0fnu": 33}


@dataclass(frozen=True)
class InstructionLine:
    """One instruction line as printed, with where its operand list sits in it: an edit
    replaces that span and keeps the rest of the line verbatim."""

    line: str
    name: str
    shape: str  # as printed, layouts included
    opcode: str
    operands: tuple[str, ...]  # the instructions its operand list names, in order
    operand_span: tuple[int, int]  # [begin, end) of the operand list's text in `line`
    is_root: bool

    @classmethod
    def parse(cls, line: str) -> InstructionLine | None:
        """The instruction on `line`; None for a line that is no instruction."""
        head = _HEAD.match(line)
        if head is None:
            return None
        begin = head.end()
        end = _closing(line, begin - 1)
        return cls(line, head.group(2), head.group(3), head.group(4), tuple(NAME.findall(line[begin:end])),
                   (begin, end), head.group(1) is not None)

    @cached_property
    def attributes(self) -> dict[str, str]:
        """Each attribute after the operand list, name -> its value as printed."""
        return _attributes(self.line[self.operand_span[1] + 1:])

    def attribute_text(self, *, skip: Iterable[str] = ()) -> str:
        """The line's text after its operand list, without the attributes named in `skip`."""
        left_out = set(skip)
        return "".join(f", {key}={value}" for key, value in self.attributes.items() if key not in left_out)

    @property
    def operand_text(self) -> str:
        begin, end = self.operand_span
        return self.line[begin:end]

    def with_operand_text(self, text: str) -> str:
        """The line with its operand list replaced by `text`."""
        begin, end = self.operand_span
        return self.line[:begin] + text + self.line[end:]

    @property
    def parameter_number(self) -> int:
        return int(self.operand_text)

    @cached_property
    def called_computations(self) -> tuple[str, ...]:
        """Every computation it runs (a reducer, a loop's body and condition, each branch)."""
        return tuple(name for key, value in self.attributes.items() if key in _CALLING
                     for name in NAME.findall(value))

    @property
    def calls(self) -> str:
        """The computation a fusion or call runs."""
        return self.attributes["calls"].removeprefix("%")

    @property
    def fusion_kind(self) -> str:
        """kLoop, kInput, kOutput or kCustom (kLoop where the line gives none)."""
        return self.attributes.get("kind", "kLoop")

    @property
    def control_predecessors(self) -> tuple[str, ...]:
        return tuple(NAME.findall(self.attributes.get("control-predecessors", "")))

    @cached_property
    def metadata(self) -> dict[str, str]:
        """The metadata fields (op_name, stack_frame_id, ...), strings as printed inside their quotes."""
        found = _FIELD.finditer(self.attributes.get("metadata", ""))
        return {m.group(1): m.group(2) if m.group(2) is not None else m.group(3) for m in found}


@dataclass(frozen=True)
class ComputationText:
    """One computation of a module's text, as line indices into it (HloGraph's is `Computation`)."""

    name: str
    header: int  # the index of its header line
    body: tuple[int, ...]  # the indices of its lines, header and closing brace excluded
    instructions: dict[int, InstructionLine]  # line index -> the instruction on it
    is_entry: bool


@dataclass(frozen=True)
class HloText:
    """A module's text: its lines and its computations, in the text's order."""

    lines: tuple[str, ...]
    computations: dict[str, ComputationText]

    @classmethod
    def parse(cls, text: str) -> HloText:
        lines = tuple(text.splitlines())
        spans: dict[str, tuple[int, list[int]]] = {}
        current: list[int] | None = None
        for index, line in enumerate(lines):
            if (header := _HEADER.match(line)) is not None:
                current = spans.setdefault(header.group(1), (index, []))[1]
            elif line.startswith("}"):
                current = None
            elif current is not None and line.strip():
                current.append(index)
        computations = {}
        for name, (header, body) in spans.items():
            parsed = {i: instruction for i in body if (instruction := InstructionLine.parse(lines[i])) is not None}
            computations[name] = ComputationText(name, header, tuple(body), parsed, lines[header].startswith("ENTRY "))
        return cls(lines, computations)

    @property
    def entry(self) -> str:
        entries = [name for name, computation in self.computations.items() if computation.is_entry]
        if len(entries) != 1:
            raise HlotuneError(f"an HLO module has one ENTRY computation, this text has {len(entries)}")
        return entries[0]

    def fused_computations(self) -> set[str]:
        """Computations called by fusions, and what they call in turn."""
        fused = {instruction.calls for computation in self.computations.values()
                 for instruction in computation.instructions.values() if instruction.opcode == "fusion"}
        return set(self.closure(sorted(fused)))

    def unfused_computations(self) -> list[ComputationText]:
        """The computations outside any fusion (the entry, loop bodies, branches, reducers):
        where XLA:CPU's thunks are."""
        fused = self.fused_computations()
        return [c for name, c in self.computations.items() if name not in fused]

    def closure(self, names: Iterable[str]) -> dict[str, None]:
        """`names` and every computation they call, in the order first reached (an ordered set:
        a canonical text must not depend on how a program named its computations)."""
        pending, seen = list(names)[::-1], {}
        while pending:
            name = pending.pop()
            if name in seen or name not in self.computations:
                continue
            seen[name] = None
            called = [c for i in self.computations[name].instructions.values() for c in i.called_computations]
            pending += called[::-1]
        return seen

    def canonical(self, computation: str) -> str:
        """The computation and everything it calls, without names or metadata."""
        text = "\n--\n".join(
            "\n".join(without_metadata(self.lines[i]) for i in self.computations[name].body)
            for name in self.closure([computation])
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
        for called in reversed(list(self.closure(computations))):
            computation = self.computations[called]
            header = self.lines[computation.header].removeprefix("ENTRY ")
            lines += [("ENTRY " if called == entry else "") + header,
                      *(self.lines[i] for i in computation.body), "}", ""]
        return lines


@lru_cache(maxsize=1 << 14)
def parse_shape(shape: str) -> Shape:
    """A shape as the text prints it (`f32[8,16]{1,0}`, or a tuple of them), without its layout;
    a tuple's leaves are its arrays, however nested."""
    arrays = tuple(Shape(ELEMENT_TYPES.get(element, 0), tuple(int(d) for d in dims.split(",") if d))
                   for element, dims in _ARRAY.findall(shape))
    if len(arrays) == 1 and not shape.startswith("("):
        return arrays[0]
    return Shape(TUPLE, tuple_shapes=arrays)


def without_names(text: str) -> str:
    """HLO text with each name replaced by its order of first appearance: the same computation
    printed by any program reads the same."""
    names: dict[str, str] = {}
    return NAME.sub(lambda m: names.setdefault(m.group(0), f"%v{len(names)}"), text)


def without_metadata(line: str) -> str:
    """An instruction line without its metadata (op names, source lines): what it computes."""
    return _METADATA.sub("", line)


def without_layout(shape: str) -> str:
    """A shape as a computation's signature prints it: `f32[4,8]{1,0}` -> `f32[4,8]`."""
    return _LAYOUT.sub("", shape)


def source_lines(text: str) -> dict[int, str]:
    """stack_frame_id -> "file:line (function)" of the frame's own location, from the module's
    FileNames, FunctionNames, FileLocations and StackFrames tables."""
    tables: dict[str, dict[int, str]] = defaultdict(dict)
    table = None
    for line in text.splitlines():
        if line in _TABLES:
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


def _closing(line: str, open_at: int) -> int:
    """The index of the parenthesis closing the one at `open_at` (found by a regex, so that a
    constant's megabytes of literal are skipped at C speed)."""
    depth = 0
    for paren in _PARENTHESIS.finditer(line, open_at):
        depth += 1 if paren.group() == "(" else -1
        if depth == 0:
            return paren.start()
    raise HlotuneError(f"unbalanced parentheses in HLO line {line.strip()[:120]!r}")


def _attributes(text: str) -> dict[str, str]:
    """`, name=value, ...` -> {name: value}, split only at commas outside brackets and strings."""
    pieces, depth, start = [], 0, 0
    for token in _TOKEN.finditer(text):
        char = token.group()
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth -= 1
        elif char == "," and depth == 0:
            pieces.append(text[start:token.start()])
            start = token.end()
    pieces.append(text[start:])
    return {key: value for key, sep, value in (p.strip().partition("=") for p in pieces) if sep}
