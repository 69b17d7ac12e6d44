"""Every timed thunk of a compiled XLA:CPU module, each as a module standing alone.

The profile times fusions (kernels.py) and also the instructions XLA left unfused (a copy, a
reduce-window, a concatenate): together they are where a program's time goes. A fusion stands
alone as its fused computation; an unfused instruction as a module whose parameters are its
operands. Control-flow thunks (while, conditional, call) are not kernels: their own time is the
loop's bookkeeping, which a program model counts as overhead.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

from hlotune.compiler.xla.kernels import Kernel, backend_config, kernel_at
from hlotune.hlo.costs import CONTROL_FLOW, NO_KERNEL
from hlotune.hlo.text import HloText, InstructionLine, without_metadata, without_names

_NOT_OWN = ("metadata", "control-predecessors")  # where it came from, another thunk's order


@dataclass(frozen=True)
class Thunk:
    name: str  # the instruction, as the profile names its event
    fingerprint: str  # what it computes, in any program
    opcode: str  # "fusion" for a kernel
    kind: str  # the fusion kind, or the opcode of an unfused instruction
    partitions: tuple[int, ...]
    module: str  # the thunk standing alone, for featurizing
    calls: int = 1  # per program run, as far as the module says: known trip counts of its loops


def thunks_of(text: str, names: set[str] | None = None) -> dict[str, Thunk]:
    """name -> Thunk for each fusion and unfused instruction of the module (only `names`,
    where given: the profiled ones); ops that launch no kernel (hlo/costs.NO_KERNEL) are no thunks."""
    hlo = HloText.parse(text)
    trips = trip_counts(hlo)
    thunks = {}
    for host in hlo.unfused_computations():
        shapes = {i.name: i.shape for i in host.instructions.values()}
        for instruction in host.instructions.values():
            if (names is not None and instruction.name not in names) or instruction.opcode in NO_KERNEL:
                continue
            thunk = (_fusion(hlo, kernel_at(hlo, instruction)) if instruction.opcode == "fusion"
                     else _unfused(hlo, instruction, shapes))
            thunks[instruction.name] = replace(thunk, calls=trips.get(host.name, 1))
    return thunks


def trip_counts(hlo: HloText) -> dict[str, int]:
    """Runs per program run of each computation inside loops whose trip count XLA knows (a
    loop it does not know counts once): the product over the loops around it."""
    parents: dict[str, tuple[str, int]] = {}
    for host in hlo.computations.values():
        for instruction in host.instructions.values():
            if instruction.opcode in CONTROL_FLOW:
                trips = int(backend_config(instruction.line).get("known_trip_count", {}).get("n", 1))
                for called in instruction.called_computations:
                    parents[called] = (host.name, trips if instruction.opcode == "while" else 1)

    def runs(computation: str, depth: int = 0) -> int:
        if computation not in parents or depth > len(parents):
            return 1
        parent, trips = parents[computation]
        return trips * runs(parent, depth + 1)
    return {computation: runs(computation) for computation in parents}


def _fusion(hlo: HloText, kernel: Kernel) -> Thunk:
    return Thunk(kernel.name, kernel.fingerprint, "fusion", kernel.kind, kernel.partitions,
                 hlo.module_of(kernel.computation, f"kernel_{kernel.fingerprint}"))


def _unfused(hlo: HloText, instruction: InstructionLine, shapes: dict[str, str]) -> Thunk:
    """The instruction over parameters standing for its operands, with the computations it
    applies (a reduce's region, a TopK's comparator) beside it."""
    name, shape, opcode, operands = instruction.name, instruction.shape, instruction.opcode, instruction.operands
    params = [f"p{i}" for i in range(len(operands))]
    body = [f"  %{p} = {shapes.get(o, 'f32[]')} parameter({i})" for i, (p, o) in enumerate(zip(params, operands))]
    call = ", ".join(f"%{p}" for p in params)
    body.append(f"  ROOT %{name} = {shape} {opcode}({call}){instruction.attribute_text(skip=_NOT_OWN)}")
    signature = ", ".join(f"{p}: {shapes.get(o, 'f32[]')}" for p, o in zip(params, operands))
    called = "\n".join(map(without_metadata, hlo.definitions(list(instruction.called_computations), entry=None)))
    text = f"{called}ENTRY %thunk ({signature}) -> {shape} {{\n" + "\n".join(body) + "\n}\n"
    digest = hashlib.sha1(f"{opcode} {shape}\n{without_names(text)}".encode()).hexdigest()[:12]
    return Thunk(name, digest, opcode, opcode, (), f"HloModule thunk_{digest}\n\n{text}")
