"""The order XLA:CPU runs a program's entry computation in, read and replaced at POST_SCHEDULER.

At POST_SCHEDULER hlotune's pass is handed a scheduled module (`is_scheduled=true`): each
computation's instructions are printed in schedule order, and the text parses back with that
order as its schedule. So reordering the entry computation's lines is a new schedule, which
XLA's buffer assignment and thunk emitter then follow (probed on jaxlib 0.10.2: the compiled
module keeps the requested order, outputs are unchanged, and the temp bytes move with it).
Only the entry is reordered; loop bodies and other called computations keep XLA's order.

The peak an order gives is `temp_size_in_bytes` of the executable's memory analysis: the
temporary allocations of XLA's buffer assignment, which reuse memory between buffers whose
live ranges the order separates. Arguments and outputs are the same whatever the order, so
they are left out.

XLA:CPU chooses among its own schedulers with `xla_cpu_scheduler_type` (DebugOptions, jaxlib
0.10.2): MEMORY_OPTIMIZED (XLA's memory-minimising list, DFS and post-order schedulers, the
best kept), CONCURRENCY_OPTIMIZED (keeps independent kernels apart so they may run at once),
and DEFAULT, the concurrency-optimised schedule unless its peak is much above the memory-
optimised one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hlotune.compiler.xla.hook import POST_SCHEDULER, compile_with_pass
from hlotune.errors import HlotuneError
from hlotune.hlo.text import HloText, InstructionLine

SCHEDULER_OPTION = "xla_cpu_scheduler_type"
# XLA:CPU's scheduler choices: short name -> the DebugOptions enum value.
SCHEDULERS = {
    "default": "CPU_SCHEDULER_TYPE_DEFAULT",
    "memory": "CPU_SCHEDULER_TYPE_MEMORY_OPTIMIZED",
    "concurrency": "CPU_SCHEDULER_TYPE_CONCURRENCY_OPTIMIZED",
}


@dataclass(frozen=True)
class EntrySchedule:
    """The entry computation of a scheduled module: its instructions in XLA's order, and the
    instructions each must follow (its operands and control predecessors)."""

    computation: str
    names: tuple[str, ...]
    opcodes: tuple[str, ...]
    after: tuple[tuple[int, ...], ...]  # per instruction, indices into `names`, operands first
    root: int
    lines: tuple[int, ...]  # per instruction, its line in the module text

    @classmethod
    def parse(cls, text: str) -> EntrySchedule:
        hlo = HloText.parse(text)
        entry = hlo.computations[hlo.entry]
        instructions = list(entry.instructions.values())
        if len(instructions) != len(entry.body):
            raise HlotuneError(f"unreadable instruction lines in the entry computation {entry.name}")
        names = tuple(i.name for i in instructions)
        position = {name: i for i, name in enumerate(names)}
        after = tuple(_references(i, position) for i in instructions)
        roots = [i for i, instruction in enumerate(instructions) if instruction.is_root]
        if len(roots) != 1:
            raise HlotuneError(f"entry computation {entry.name} has {len(roots)} ROOT instructions")
        return cls(entry.name, names, tuple(i.opcode for i in instructions), after, roots[0], entry.body)

    def check(self, order: Sequence[str]) -> tuple[int, ...]:
        """The order as indices, if it is one this computation may run in: each instruction
        once, after what it uses, the ROOT last. Else a HlotuneError naming the first fault."""
        position = {name: i for i, name in enumerate(self.names)}
        unknown = [name for name in order if name not in position]
        if unknown:
            raise HlotuneError(f"schedule names {unknown[0]!r}, not an instruction of {self.computation}")
        indices = tuple(position[name] for name in order)
        if len(set(indices)) != len(indices) or len(indices) != len(self.names):
            missing = sorted(set(self.names) - set(order))
            what = f"leaves out {missing[0]!r}" if missing else "names an instruction twice"
            raise HlotuneError(f"schedule of {self.computation} {what}: it must order each of its "
                               f"{len(self.names)} instructions once")
        placed: set[int] = set()
        for index in indices:
            early = [self.names[i] for i in self.after[index] if i not in placed]
            if early:
                raise HlotuneError(f"schedule runs {self.names[index]!r} before {early[0]!r}, which it "
                                   "must follow")
            placed.add(index)
        if indices[-1] != self.root:
            raise HlotuneError(f"schedule must end with the ROOT {self.names[self.root]!r}")
        return indices

    def apply(self, text: str, order: Sequence[str]) -> str:
        """`text`, the module this entry was read from, with its entry lines in `order`."""
        indices = self.check(order)
        lines = text.splitlines()
        moved = [lines[self.lines[index]] for index in indices]
        for slot, line in zip(self.lines, moved):
            lines[slot] = line
        return "\n".join(lines)


@dataclass(frozen=True)
class ScheduledCompile:
    """An executable and the entry order it runs: XLA's own, or one hlotune imposed."""

    executable: Any  # jax.stages.Compiled
    text: str  # the module as XLA scheduled it, before any reordering
    order: tuple[str, ...]  # the entry order the executable runs
    peak_bytes: int  # temp_size_in_bytes of its buffer assignment


def compile_schedule(lowered: Any, order: Sequence[str] | None = None, *,
                     scheduler: str = "default") -> ScheduledCompile:
    """Compile `lowered` with its entry computation run in `order` (None: as `scheduler`,
    one of SCHEDULERS, orders it)."""
    if scheduler not in SCHEDULERS:
        raise HlotuneError(f"unknown XLA:CPU scheduler {scheduler!r}; known: {', '.join(SCHEDULERS)}")

    def edit(text: str) -> str | None:
        return None if order is None else EntrySchedule.parse(text).apply(text, order)

    executable, record = compile_with_pass(lowered, edit, stage=POST_SCHEDULER,
                                           compiler_options={SCHEDULER_OPTION: SCHEDULERS[scheduler]})
    text = record.texts[-1]
    ran = EntrySchedule.parse(text).names if order is None else tuple(order)
    peak = int(executable.memory_analysis().temp_size_in_bytes)  # what an order changes
    return ScheduledCompile(executable, text, ran, peak)


def _references(instruction: InstructionLine, position: dict[str, int]) -> tuple[int, ...]:
    """The entry instructions an instruction must follow: its operands and control predecessors."""
    named = (*instruction.operands, *instruction.control_predecessors)
    return tuple(dict.fromkeys(position[n] for n in named if n in position and n != instruction.name))
