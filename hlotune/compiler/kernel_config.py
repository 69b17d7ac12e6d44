"""Per-kernel options: the third part of a CompileConfig, applied inside XLA by hlotune's pass.

XLA:CPU reads one per-kernel option that changes generated code on this machine:
`outer_dimension_partitions`, how many parallel tasks split a kernel's outer dimensions (the
CPU's analogue of a TPU kernel's tile). `llvm_kernel_options` (no unrolling, no SLP
vectoriser, optimise for size) was tried on loop fusions in jaxlib 0.10.2 and gave
byte-identical object code, so it is not offered (docs/compiler.md has the probe).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hlotune.compiler.kernels import HloText, backend_config, kernel_lines, with_backend_config
from hlotune.errors import HlotuneError

PARTITIONS = "outer_dimension_partitions"
OPTIONS = (PARTITIONS,)


@dataclass(frozen=True)
class KernelConfig:
    """Outer-dimension partitions of some kernels, by kernel key (`kernels.Kernel.key`); every
    other kernel keeps XLA's choice."""

    partitions: tuple[tuple[str, tuple[int, ...]], ...] = ()

    @classmethod
    def from_dict(cls, kernels: Mapping[str, Mapping[str, list[int]]]) -> KernelConfig:
        chosen = []
        for key, options in kernels.items():
            unknown = set(options) - set(OPTIONS)
            if unknown or "#" not in key:
                raise HlotuneError(
                    f"kernel {key!r}: " + (f"unknown option {sorted(unknown)[0]!r} (known: "
                                           f"{', '.join(OPTIONS)})" if unknown else
                                           "a kernel key is NAME#FINGERPRINT (hlotune profile --json lists them)")
                )
            value = options.get(PARTITIONS)
            if value is not None:
                chosen.append((key, _partitions(key, value)))
        return cls(tuple(sorted(chosen)))

    def to_dict(self) -> dict[str, dict[str, list[int]]]:
        return {key: {PARTITIONS: list(value)} for key, value in self.partitions}

    @property
    def is_default(self) -> bool:
        return not self.partitions

    def apply(self, text: str) -> str:
        """The module text with each configured kernel's options set; a key that names no
        kernel of this module is an error, never a silently ignored option."""
        if self.is_default:
            return text
        hlo = HloText.parse(text)
        wanted = dict(self.partitions)
        found = {}
        for index, kernel in list(kernel_lines(hlo)):
            found[kernel.key] = None
            if kernel.key in wanted:
                config = backend_config(hlo.lines[index]) | {PARTITIONS: [str(p) for p in wanted[kernel.key]]}
                hlo.lines[index] = with_backend_config(hlo.lines[index], config)
        missing = sorted(set(wanted) - set(found))
        if missing:
            raise HlotuneError(
                f"kernel key {missing[0]} matches no kernel of this program"
                + (f" ({len(missing)} keys do not)" if len(missing) > 1 else "")
                + f"; its kernels are: {', '.join(list(found)[:8])}{' ...' if len(found) > 8 else ''}"
            )
        return "\n".join(hlo.lines) + "\n"


def _partitions(key: str, value) -> tuple[int, ...]:
    try:
        parts = tuple(int(p) for p in value)
    except (TypeError, ValueError):
        raise HlotuneError(f"kernel {key!r}: {PARTITIONS} is a list of integers, got {value!r}") from None
    if any(p < 1 for p in parts):
        raise HlotuneError(f"kernel {key!r}: {PARTITIONS} must be at least 1, got {list(parts)}")
    return parts


DEFAULT_KERNELS = KernelConfig()
