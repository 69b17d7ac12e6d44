"""Measurement workers forked from a warm process instead of started cold.

A cold worker spends most of its start importing jax (about 1.2 of 1.9 s on 2 cores), and a
tune starts one for each program and again after every config that crashes or hangs XLA. The
zygote is a child process that imports jax and the worker's modules once and forks each worker
from there. It never starts an XLA backend: before one exists jax runs no threads of its own,
so the fork is safe (jax itself only objects to a fork once a backend is up).

A forked worker is what a cold one is: it gets the caller's pipes, current directory and
environment as they are when it starts. Variables read at start-up (by Python, the loader, the
BLAS, jax at import) cannot change in a running process, so when one of those changes the
zygote is started again. The zygote reaps the workers and reports their exit codes as
`subprocess` does. `HLOTUNE_FORK_WORKERS=0` starts every worker cold.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import warnings
from typing import IO, Any

SWITCH = "HLOTUNE_FORK_WORKERS"
WORKER_COMMAND = ("-m", "hlotune.compiler.measurement.worker")
# Environment variables read when a process starts or imports jax, not later.
STARTUP_VARIABLES = ("JAX_", "XLA_", "TF_", "TPU_", "PYTHON", "LD_", "OMP_", "OPENBLAS_", "MKL_")
# What a worker imports, some of it only at its first compile (jax.extend.core: a layout build).
PRELOAD = ("hlotune.compiler.measurement.worker", "hlotune.compiler.configs.config", "hlotune.compiler.xla.hook",
           "hlotune.compiler.configs.layouts", "hlotune.programs.zoo", "jax.extend.core")


def start_worker(stderr: IO[bytes]) -> subprocess.Popen | ForkedWorker:
    """A measurement worker speaking worker.py's protocol on its stdin and stdout."""
    zygote = None if os.environ.get(SWITCH) == "0" else _zygote()
    if zygote is not None:
        try:
            return zygote.fork(stderr)
        except OSError:  # it died under the request: this worker starts cold, the next a new zygote
            pass
    return subprocess.Popen([sys.executable, *WORKER_COMMAND], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=stderr)


class ForkedWorker:
    """The parts of subprocess.Popen that measure.py uses, for a worker the zygote forked."""

    def __init__(self, zygote: Zygote, pid: int, stdin: IO[bytes], stdout: IO[bytes]) -> None:
        self.pid, self.stdin, self.stdout = pid, stdin, stdout
        self.returncode: int | None = None
        self._zygote = zygote

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._zygote.exit_code(self.pid, block=False)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if timeout is None:
            if self.returncode is None:
                self.returncode = self._zygote.exit_code(self.pid, block=True)
            return self.returncode
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(WORKER_COMMAND, timeout)
            time.sleep(0.01)
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            os.kill(self.pid, signal.SIGKILL)


class Zygote:
    """The client side: one zygote per process and environment (see `_zygote`). One that is
    replaced (`retire`) still serves the workers it forked, and closes after their exit."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        self.environment, self.owner = startup_environment(), os.getpid()
        self._running, self._retired = 0, False  # workers whose exit is not yet known
        self._process = subprocess.Popen(
            [sys.executable, "-m", __name__, str(theirs.fileno())],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, pass_fds=[theirs.fileno()],
        )
        theirs.close()
        self._socket, self._replies = ours, ours.makefile("rb")
        self._lock = threading.Lock()
        ready = self._receive()
        if not ready["ok"]:
            self.close()
            raise OSError(ready["error"])

    def fork(self, stderr: IO[bytes]) -> ForkedWorker:
        stdin_read, stdin_write = os.pipe()
        stdout_read, stdout_write = os.pipe()
        try:
            reply = self._request({"op": "fork", "cwd": os.getcwd(), "env": dict(os.environ)},
                                  [stdin_read, stdout_write, stderr.fileno()])
        except OSError:
            os.close(stdin_write)
            os.close(stdout_read)
            raise
        finally:
            os.close(stdin_read)
            os.close(stdout_write)
        self._count(+1)
        return ForkedWorker(self, reply["pid"], os.fdopen(stdin_write, "wb"),
                            os.fdopen(stdout_read, "rb"))

    def alive(self) -> bool:
        return self._process.poll() is None

    def exit_code(self, pid: int, block: bool) -> int | None:
        code = self._request({"op": "wait", "pid": pid, "block": block})["code"]
        if code is not None:
            self._count(-1)
        return code

    def retire(self) -> None:
        self._retired = True
        self._count(0)

    def _count(self, change: int) -> None:
        """Count a worker forked (+1) or gone (-1), or just check (0): a retired zygote left
        with none closes."""
        with self._lock:
            self._running += change
            done = self._retired and not self._running
        if done:
            self.close()

    def close(self) -> None:
        self._replies.close()
        self._socket.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()

    def _request(self, message: dict, fds: list[int] = ()) -> dict:
        with self._lock:
            socket.send_fds(self._socket, [json.dumps(message).encode() + b"\n"], fds)
            return self._receive()

    def _receive(self) -> dict:
        line = self._replies.readline()
        if not line:
            raise OSError(f"the worker zygote died (exit code {self._process.wait()})")
        return json.loads(line)


_current: Zygote | None = None
_lock = threading.Lock()
_failed = False


def _zygote() -> Zygote | None:
    """This process's zygote, started again if it died or a start-up variable changed since it
    started; None (cold starts) for good if one could not start."""
    global _current, _failed
    with _lock:
        if _failed:
            return None
        if _current is not None and _current.owner != os.getpid():
            _current = None  # inherited through a fork: that zygote serves the parent
        if _current is not None and (not _current.alive() or _current.environment != startup_environment()):
            _current.retire()
            _current = None
        if _current is None:
            try:
                _current = Zygote()
            except OSError as error:
                _failed = True
                warnings.warn(f"hlotune: measurement workers start cold: {error}", stacklevel=3)
        return _current


def startup_environment() -> dict[str, str]:
    """The variables a process reads when it starts or imports jax (STARTUP_VARIABLES)."""
    return {name: value for name, value in os.environ.items() if name.startswith(STARTUP_VARIABLES)}


def _close() -> None:
    global _current
    if _current is not None and _current.owner == os.getpid():
        _current.close()
    _current = None


atexit.register(_close)


# The zygote itself.

def serve(channel: socket.socket) -> None:
    """Preload, say whether forking is safe, then fork a worker per request until EOF."""
    # Ctrl-C is for the caller and its workers, which get what a cold worker would have had:
    # the caller's own choice (a job started in the background ignores it).
    worker_sigint = signal.signal(signal.SIGINT, signal.SIG_IGN)
    warnings.filterwarnings("ignore", message=".*use of fork\\(\\) may lead to deadlocks")
    replies = channel.makefile("wb", buffering=0)
    ready = _preload()
    replies.write(json.dumps(ready).encode() + b"\n")
    exited: dict[int, int] = {}
    while ready["ok"]:
        request, fds = _next_request(channel)
        if request is None:
            return
        _reap(exited)
        if request["op"] == "fork":
            pid = _fork_worker(channel, request["cwd"], request["env"], fds, worker_sigint)
            exited.pop(pid, None)  # a reused pid's old, unasked exit
            reply = {"pid": pid}
        else:
            reply = {"code": _exit_code(request["pid"], request["block"], exited)}
        replies.write(json.dumps(reply).encode() + b"\n")


def _preload() -> dict:
    import importlib

    try:
        for module in PRELOAD:
            importlib.import_module(module)
        from jax._src import xla_bridge

        if getattr(xla_bridge, "_backends", None):
            return {"ok": False, "error": "importing the worker started an XLA backend"}
    except Exception as error:
        return {"ok": False, "error": f"preloading the worker failed: {type(error).__name__}: {error}"}
    return {"ok": True}


def _next_request(channel: socket.socket) -> tuple[dict | None, list[int]]:
    buffer, fds = b"", []
    while not buffer.endswith(b"\n"):
        data, received, _, _ = socket.recv_fds(channel, 1 << 16, 8)
        if not data:
            return None, fds
        buffer, fds = buffer + data, fds + received
    return json.loads(buffer), fds


def _fork_worker(channel: socket.socket, cwd: str, environment: dict[str, str], fds: list[int],
                 sigint: Any) -> int:
    pid = os.fork()
    if pid == 0:
        channel.close()
        for target, fd in enumerate(fds):  # stdin, stdout, stderr
            os.dup2(fd, target)
            os.close(fd)
        _run_worker(cwd, environment, sigint)
    for fd in fds:
        os.close(fd)
    return pid


def _run_worker(cwd: str, environment: dict[str, str], sigint: Any) -> None:
    """Become `python -m hlotune.compiler.measurement.worker` started in `cwd`; never returns."""
    from hlotune.compiler.measurement import worker

    signal.signal(signal.SIGINT, sigint)
    os.environ.clear()
    os.environ.update(environment)
    os.chdir(cwd)
    sys.path[0] = cwd
    code = 1
    try:
        code = worker.main()
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _reap(exited: dict[int, int]) -> None:
    """Collect every worker that exited, asked for or not (a caller that dropped a worker
    never asks): no zombies pile up in a long tune."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:  # no workers at all
            return
        if pid == 0:
            return
        exited[pid] = os.waitstatus_to_exitcode(status)


def _exit_code(pid: int, block: bool, exited: dict[int, int]) -> int | None:
    """The worker's exit code as subprocess gives it, reported once; None while it runs."""
    if pid not in exited:
        done, status = os.waitpid(pid, 0 if block else os.WNOHANG)
        if done == 0:
            return None
        exited[pid] = os.waitstatus_to_exitcode(status)
    return exited.pop(pid)


if __name__ == "__main__":
    serve(socket.socket(fileno=int(sys.argv[1])))
