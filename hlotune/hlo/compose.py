"""One large, valid HloModuleProto made of copies of real modules, for scale benchmarks.

Real programs at hand have a few thousand instructions; TpuGraphs has modules with hundreds of
thousands. `compose_modules` repeats real modules' computations until a target size is reached.
The result is the union of real program pieces, not one program: copy 0 is the first module
as it is and holds the entry computation; every later copy's computations are extra
computations that nothing calls. XLA's own parser accepts it (names and ids are made unique).

It works at the wire level: each source module is decoded once into templates, and a copy
re-encodes only the fields that must change (names, ids, references to ids); every other byte of
an instruction or computation is copied as it is.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from hlotune.errors import HlotuneError
from hlotune.hlo import wire

# Field numbers (hlo.proto).
_MODULE_NAME, _COMPUTATIONS, _SCHEDULE = 1, 3, 7
_COMP_NAME, _INSTRUCTIONS, _COMP_ID, _ROOT_ID = 1, 2, 5, 6
_INST_NAME, _INST_ID, _OPERANDS, _CONTROL_PREDECESSORS, _CALLED = 1, 35, 36, 37, 38

# XLA numbers an instruction (computation id << 32 | local id); copies keep that convention.
_LOCAL_ID_BITS = 32

ZOO_SPECS = ("zoo:transformer@small-train", "zoo:cnn@small-train", "zoo:mlp@small-train")


@dataclass(frozen=True, slots=True)
class _Instruction:
    rest: bytes  # every field but the rewritten ones, as stored
    name: bytes
    id: int
    operand_ids: tuple[int, ...]
    control_ids: tuple[int, ...]
    called_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class _Computation:
    rest: bytes
    name: bytes
    id: int
    root_id: int
    instructions: tuple[_Instruction, ...]


@dataclass(frozen=True, slots=True)
class _Module:
    rest: bytes  # module fields but name, computations and schedule
    stored: tuple[bytes, ...]  # the computations as stored: copy 0 uses them as they are
    computations: tuple[_Computation, ...]
    num_instructions: int
    id_span: int  # computation ids (and instruction-id high parts) one copy takes up


def compose_modules(protos: Iterable[bytes], target_nodes: int, name: str = "composed") -> bytes:
    """A serialized HloModuleProto of copies of `protos` (round robin) with at least
    `target_nodes` instructions, stopping at the first copy that reaches it. `protos` is read
    only as far as the target needs: from `zoo_protos`, a target the first module fills lowers
    no other program.

    The entry computation is the first module's. Its schedule is dropped: it would cover copy 0
    only. Later copies get computation ids past every earlier copy's, instruction ids with the
    matching high part, and names suffixed `.copyK`.
    """
    modules = map(_template, protos)
    first = next(modules, None)
    if first is None:
        raise HlotuneError("compose_modules needs at least one HloModuleProto")
    parts = [wire.field_bytes(_MODULE_NAME, name.encode()), first.rest]
    parts += [wire.field_bytes(_COMPUTATIONS, comp) for comp in first.stored]
    count, shift, copy = first.num_instructions, first.id_span, 1
    later = itertools.cycle(itertools.chain(modules, [first]))  # copy k is module k mod n
    while count < target_nodes:
        module = next(later)
        parts += _copy(module, shift, f".copy{copy}".encode())
        count, shift, copy = count + module.num_instructions, shift + module.id_span, copy + 1
    return b"".join(parts)


def zoo_protos(specs: Sequence[str] = ZOO_SPECS, *, optimized: bool = True) -> Iterator[bytes]:
    """The HloModuleProtos of zoo programs (real architectures) to compose from, each loaded and
    lowered when it is read (list() them to compose several sizes). Lowering and compiling need
    only the arguments' shapes, so no init runs."""
    from hlotune.hlo.lowering import lowered_proto
    from hlotune.programs import load_program

    for spec in specs:
        program = load_program(spec, abstract=True)
        yield lowered_proto(program.fn, program.args, optimized=optimized)


def _template(proto: bytes) -> _Module:
    rest, fields = wire.partition(proto, (_MODULE_NAME, _COMPUTATIONS, _SCHEDULE))
    stored = tuple(fields.get(_COMPUTATIONS, ()))
    computations = tuple(_computation(comp) for comp in stored)
    num_instructions = sum(len(comp.instructions) for comp in computations)
    if not num_instructions:
        raise HlotuneError("cannot compose a module that has no instructions")
    high_parts = [inst.id >> _LOCAL_ID_BITS for comp in computations for inst in comp.instructions]
    id_span = max(max(comp.id for comp in computations), *high_parts) + 1
    return _Module(rest, stored, computations, num_instructions, id_span)


def _computation(data: bytes) -> _Computation:
    rest, fields = wire.partition(data, (_COMP_NAME, _INSTRUCTIONS, _COMP_ID, _ROOT_ID))
    return _Computation(
        rest=rest,
        name=_name(fields, _COMP_NAME),
        id=wire.integer(fields, _COMP_ID),
        root_id=wire.integer(fields, _ROOT_ID),
        instructions=tuple(_instruction(inst) for inst in fields.get(_INSTRUCTIONS, ())),
    )


def _instruction(data: bytes) -> _Instruction:
    numbers = (_INST_NAME, _INST_ID, _OPERANDS, _CONTROL_PREDECESSORS, _CALLED)
    rest, fields = wire.partition(data, numbers)
    return _Instruction(
        rest=rest,
        name=_name(fields, _INST_NAME),
        id=wire.integer(fields, _INST_ID),
        operand_ids=tuple(wire.ints(fields, _OPERANDS)),
        control_ids=tuple(wire.ints(fields, _CONTROL_PREDECESSORS)),
        called_ids=tuple(wire.ints(fields, _CALLED)),
    )


def _name(fields: wire.Fields, number: int) -> bytes:
    values = fields.get(number)
    return values[-1] if values else b""


def _copy(module: _Module, shift: int, suffix: bytes) -> Iterator[bytes]:
    """The module's computations as field-3 entries, ids moved up by `shift` computations."""
    id_shift = shift << _LOCAL_ID_BITS
    for comp in module.computations:
        body = [
            comp.rest,
            wire.field_bytes(_COMP_NAME, comp.name + suffix),
            wire.field_varint(_COMP_ID, comp.id + shift),
            wire.field_varint(_ROOT_ID, comp.root_id + id_shift),
        ]
        body += [
            wire.field_bytes(_INSTRUCTIONS, _moved(inst, shift, id_shift, suffix))
            for inst in comp.instructions
        ]
        yield wire.field_bytes(_COMPUTATIONS, b"".join(body))


def _moved(inst: _Instruction, shift: int, id_shift: int, suffix: bytes) -> bytes:
    parts = [
        inst.rest,
        wire.field_bytes(_INST_NAME, inst.name + suffix),
        wire.field_varint(_INST_ID, inst.id + id_shift),
    ]
    for number, ids, by in (
        (_OPERANDS, inst.operand_ids, id_shift),
        (_CONTROL_PREDECESSORS, inst.control_ids, id_shift),
        (_CALLED, inst.called_ids, shift),
    ):
        if ids:
            parts.append(wire.field_packed(number, [i + by for i in ids]))
    return b"".join(parts)
