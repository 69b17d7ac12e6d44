"""The measurement worker as a session: one process that loads the program, compiles configs by
id and runs them, spoken to in JSON lines on its stdin and stdout (compiler/measurement/worker.py answers).

measure.py's Measurer drives it. A worker that crashes, exits or hangs past its timeout raises
WorkerDied with the reason, read from the last fatal line XLA logged; `restart` starts a fresh
one and compiles the healthy configs again in the same order, so a batch goes on.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import tempfile
import time
from typing import TYPE_CHECKING

from hlotune.compiler.measurement.argument_files import argument_file
from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.measurement.zygote import ForkedWorker, start_worker
from hlotune.errors import HlotuneError

if TYPE_CHECKING:
    from hlotune.compiler.measurement.measure import MeasureSettings

_FATAL = re.compile(r"^F\d{4} |.*Check failed")  # XLA's fatal log lines


class WorkerDied(Exception):
    """The worker exited, crashed or timed out; `reason` says how."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class WorkerSession:
    """A live worker with every healthy config compiled; restarts replay the compiles."""

    def __init__(self, program: str, settings: MeasureSettings) -> None:
        self.program, self.settings = program, settings
        self._compiled: dict[str, CompileConfig] = {}
        self._process: subprocess.Popen | ForkedWorker | None = None

    def __enter__(self) -> WorkerSession:
        self._start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop()

    def compile(self, id: str, config: CompileConfig) -> dict:
        request = {"op": "compile", "id": id, "config": config.to_dict(), "rtol": self.settings.rtol}
        reply = self._request(request, self.settings.compile_timeout_s)
        if reply["ok"]:
            self._compiled[id] = config
        return reply

    def clear(self) -> None:
        """Drop every compiled config (a new batch reuses the ids); a dead worker restarts."""
        try:
            for id in list(self._compiled):
                self.drop(id)
        except WorkerDied:
            self._compiled = {}
            self.restart()

    def profile(self, id: str, runs: int) -> dict:
        return self._request({"op": "profile", "id": id, "runs": runs}, self.settings.run_timeout_s)

    def hlo(self, id: str) -> dict:
        return self._request({"op": "hlo", "id": id}, self.settings.compile_timeout_s)

    def module(self, config: CompileConfig) -> dict:
        return self._request({"op": "module", "config": config.to_dict()}, self.settings.compile_timeout_s)

    def drop(self, id: str) -> None:
        self._compiled.pop(id, None)
        self._request({"op": "drop", "id": id}, self.settings.compile_timeout_s)

    def run(self, ids: list[str], repeats: int, loop: int):
        """Yield (id, samples) as each config finishes its calls."""
        self._send({"op": "run", "ids": list(ids), "repeats": repeats, "loop": loop})
        while True:
            message = self._receive(self.settings.run_timeout_s)
            if "id" in message:
                yield message["id"], message["ns"]
            elif not message.get("ok", False):
                raise HlotuneError(f"measurement worker failed: {message.get('error')}")
            else:
                return

    def restart(self) -> None:
        """A fresh worker with the same healthy configs, compiled again in the same order."""
        self._stop()
        self._start()
        for id, config in list(self._compiled.items()):
            reply = self.compile(id, config)
            if not reply["ok"]:
                raise HlotuneError(f"{self.program}: {id} no longer compiles: {reply['error']}")

    def _start(self) -> None:
        self._stderr = tempfile.TemporaryFile()
        self._process = start_worker(self._stderr)
        self._buffer = b""
        load = {"op": "load", "program": self.program, "arguments": argument_file(self.program)}
        reply = self._request(load, self.settings.compile_timeout_s)
        if not reply["ok"]:
            raise HlotuneError(f"{self.program}: cannot load it in the worker: {reply['error']}")

    def _stop(self) -> None:
        if self._process is None:
            return
        if self._process.poll() is None:
            try:
                self._send({"op": "quit"})
                self._process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self._process.kill()
                self._process.wait()
        self._process = None
        self._stderr.close()

    def _request(self, message: dict, timeout_s: float) -> dict:
        self._send(message)
        return self._receive(timeout_s)

    def _send(self, message: dict) -> None:
        try:
            self._process.stdin.write(json.dumps(message).encode() + b"\n")
            self._process.stdin.flush()
        except BrokenPipeError:
            raise WorkerDied(self._death_reason()) from None

    def _receive(self, timeout_s: float) -> dict:
        """The next reply line; our own buffer, so select() never waits on buffered data."""
        deadline = time.monotonic() + timeout_s
        stdout = self._process.stdout.fileno()
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([stdout], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                self._process.kill()
                self._process.wait()
                raise WorkerDied(f"timed out after {timeout_s:g} s")
            chunk = os.read(stdout, 1 << 16)
            if not chunk:
                raise WorkerDied(self._death_reason())
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return json.loads(line)

    def _death_reason(self) -> str:
        code = self._process.wait()
        how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exited with {code}"
        self._stderr.seek(0)
        lines = [l for l in self._stderr.read().decode("utf-8", "replace").splitlines() if l.strip()]
        detail = next((l.strip() for l in reversed(lines) if _FATAL.match(l)), "")
        return f"XLA worker {how}" + (f": {detail[:300]}" if detail else "")
