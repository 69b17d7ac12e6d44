"""The fusion decisions a program offers.

Each loop or input fusion XLA made is one decision (one gene of the "fusion" space): keep it,
merge it into its consumers where that is a valid fusion, or split it at one of its heaviest
instructions (fusion_rewrite.py). Library fusions (YNNPACK, oneDNN) are XLA's calls into a
library: neither split nor merged.

What ranks the candidates before any is compiled is hlo/costs.module_seconds, the rewritten
module priced as the roofline prices a kernel: each kernel's slower of compute and memory
traffic on one core, plus a launch overhead. A split pays for writing and reading its
intermediate and one more launch; a merge saves them and may repeat its producer's work per
consumer.
"""

from __future__ import annotations

from hlotune.compiler.xla.fusion_rewrite import FUSIBLE_CONSUMERS, Module, split_points
from hlotune.compiler.configs.kernel_config import MERGE, SPLIT
from hlotune.compiler.xla.kernels import kernels_of


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
