"""What a tune kept, and how to use it."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from hlotune.compiler.configs.config import DEFAULT_CONFIG, CompileConfig
from hlotune.programs import Program, load_program


@dataclass
class TuneResult:
    """What a tune kept. `speedup` is measured after the choice (final_check.py); the search's
    and the choosing rounds' speedups, flattered by the choice, are `found_speedup` and
    `confirmed_speedup`."""

    program: str
    default_ms: float  # the default's median in the batch that reports the speedup
    best_ms: float  # the chosen config's (the default's when kept)
    speedup: float  # kept: default_ms / best_ms (1 when the default was kept)
    noise: float  # noise floor the gain had to exceed
    measurements: int  # configs measured by this run, the default included
    resumed: int  # configs found in the database instead
    best_config: CompileConfig
    strategy: str
    kept_default: bool
    history: list[float]  # best speedup found so far, after each evaluated config
    space: str = "flags"
    fingerprint: str = ""
    failed: int = 0  # evaluated configs that failed or gave wrong outputs
    candidate: CompileConfig = DEFAULT_CONFIG  # the final check's leader, chosen or not
    # its speedup in the batch that reports it: `speedup` when chosen, else its last
    # choosing round's (None if it failed then)
    candidate_speedup: float | None = None
    numerics: str = "preserving"  # the chosen config's kind: "changing" only when allowed
    seconds: float = 0.0
    found_speedup: float | None = None  # the candidate's speedup in the search
    confirmed_speedup: float | None = None  # its estimate over the rounds that chose it
    confirm_rounds: int = 0  # re-measuring rounds of the final check
    screened: int = 0  # candidates a kernel screen compiled (models/kernel_screen.py), none run
    screen_s: float = 0.0  # the seconds it spent compiling them
    verified_speedup: float | None = None  # the kept config beside jax.jit in the tuning process
    _program: Program | None = field(default=None, repr=False, compare=False)
    # a tuned function's: its executable as a callable of the user's call (static values, keys)
    _caller: Callable[[Callable], Callable] | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        values = {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}
        values["best_config"] = self.best_config.to_dict()
        values["candidate"] = self.candidate.to_dict()
        return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in values.items()}

    def compiled(self) -> Callable:
        """The program compiled here with the best config, callable like the original function."""
        from hlotune.tuning.compiled import compile_program

        executable = compile_program(self._program or load_program(self.program), self.best_config)
        return executable if self._caller is None else self._caller(executable)
