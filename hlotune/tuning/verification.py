"""A kept config timed where the program runs: its executable beside jax.jit's, interleaved.

The tune reports a speedup from a batch measured after choosing (final_check.py), in the
measurement worker; what a user saves is what `hlotune.jit` delivers beside `jax.jit` in the
process that runs the program. So every tune measured on this machine that keeps a config
ends here (tuner.py): both executables compiled in this process, as hlotune.jit compiles them
(the config through the compiler hook, the default by jax.jit), timed in blocks of calls in a
fresh random order every round (compiler/measurement/call_timing.py); the speedup is the ratio of the
medians over rounds, stored beside the decision, where the rule (storage/field.py) reads it.
"""

from __future__ import annotations

import time

import numpy as np

from hlotune.compiler.configs.config import CompileConfig
from hlotune.programs import Program
from hlotune.tuning.storage import Verification

BLOCK_S = 0.02  # seconds a block of calls lasts
ROUNDS = 10


def time_config(program: Program, config: CompileConfig, rounds: int = ROUNDS) -> Verification:
    """`config`'s executable of the program timed beside jax.jit's in this process."""
    import jax

    from hlotune.compiler.measurement.call_timing import interleaved_call_times
    from hlotune.tuning.compiled import compile_program

    tuned, plain = compile_program(program, config), jax.jit(program.fn)
    times = interleaved_call_times({"jit": lambda: plain(*program.args), "tuned": lambda: tuned(*program.args)},
                                   rounds=rounds, block_s=BLOCK_S)
    return Verification(config.key, float(np.median(times["jit"]) * 1e9), float(np.median(times["tuned"]) * 1e9),
                        rounds, time.time())
