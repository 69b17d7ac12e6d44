"""hlotune's HLO text reader against XLA's own parse of the same modules: every computation,
instruction, operand, called computation and control edge the reader finds, XLA finds too."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from hlotune.compiler.xla.hook import compile_with_pass
from hlotune.errors import HlotuneError
from hlotune.hlo import wire
from hlotune.hlo.proto import graph_from_proto
from hlotune.hlo.text import HloText, InstructionLine, parse_shape, source_lines
from hlotune.hlo.text_parser import texts_to_protos

# A two-branch conditional, a control edge and a reducer: what jax's programs rarely print.
HANDWRITTEN = """HloModule handwritten

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %sum = f32[] add(%x, %y)
}

%double (d: f32[4]) -> f32[4] {
  %d = f32[4]{0} parameter(0)
  ROOT %twice = f32[4]{0} add(%d, %d)
}

%negated (n: f32[4]) -> f32[4] {
  %n = f32[4]{0} parameter(0)
  ROOT %minus = f32[4]{0} negate(%n)
}

ENTRY %main (p: f32[4], i: s32[]) -> (f32[4], f32[]) {
  %p = f32[4]{0} parameter(0)
  %i = s32[] parameter(1)
  %a = f32[4]{0} negate(%p), metadata={op_name="a \\"quoted\\" name" stack_frame_id=3}
  %b = f32[4]{0} exponential(%p), control-predecessors={%a}
  %branch = f32[4]{0} conditional(%i, %a, %b), branch_computations={%double, %negated}
  %zero = f32[] constant(0)
  %total = f32[] reduce(%branch, %zero), dimensions={0}, to_apply=%add
  ROOT %out = (f32[4]{0}, f32[]) tuple(%branch, %total)
}
"""


def _control(x, k):
    """A loop, a sort, a top_k (a custom-call with a comparator), a cond and a reduce-window."""
    y = jax.lax.fori_loop(0, 4, lambda i, c: jnp.tanh(c @ k) + jnp.sin(c) * i, x)
    values, indices = jax.lax.top_k(y, 3)
    scaled = jax.lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 1.5), (0, values))[1]
    window = jax.lax.reduce_window(y, 0.0, jax.lax.add, (1, 4), (1, 4))
    branch = jax.lax.cond(jnp.sum(x) > 0, lambda a: a * 2, lambda a: a - 1, window)
    return jnp.sort(y, axis=-1), scaled, indices, branch


@pytest.fixture(scope="module")
def modules() -> dict[str, str]:
    """Real modules as XLA:CPU prints them: the pass's fused module and the finished one, with
    the fusion emitters and without (which leaves more instructions unfused)."""
    from hlotune.compiler.spaces.kernel_space import program_module
    from hlotune.compiler.configs.layouts import LayoutSpace
    from hlotune.programs import load_program

    args = (jnp.linspace(0, 1, 32 * 32).reshape(32, 32), jnp.full((32, 32), 0.01))
    lowered = jax.jit(_control).lower(*args)
    legacy = {"xla_cpu_use_fusion_emitters": False}
    return {
        "control, fused": compile_with_pass(lowered)[1].texts[-1],
        "control, compiled": lowered.compile().as_text(),
        "control, legacy emitters": lowered.compile(compiler_options=legacy).as_text(),
        "zoo:moe@tiny": program_module(LayoutSpace(load_program("zoo:moe@tiny", abstract=True))),
        "handwritten": HANDWRITTEN,
    }


@pytest.fixture(scope="module")
def protos(modules) -> dict[str, bytes]:
    """Each module as XLA's parser reads it, an HloModuleProto."""
    return dict(zip(modules, texts_to_protos(list(modules.values()))))


@pytest.fixture(scope="module")
def xla_parses(protos) -> dict[str, tuple[str, dict]]:
    return {label: _as_xla_reads(proto) for label, proto in protos.items()}


def _as_xla_reads(proto: bytes) -> tuple[str, dict[str, dict[str, tuple]]]:
    """The entry's name, and computation -> instruction -> what the reader must agree on, from
    XLA's HloModuleProto (field numbers of hlo.proto)."""
    module = wire.decode(proto)
    computations = list(wire.iter_messages(module, 3))
    names = {wire.integer(c, 5): wire.string(c, 1) for c in computations}
    read = {}
    for computation in computations:
        instructions = list(wire.iter_messages(computation, 2))
        by_id = {wire.integer(i, 35): wire.string(i, 1) for i in instructions}
        read[wire.string(computation, 1)] = {
            wire.string(i, 1): (
                wire.string(i, 2),
                tuple(by_id[o] for o in wire.ints(i, 36)),
                tuple(sorted(names[c] for c in wire.ints(i, 38))),
                tuple(by_id[o] for o in wire.ints(i, 37)),
                wire.integer(i, 35) == wire.integer(computation, 6),
            )
            for i in instructions
        }
    return names[wire.integer(module, 6)], read


def _as_read(instruction: InstructionLine) -> tuple:
    """As `_as_xla_reads` has it (called computations sorted: XLA lists a loop's body first, the
    text its condition)."""
    return (instruction.opcode, instruction.operands, tuple(sorted(instruction.called_computations)),
            instruction.control_predecessors, instruction.is_root)


def test_the_reader_finds_every_instruction_as_xla_parses_it(modules, xla_parses):
    for label, text in modules.items():
        hlo = HloText.parse(text)
        entry, xla = xla_parses[label]
        assert list(hlo.computations) == list(xla), label
        assert hlo.entry == entry, label
        for name, computation in hlo.computations.items():
            assert len(computation.instructions) == len(computation.body), (label, name)  # every line read
            read = {i.name: _as_read(i) for i in computation.instructions.values()}
            assert read == xla[name], (label, name)


def test_a_module_calls_what_xla_says_it_calls(modules, xla_parses):
    """The closure from the entry is every computation XLA reaches through called computations."""
    for label, text in modules.items():
        hlo = HloText.parse(text)
        entry, xla = xla_parses[label]
        reached, pending = set(), [entry]
        while pending:
            name = pending.pop()
            if name not in reached:
                reached.add(name)
                pending += [c for read in xla[name].values() for c in read[2]]
        assert set(hlo.closure([hlo.entry])) == reached, label


def test_a_shape_reads_as_xla_sizes_it(modules, protos):
    """parse_shape's elements and bytes are those of XLA's own shape of every instruction."""
    for label, text in modules.items():
        xla = {i.name: i.shape for i in graph_from_proto(protos[label]).instructions}
        for computation in HloText.parse(text).computations.values():
            for instruction in computation.instructions.values():
                shape, expected = parse_shape(instruction.shape), xla[instruction.name]
                assert (shape.elements, shape.nbytes) == (expected.elements, expected.nbytes), (label, instruction.line)


def test_attributes_split_back_into_the_line_they_came_from(modules):
    for text in modules.values():
        for computation in HloText.parse(text).computations.values():
            for instruction in computation.instructions.values():
                head = instruction.line[:instruction.operand_span[1] + 1]
                assert head + instruction.attribute_text() == instruction.line


def test_metadata_and_parameters_read_as_printed():
    hlo = HloText.parse(HANDWRITTEN)
    main = {i.name: i for i in hlo.computations["main"].instructions.values()}
    assert main["a"].metadata == {"op_name": 'a \\"quoted\\" name', "stack_frame_id": "3"}
    assert main["b"].attribute_text(skip=["control-predecessors"]) == ""
    assert main["i"].parameter_number == 1
    assert main["total"].attributes == {"dimensions": "{0}", "to_apply": "%add"}
    edited = InstructionLine.parse(main["branch"].with_operand_text("%i, %b, %a"))
    assert edited.operands == ("i", "b", "a") and edited.called_computations == ("double", "negated")


def test_what_is_no_instruction_reads_as_none_and_a_broken_line_is_an_error():
    assert InstructionLine.parse("}") is None
    assert InstructionLine.parse("HloModule m, is_scheduled=true") is None
    with pytest.raises(HlotuneError, match="unbalanced parentheses"):
        InstructionLine.parse("  %a = f32[4]{0} add(%x, %y")
    with pytest.raises(HlotuneError, match="one ENTRY computation, this text has 0"):
        _ = HloText.parse(HANDWRITTEN.replace("ENTRY ", "")).entry


def test_source_lines_join_the_stack_frame_tables(modules):
    lines = source_lines(modules["control, fused"])
    assert lines and all(":" in line for line in lines.values())
    assert any(line.endswith("(_control)") and "test_hlo_text.py" in line for line in lines.values())
