"""The measurement worker: a child process that compiles and runs one program's configs.

XLA can abort, crash or hang on a configuration (some disabled passes abort XLA:CPU), so
compiling and running happen here, never in the caller. The parent (measure.py) speaks JSON
lines over stdin and a private copy of stdout; anything else the program or XLA prints goes to
stderr, where the parent finds the reason of a crash. Samples stream back one config at a
time, so the parent knows which config was in flight when the worker crashed or hung.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import numpy as np

from hlotune.compiler.measurement.argument_files import load_with_arguments
from hlotune.compiler.measurement.output_check import check_outputs
from hlotune.programs import Program


# Fault injection for the parent's timeout path (tests): running a config whose key contains
# this text hangs the worker, as a stuck XLA executable would. Unset, it costs nothing.
HANG_ON = "HLOTUNE_TEST_HANG_ON"


class Worker:
    def __init__(self, reply) -> None:
        self._reply = reply
        self._space = None
        self._compiled: dict[str, tuple[Any, list]] = {}
        self._keys: dict[str, str] = {}
        self._reference: list[np.ndarray] | None = None
        self._hang_on = os.environ.get(HANG_ON)
        self._profiled = False

    def load(self, program: str, arguments: str | None = None) -> dict:
        """Load `program` by spec, its example arguments from the file `arguments` where the
        parent names one (argument_files.py)."""
        return self.use(load_with_arguments(program, arguments))

    def use(self, program: Program) -> dict:
        """Measure `program`, a live one (in_process.py) or one loaded by spec. Its layout
        sites are found when a layout config is first checked: finding them lowers the
        program once more (0.1-0.3 s), which a worker measuring flags has no use for."""
        from hlotune.compiler.configs.layouts import LayoutSpace

        self._space = LayoutSpace(program)
        return {"ok": True}

    def compile(self, id: str, config: dict, rtol: float | None = None, warmup: int = 2) -> dict:
        """Compile, warm up and check the outputs against the reference (the first compiled)."""
        from hlotune.compiler.configs.config import CompileConfig
        from hlotune.compiler.xla.hook import compile_config

        parsed = CompileConfig.from_dict(config)
        self._space.check(parsed.layout)
        start = time.perf_counter()
        lowered = self._space.build(parsed.layout).lower(*self._space.leaves)
        executable = compile_config(lowered, parsed)
        compile_s = time.perf_counter() - start
        args = self._space.placed_args(parsed.layout)
        outputs = [np.asarray(x) for x in _leaves(executable(*args))]
        for _ in range(warmup - 1):
            _block(executable(*args))
        call_ns = _warm_call_ns(executable, args)
        if self._reference is None:
            self._reference = outputs
        self._compiled[id] = (executable, args)
        self._keys[id] = parsed.key
        check = check_outputs(outputs, self._reference, rtol)
        return {"ok": True, "compile_s": compile_s, "max_rel_error": check.max_rel_error,
                "outputs_match": check.ok, "mismatch": check.reason, "call_ns": call_ns}

    def module(self, config: dict) -> dict:
        """Compile only: the module XLA makes of `config`, for a model to screen (nothing runs)."""
        from hlotune.compiler.configs.config import CompileConfig
        from hlotune.compiler.xla.hook import compile_config

        parsed = CompileConfig.from_dict(config)
        self._space.check(parsed.layout)
        start = time.perf_counter()
        executable = compile_config(self._space.build(parsed.layout).lower(*self._space.leaves), parsed)
        return {"ok": True, "text": executable.as_text(), "compile_s": time.perf_counter() - start}

    def run(self, ids: list[str], repeats: int, loop: int = 1) -> dict:
        """Take `repeats` samples of each config in order, streaming each config's samples; a
        sample times `loop` calls back to back and is their mean (a run too short to time
        alone is timed K at a time)."""
        for id in ids:
            executable, args = self._compiled[id]
            if self._hang_on and self._hang_on in self._keys[id]:
                time.sleep(1e6)
            times = []
            for _ in range(repeats):
                begin = time.perf_counter_ns()
                for _ in range(loop):
                    _block(executable(*args))
                times.append((time.perf_counter_ns() - begin) // loop)
            self._reply({"id": id, "ns": times})
        return {"ok": True}

    def profile(self, id: str, runs: int) -> dict:
        """Each kernel's time from `runs` profiled calls, taken apart from the timed rounds."""
        from hlotune.compiler.profiles.kernel_profile import profile_kernels

        executable, args = self._compiled[id]
        if not self._profiled:  # a process's first trace session runs its kernels slower
            profile_kernels(executable, args, runs)
            self._profiled = True
        profile = profile_kernels(executable, args, runs)
        return {"ok": True, "kernel_ns": profile.kernel_ns, "calls": profile.calls, "span_ns": profile.span_ns}

    def hlo(self, id: str) -> dict:
        return {"ok": True, "text": self._compiled[id][0].as_text()}

    def drop(self, id: str) -> dict:
        self._compiled.pop(id, None)
        return {"ok": True}


def _leaves(tree) -> list:
    import jax

    return jax.tree_util.tree_leaves(tree)


def _warm_call_ns(executable, args, calls: int = 3, window_ns: int = 2_000_000) -> int:
    """One warm call's time: the fastest of `calls`, or of as many as fill `window_ns` where
    calls are short. Calls of microseconds run several times slower for the first dozen after
    compiling (seen: 71 us against 12 us steady), and sizing a sample's loop on them makes
    samples a fifth of their target."""
    times = [_time_call(executable, args) for _ in range(calls)]
    while sum(times) < window_ns and len(times) < 1000:
        times.append(_time_call(executable, args))
    return min(times)


def _time_call(executable, args) -> int:
    begin = time.perf_counter_ns()
    _block(executable(*args))
    return time.perf_counter_ns() - begin


def _block(outputs) -> None:
    for leaf in _leaves(outputs):
        leaf.block_until_ready()


def main() -> int:
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints must not corrupt replies

    def reply(message: dict) -> None:
        replies.write(json.dumps(message) + "\n")

    worker = Worker(reply)
    for line in sys.stdin:
        request = json.loads(line)
        op = request.pop("op")
        if op == "quit":
            break
        reply(serve(worker, op, request))
    return 0


def serve(worker: Worker, op: str, request: dict) -> dict:
    """The reply to one request: a failing config or program is reported, and serving goes on."""
    try:
        return getattr(worker, op)(**request)
    except Exception as error:
        text = str(error).strip().splitlines()
        return {"ok": False, "error": f"{type(error).__name__}: {text[0] if text else ''}"}


if __name__ == "__main__":
    sys.exit(main())
