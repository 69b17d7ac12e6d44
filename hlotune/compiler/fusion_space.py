"""The fusion decisions a program offers, and an analytical cost of a fused module.

Each loop or input fusion XLA made is one decision (one gene of the "fusion" space): keep it,
merge it into its consumers where that is a valid fusion, or split it at one of its heaviest
instructions (fusion_rewrite.py). Library fusions (YNNPACK, oneDNN) are XLA's calls into a
library: neither split nor merged.

`module_seconds` prices a module as the roofline prices a kernel (hlo/costs.core_seconds):
each kernel's slower of compute and memory traffic on one core, plus a launch overhead. A split
pays for writing and reading its intermediate and one more launch; a merge saves them and may
repeat its producer's work per consumer. It is what ranks fusion candidates before any is
compiled.
"""

from __future__ import annotations

import math
import re

from hlotune.compiler.fusion_rewrite import FUSIBLE_CONSUMERS, Module, split_points
from hlotune.compiler.kernel_config import MERGE, SPLIT
from hlotune.compiler.kernels import kernels_of
from hlotune.hlo.costs import LAUNCH_S, core_seconds


def fusion_choices(text: str) -> dict[str, tuple[str, ...]]:
    """Kernel key -> its non-default fusion decisions, for each kernel that has some."""
    module = Module(text)
    choices = {}
    for kernel in kernels_of(text):
        if kernel.kind not in FUSIBLE_CONSUMERS:
            continue
        values = ((MERGE,) if module.mergeable(kernel.name) else ()) + tuple(
            SPLIT + point for point in split_points(module, kernel.name))
        if values:
            choices[kernel.key] = values
    return choices


def module_seconds(text: str) -> float:
    """The roofline seconds of a module's top-level kernels, one after another on one core.

    A fusion reads its operands and writes its result once; its flops are one per element of
    each instruction inside (a dot's, two per multiply-add). Other instructions only move data.
    Loop bodies count once (trip counts are not in the text).
    """
    module = Module(text)
    fused = {i.calls for host in module.order for i in module.body(host).values() if i.opcode == "fusion"}
    seconds = 0.0
    for host in module.order:
        if host in fused:
            continue
        body = module.body(host)
        for instruction in body.values():
            if instruction.opcode in _FREE:
                continue
            moved = sum(_bytes(body[o].shape) for o in instruction.operands if o in body)
            moved += _bytes(instruction.shape)
            flops = _flops(module, instruction.calls) if instruction.opcode == "fusion" else 0.0
            seconds += core_seconds(flops, moved) + LAUNCH_S
    return seconds


_FREE = frozenset({"parameter", "constant", "tuple", "get-tuple-element", "bitcast", "while",
                   "call", "conditional", "after-all"})
_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4,
          "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16}
_ARRAY = re.compile(r"\b([a-z]+\d*)\[([\d,]*)\]")


def _elements(shape: str) -> list[tuple[str, int]]:
    """(element type, count) of each array in a shape (a tuple has several)."""
    return [(dtype, math.prod(int(d) for d in dims.split(",") if d)) for dtype, dims in _ARRAY.findall(shape)]


def _bytes(shape: str) -> int:
    return sum(count * _BYTES.get(dtype, 4) for dtype, count in _elements(shape))


def _flops(module: Module, computation: str) -> float:
    body = module.body(computation)
    flops = 0.0
    for instruction in body.values():
        if instruction.opcode in _FREE:
            continue
        out = sum(count for _, count in _elements(instruction.shape))
        if instruction.opcode in ("dot", "convolution") and instruction.operands:
            lhs = sum(count for _, count in _elements(body[instruction.operands[0]].shape))
            rows = math.prod(int(d) for d in _ARRAY.search(instruction.shape).group(2).split(",")[:-1] if d) or 1
            out = 2 * out * max(lhs // rows, 1)  # contracted size ~ lhs elements per output row
        flops += out
    return flops
