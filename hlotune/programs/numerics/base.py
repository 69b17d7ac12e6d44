"""What a numerics program is: a numerical algorithm a scientist would `jax.jit`, at several sizes.

Unlike the zoo's models these have no parameters to train: a program is the algorithm applied
to its inputs (an initial field, particles, a time series), built deterministically in float32.
They are benchmarks for the tuner, kept out of every training set (hlotune.data.builtin), so
they have no `-train` or `-bf16` variants and no batch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from hlotune.errors import HlotuneError

Size = Mapping[str, int]


@dataclass(frozen=True)
class Numeric:
    """An algorithm at several sizes: `build(**sizes[name])` gives the function and its example
    arguments, the same every time (fixed seeds)."""

    name: str
    description: str
    sizes: Mapping[str, Size]
    build: Callable[..., tuple[Callable, tuple]]
    trainable = False  # read by the variant grammar (hlotune.programs.variants)
    bf16 = False

    def program(self, size: str, *, batch: int | None = None) -> tuple[Callable, tuple]:
        """The function and its example arguments at `size`."""
        if batch is not None:
            raise HlotuneError(f"numerics:{self.name} has no batch; its sizes are {', '.join(self.sizes)}")
        return self.build(**self.sizes[size])
