"""Fusion decisions on XLA:CPU's own fused module: split a fusion at an edge, or merge a fusion
into its consumers, by rewriting the module text hlotune's pass is handed (PRE_SCHEDULER).

- **Split** a kernel at instruction P of its fused computation: P and the instructions it needs
  (not the parameters) become a new fusion of their own beside the kernel, and in the kernel P
  becomes a new trailing parameter. The new fusion is a loop fusion (XLA:CPU refused a
  reduction split off as an input fusion: "Unsupported fusion kind"). Instructions and
  parameters that only fed P are dropped (XLA's verifier rejects non-root instructions
  without users). The probe in XLA_CPU_NOTES.md is this rewrite.
- **Merge** a loop fusion into every consumer, when each consumer is a loop or input fusion
  that reads it once: its body is inlined where the consumer read its parameter, its
  parameters become the consumer's (shared where the consumer already reads the same value),
  and the producer goes. This is XLA's own producer-consumer fusion, done where XLA declined.

Names stay put: a split keeps P's name (now a parameter) and the kernel's; a merged consumer
keeps its name. So decisions resolved to instruction names on the default module still find
their instructions after earlier rewrites. Both rewrites keep the program's meaning; whether
XLA compiles them and what they cost is for the compiler and the measurement to say.
"""

from __future__ import annotations

from hlotune.compiler.xla.kernels import backend_config
from hlotune.errors import HlotuneError
from hlotune.hlo.costs import NO_KERNEL
from hlotune.hlo.text import NAME, HloText, InstructionLine, without_layout

# Instructions too cheap to be worth a kernel of their own: those that launch none, and copies,
# broadcasts and reshapes.
_TRIVIAL = NO_KERNEL | {"broadcast", "reshape", "iota", "slice", "copy", "transpose", "convert"}
# Fusions holding these are left alone: XLA:CPU emits scatter and dynamic-update-slice in place
# on their operand's buffer, so moving that operand inside or out of the fusion made the
# kernel write into the program's own inputs (seen on zoo:gnn: every later run was wrong).
_UNMOVABLE = frozenset({"scatter", "dynamic-update-slice", "select-and-scatter", "sort",
                        "custom-call", "while", "rng", "rng-bit-generator"})
# A producer holding these is not inlined into its consumers: XLA:CPU rejected every such
# merge on zoo:vit (its loop emitter would recompute a reduction per consumer element).
_NOT_INLINABLE = frozenset({"reduce", "reduce-window", "dot", "convolution", "fft"})
FUSIBLE_CONSUMERS = ("kLoop", "kInput")
SPLITS_PER_KERNEL = 3  # the split points offered per kernel: those that move the most work


class Module:
    """A module's text as computations (header and instruction lines each), edited by name."""

    def __init__(self, text: str) -> None:
        hlo = HloText.parse(text)
        computations = sorted(hlo.computations.values(), key=lambda c: c.header)
        self.preamble = list(hlo.lines[:computations[0].header])
        self.order = [c.name for c in computations]
        self.headers = {c.name: hlo.lines[c.header] for c in computations}
        self.bodies = {c.name: [hlo.lines[i] for i in c.body] for c in computations}
        self._parsed: dict[str, tuple[tuple[str, ...], dict[str, InstructionLine]]] = {
            c.name: (tuple(self.bodies[c.name]), {i.name: i for i in c.instructions.values()}) for c in computations}
        self.names = {i.name for name in self.order for i in self.body(name).values()}

    @property
    def text(self) -> str:
        parts = list(self.preamble)
        for name in self.order:
            parts += [self.headers[name], *self.bodies[name], "}", ""]
        return "\n".join(parts) + "\n"

    def body(self, computation: str) -> dict[str, InstructionLine]:
        """The computation's instructions by name, parsed again only when its lines changed
        (a rewrite reads the same bodies many times between edits)."""
        lines = tuple(self.bodies[computation])
        cached = self._parsed.get(computation)
        if cached is None or cached[0] != lines:
            found = (InstructionLine.parse(line) for line in lines)
            cached = (lines, {i.name: i for i in found if i is not None})
            self._parsed[computation] = cached
        return cached[1]

    def users(self, computation: str, name: str) -> list[InstructionLine]:
        return [i for i in self.body(computation).values() if name in i.operands]

    def kernel(self, name: str) -> tuple[str, InstructionLine]:
        """(host computation, fusion instruction) of a kernel, by name."""
        for host in self.order:
            found = self.body(host).get(name)
            if found is not None and found.opcode == "fusion":
                return host, found
        raise HlotuneError(f"no fusion named {name} in the module")

    def fresh(self, name: str) -> str:
        """A module-unique name derived from `name`."""
        counter = 0
        while (candidate := f"{name}.f{counter}") in self.names or candidate in self.headers:
            counter += 1
        self.names.add(candidate)
        return candidate

    def split(self, kernel: str, at: str) -> None:
        """Move `at` and what it needs out of `kernel` into a fusion of its own."""
        host, fusion = self.kernel(kernel)
        body = self.body(fusion.calls)
        point = body.get(at)
        if point is None or point.is_root or point.opcode == "parameter":
            raise HlotuneError(f"{kernel}: {at} is not an instruction to split at (its fused "
                               f"computation has {', '.join(list(body)[:8])})")
        cluster = _ancestors(body, at)
        needed = sorted((i for i in body.values() if i.opcode == "parameter"
                         and any(i.name in body[c].operands for c in cluster)), key=lambda i: i.parameter_number)
        producer = self._add_computation(fusion.calls, [i for i in body.values() if i.name in cluster],
                                         needed, root=at)
        name = self.fresh(kernel)
        operands = ", ".join("%" + fusion.operands[p.parameter_number] for p in needed)
        new_fusion = (f"  %{name} = {point.shape} fusion({operands}), kind=kLoop, calls=%{producer}"
                      + _partitions(fusion, point.shape))
        count = sum(i.opcode == "parameter" for i in body.values())
        self._replace(fusion.calls, at, [f"  %{at} = {point.shape} parameter({count})"])
        self._drop_dead(fusion.calls)
        unused = self._drop_unused_parameters(fusion.calls)
        self._retype(fusion.calls)
        operands = [o for n, o in enumerate([*fusion.operands, name]) if n not in unused]
        self._replace(host, kernel, [new_fusion, _with_operands(fusion, operands)])

    def movable(self, fusion: InstructionLine) -> bool:
        """Whether a fusion may be split or merged: a loop or input fusion without in-place
        or library instructions."""
        return fusion.fusion_kind in FUSIBLE_CONSUMERS and not any(
            i.opcode in _UNMOVABLE for i in self.body(fusion.calls).values())

    def mergeable(self, kernel: str) -> bool:
        """Whether `kernel` is a loop fusion whose every user is a movable fusion of the same
        computation that reads it once."""
        host, fusion = self.kernel(kernel)
        if fusion.fusion_kind != "kLoop" or fusion.shape.startswith("(") or fusion.is_root or not self.movable(fusion):
            return False
        if any(i.opcode in _NOT_INLINABLE for i in self.body(fusion.calls).values()):
            return False
        users = self.users(host, kernel)
        return bool(users) and all(u.opcode == "fusion" and self.movable(u)
                                   and u.operands.count(kernel) == 1 for u in users)

    def merge(self, kernel: str) -> None:
        """Inline `kernel` into each of its consumers and remove it."""
        if not self.mergeable(kernel):
            raise HlotuneError(f"{kernel} cannot merge into its consumers (a loop fusion whose "
                               "users are loop or input fusions reading it once)")
        host, producer = self.kernel(kernel)
        for consumer in self.users(host, kernel):
            self._inline(producer, consumer, host)
        self._replace(host, kernel, [])
        self._drop_computation(producer.calls)

    def _inline(self, producer: InstructionLine, consumer: InstructionLine, host: str) -> None:
        computation = consumer.calls
        body = self.body(computation)
        slot = consumer.operands.index(producer.name)
        operands = [o for n, o in enumerate(consumer.operands) if n != slot]
        by_number = {i.parameter_number: i for i in body.values() if i.opcode == "parameter"}
        kept = [by_number[n] for n in sorted(by_number) if n != slot]
        positions = [p.name for p in kept]  # the consumer's parameter for each of `operands`
        rename, added = {}, []
        for inner in self.body(producer.calls).values():
            if inner.opcode != "parameter":
                continue
            outer = producer.operands[inner.parameter_number]
            if outer not in operands:
                positions.append(self.fresh(inner.name))
                added.append(f"  %{positions[-1]} = {inner.shape} parameter({len(operands)})")
                operands.append(outer)
            rename[inner.name] = positions[operands.index(outer)]
        inlined = [i for i in self.body(producer.calls).values() if i.opcode != "parameter"]
        for inner in inlined:
            rename[inner.name] = by_number[slot].name if inner.is_root else self.fresh(inner.name)
        lines = list(added)
        for instruction in body.values():
            if instruction.opcode != "parameter":
                lines.append(instruction.line)
            elif instruction.parameter_number == slot:
                lines += [_renamed(i, rename) for i in inlined]
            else:
                lines.append(instruction.with_operand_text(str(kept.index(instruction))))
        self.bodies[computation] = lines
        self._retype(computation)
        self._replace(host, consumer.name, [_with_operands(self.body(host)[consumer.name], operands)])

    def _add_computation(self, beside: str, instructions: list[InstructionLine],
                         parameters: list[InstructionLine], root: str) -> str:
        """A new fused computation of `instructions` over fresh parameters, placed before
        `beside`; its name."""
        name = self.fresh(beside)
        rename = {i.name: self.fresh(i.name) for i in [*parameters, *instructions]}
        lines = [f"  %{rename[p.name]} = {p.shape} parameter({n})" for n, p in enumerate(parameters)]
        lines += [_renamed(i, rename, root=i.name == root) for i in instructions]
        self.order.insert(self.order.index(beside), name)
        self.bodies[name] = lines
        self.headers[name] = f"%{name} () -> {without_layout(instructions[-1].shape)} {{"
        self._retype(name)
        return name

    def _drop_computation(self, name: str) -> None:
        """Remove a fused computation nothing calls any more (and what only it called)."""
        if any(name in i.called_computations for other in self.order if other != name
               for i in self.body(other).values()):
            return
        called = {c for i in self.body(name).values() for c in i.called_computations}
        self.order.remove(name)
        del self.bodies[name], self.headers[name]
        for inner in called:
            self._drop_computation(inner)

    def _replace(self, computation: str, name: str, lines: list[str]) -> None:
        """Put `lines` where the instruction `name` was."""
        body = self.bodies[computation]
        at = body.index(self.body(computation)[name].line)  # a line names its instruction: unique
        body[at:at + 1] = lines

    def _retype(self, computation: str) -> None:
        """The computation's header, rewritten from its parameter and root lines."""
        body = self.body(computation).values()
        parameters = sorted((i for i in body if i.opcode == "parameter"), key=lambda i: i.parameter_number)
        root = next(i for i in body if i.is_root)
        signature = ", ".join(f"{p.name}: {without_layout(p.shape)}" for p in parameters)
        self.headers[computation] = f"%{computation} ({signature}) -> {without_layout(root.shape)} {{"

    def _drop_unused_parameters(self, computation: str) -> set[int]:
        """Remove parameters nothing reads (the verifier rejects them) and renumber the rest;
        the numbers removed, for the fusion to drop those operands."""
        body = self.body(computation)
        used = {o for i in body.values() for o in i.operands}
        parameters = sorted((i for i in body.values() if i.opcode == "parameter"), key=lambda i: i.parameter_number)
        unused = {p.parameter_number for p in parameters if p.name not in used and not p.is_root}
        renumber = {p.name: n for n, p in enumerate(p for p in parameters if p.parameter_number not in unused)}
        lines = []
        for line in self.bodies[computation]:
            instruction = InstructionLine.parse(line)
            if instruction is None or instruction.opcode != "parameter":
                lines.append(line)
            elif instruction.parameter_number not in unused:
                lines.append(instruction.with_operand_text(str(renumber[instruction.name])))
        self.bodies[computation] = lines
        return unused

    def _drop_dead(self, computation: str) -> None:
        """Remove instructions nobody uses (parameters and the root stay)."""
        while True:
            body = self.body(computation)
            used = {o for i in body.values() for o in i.operands}
            dead = {n for n, i in body.items() if not i.is_root and i.opcode != "parameter" and n not in used}
            if not dead:
                return
            self.bodies[computation] = [line for line in self.bodies[computation]
                                        if (i := InstructionLine.parse(line)) is None or i.name not in dead]


def split_points(module: Module, kernel: str) -> list[str]:
    """Where `kernel` can split: non-trivial, non-root instructions of a loop or input fusion,
    the SPLITS_PER_KERNEL that take the most instructions with them."""
    _, fusion = module.kernel(kernel)
    if not module.movable(fusion):
        return []
    body = module.body(fusion.calls)
    points = [i.name for i in body.values()
              if not i.is_root and i.opcode not in _TRIVIAL and not i.shape.startswith("(")]
    points.sort(key=lambda name: -len(_ancestors(body, name)))
    return points[:SPLITS_PER_KERNEL]


def _ancestors(body: dict[str, InstructionLine], name: str) -> set[str]:
    """`name` and every non-parameter instruction it needs, within one computation."""
    seen, pending = set(), [name]
    while pending:
        current = pending.pop()
        if current in seen or current not in body or body[current].opcode == "parameter":
            continue
        seen.add(current)
        pending += body[current].operands
    return seen


def _renamed(instruction: InstructionLine, rename: dict[str, str], *, root: bool = False) -> str:
    """The line with its name and operands renamed (attributes untouched), ROOT as asked."""
    operands = NAME.sub(lambda m: "%" + rename.get(m.group(1), m.group(1)), instruction.operand_text)
    name = rename.get(instruction.name, instruction.name)
    tail = instruction.line[instruction.operand_span[1]:]
    return f"  {'ROOT ' if root else ''}%{name} = {instruction.shape} {instruction.opcode}({operands}{tail}"


def _with_operands(instruction: InstructionLine, operands: list[str]) -> str:
    return instruction.with_operand_text(", ".join("%" + o for o in operands))


def _partitions(fusion: InstructionLine, shape: str) -> str:
    """The kernel's outer-dimension partitions for a fusion split from it, where they fit the
    new fusion's rank (XLA assigned them before our pass runs; a fusion without them runs on
    one thread)."""
    partitions = backend_config(fusion.line).get("outer_dimension_partitions", [])
    dims = shape.split("[", 1)[1].split("]", 1)[0] if "[" in shape else ""
    rank = len(dims.split(",")) if dims else 0
    if not partitions or len(partitions) > rank:
        return ""
    return ', backend_config={"outer_dimension_partitions":[' + ",".join(f'"{p}"' for p in partitions) + "]}"
