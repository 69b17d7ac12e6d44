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
from collections.abc import Iterator
from dataclasses import dataclass, field

from hlotune.errors import HlotuneError
from hlotune.hlo.text import HloText, InstructionLine

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


def kernels_of(text: str) -> list[Kernel]:
    """The fusion kernels of an HLO module's text, in the order the text gives them."""
    return [kernel for _, kernel in kernel_lines(HloText.parse(text))]


def kernel_lines(hlo: HloText) -> Iterator[tuple[int, Kernel]]:
    """(index of its line, kernel) for each kernel of the module."""
    for computation in hlo.unfused_computations():
        for index, instruction in computation.instructions.items():
            if instruction.opcode == "fusion":
                yield index, kernel_at(hlo, instruction)


def kernel_at(hlo: HloText, fusion: InstructionLine) -> Kernel:
    """The kernel of a fusion instruction."""
    called, kind, shape = fusion.calls, fusion.fusion_kind, fusion.shape
    body = list(hlo.computations[called].instructions.values()) if called in hlo.computations else []
    digest = hashlib.sha1(f"{kind} {shape}\n{hlo.canonical(called)}".encode()).hexdigest()[:12]
    op_names = tuple(dict.fromkeys(i.metadata["op_name"] for i in body if "op_name" in i.metadata))
    frames = tuple(dict.fromkeys(int(i.metadata["stack_frame_id"]) for i in [fusion, *body]
                                 if "stack_frame_id" in i.metadata))
    return Kernel(fusion.name, f"{fusion.name}#{digest}", digest, kind, called, shape,
                  backend_config(fusion.line), op_names, frames)


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
