"""A decision timed where the program runs: its executable beside jax.jit's, interleaved.

The tune reports a speedup from a batch measured after choosing (tuning/final_check.py), in the
measurement worker; what a fleet saves is what `hlotune.jit` delivers beside `jax.jit` in the
process that runs the program. Here both are compiled from the recording in this process, as
hlotune.jit compiles them (the decision through the compiler hook, the default by jax.jit), and
timed in blocks of calls in a fresh random order every round (compiler/call_timing.py); the
speedup is the ratio of the medians over rounds.
"""

from __future__ import annotations

import time

import numpy as np

from hlotune.fleet.recorded import recorded_spec
from hlotune.tuning.storage import Recording, TuningDatabase, Verification

BLOCK_S = 0.05


def verify_decision(location: str, program: Recording, rounds: int = 10) -> Verification | None:
    """Time the program's decision beside jax.jit and store it; None where no config was kept."""
    verification = time_decision(location, program, rounds)
    if verification is not None:
        with TuningDatabase(location) as db:
            db.verify(program.program, verification)
    return verification


def time_decision(location: str, program: Recording, rounds: int = 10) -> Verification | None:
    """The program's decision timed beside jax.jit in this process, not stored; None where no
    config was kept."""
    import jax

    from hlotune.programs import load_program
    from hlotune.compiler.call_timing import interleaved_call_times
    from hlotune.tuning.compiled import compile_config

    with TuningDatabase(location) as db:
        decision = db.best(program.program)
        if decision is None or decision.kept_default:
            return None
        loaded = load_program(recorded_spec(db, program))
    tuned, plain = compile_config(loaded, decision.chosen), jax.jit(loaded.fn)
    times = interleaved_call_times({"jit": lambda: plain(*loaded.args), "tuned": lambda: tuned(*loaded.args)},
                                   rounds=rounds, block_s=BLOCK_S)
    return Verification(decision.chosen.key, float(np.median(times["jit"]) * 1e9),
                        float(np.median(times["tuned"]) * 1e9), rounds, time.time())
