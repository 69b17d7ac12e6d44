"""Measurement workers forked from the zygote: what a cold start gave them, they still get."""

import json
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import jax
import pytest

from hlotune.compiler.measurement import zygote
from hlotune.compiler.configs.config import DEFAULT_CONFIG
from hlotune.compiler.measurement.measure import OK, MeasureSettings, measure

PROGRAM = '''
import os
import jax.numpy as jnp

def make():
    size = int(os.environ["ZYGOTE_PROBE_SIZE"])  # set after the zygote started
    return (lambda x: jnp.tanh(x) * 2), (jnp.ones((size, size)),)
'''


def test_a_forked_worker_starts_in_the_callers_directory_and_environment(tmp_path, monkeypatch):
    started = zygote._zygote()
    assert isinstance(started, zygote.Zygote)
    (tmp_path / "probe.py").write_text(PROGRAM)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ZYGOTE_PROBE_SIZE", "8")
    result = measure("probe.py:make", [DEFAULT_CONFIG], MeasureSettings(rounds=1, repeats=2))
    assert result.measurements[0].status == OK
    assert zygote._zygote() is started  # neither change needed a new zygote


def test_exit_codes_reach_the_caller_as_subprocess_gives_them():
    with tempfile.TemporaryFile() as stderr:
        worker = zygote.start_worker(stderr)
        assert isinstance(worker, zygote.ForkedWorker) and worker.poll() is None
        with pytest.raises(subprocess.TimeoutExpired):
            worker.wait(timeout=0.05)
        worker.kill()
        assert worker.wait() == -9 and worker.poll() == -9
        worker = zygote.start_worker(stderr)
        worker.stdin.write(json.dumps({"op": "quit"}).encode() + b"\n")
        worker.stdin.flush()
        assert worker.wait(timeout=30) == 0


def test_only_a_start_up_variable_starts_a_new_zygote(monkeypatch):
    first = zygote._zygote()
    monkeypatch.setenv("HLOTUNE_SOMETHING_ELSE", "1")
    assert zygote._zygote() is first
    monkeypatch.setenv("JAX_HLOTUNE_TEST_PROBE", "1")  # jax reads JAX_* at import
    assert zygote._zygote() is not first


def test_a_replaced_zygote_serves_its_workers_then_exits():
    replaced = zygote.Zygote()
    with tempfile.TemporaryFile() as stderr:
        worker = replaced.fork(stderr)
    replaced.retire()
    assert replaced.alive() and worker.poll() is None
    worker.kill()
    assert worker.wait() == -9
    assert replaced._process.wait(timeout=10) == 0  # its socket closed with the last worker


def test_ctrl_c_reaches_a_worker_as_it_would_a_cold_one(monkeypatch):
    """A background job ignores Ctrl-C, and so do the workers a cold start would give it."""
    quit = json.dumps({"op": "quit"}).encode() + b"\n"
    with tempfile.TemporaryFile() as stderr:
        default = zygote.start_worker(stderr)
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            monkeypatch.setenv("JAX_HLOTUNE_TEST_PROBE", "sigint")  # a zygote started ignoring it
            ignoring = zygote.start_worker(stderr)
        finally:
            signal.signal(signal.SIGINT, previous)
        for worker in (default, ignoring):
            os.kill(worker.pid, signal.SIGINT)
        assert default.wait(timeout=30) == 1  # KeyboardInterrupt
        ignoring.stdin.write(quit)
        ignoring.stdin.flush()
        assert ignoring.wait(timeout=30) == 0


def test_a_zygote_that_died_is_started_again():
    first = zygote._zygote()
    first._process.kill()
    first._process.wait()
    with tempfile.TemporaryFile() as stderr:
        worker = zygote.start_worker(stderr)
        assert isinstance(worker, zygote.ForkedWorker) and zygote._zygote() is not first
        worker.kill()
        assert worker.wait() == -9


def test_a_zygote_that_dies_under_a_request_leaves_a_cold_start_and_no_open_pipe(monkeypatch):
    dead = zygote.Zygote()
    dead._process.kill()
    dead._process.wait()
    monkeypatch.setattr(zygote, "_zygote", lambda: dead)
    with tempfile.TemporaryFile() as stderr:
        open_before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self") else None
        with pytest.raises(OSError):
            dead.fork(stderr)
        if open_before is not None:
            assert len(os.listdir("/proc/self/fd")) == open_before
        worker = zygote.start_worker(stderr)
        assert isinstance(worker, subprocess.Popen)
        worker.kill()
        assert worker.wait() == -9


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads process states from /proc")
def test_a_worker_nobody_waits_for_leaves_no_zombie():
    own = zygote.Zygote()
    with tempfile.TemporaryFile() as stderr:
        dropped = own.fork(stderr)
        dropped.stdin.close()  # the worker reads the end of its requests and exits
        state = Path(f"/proc/{dropped.pid}/stat")
        for _ in range(3000):
            if state.read_text().rsplit(")", 1)[1].split()[0] == "Z":
                break
            time.sleep(0.01)
        other = own.fork(stderr)  # any request reaps what exited
        assert not state.exists()
        other.kill()
        assert other.wait() == -9
    own.close()


def test_workers_start_cold_when_forking_is_switched_off(monkeypatch):
    monkeypatch.setenv(zygote.SWITCH, "0")
    with tempfile.TemporaryFile() as stderr:
        worker = zygote.start_worker(stderr)
        assert isinstance(worker, subprocess.Popen)
        worker.kill()
        assert worker.wait() == -9


def test_the_zygote_refuses_to_fork_once_an_xla_backend_runs():
    jax.devices()  # this process has a backend, hence XLA's threads
    ready = zygote._preload()
    assert not ready["ok"] and ready["error"] == "importing the worker started an XLA backend"
