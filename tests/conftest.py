"""Fixtures shared by the test modules."""

from __future__ import annotations

import atexit
import collections
import importlib
import importlib.util
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]


def _share_compiles() -> None:
    """One jax persistent compilation cache for the run, its workers and their children: the
    same program and config compile once, not in every test that measures them (the default
    config of zoo:mlp@tiny in dozens). Every compile still reaches XLA once a run, and the
    suite checks hlotune under the cache, as users who turn it on run it. No size cap: with
    one, jax locks the folder and, at every write, lists every entry and reads its access time
    to evict (a run writes 550 entries; at 550 a scan takes 76 ms); without it, a reader
    meeting an entry still being written fails to decompress it, and jax warns and compiles
    anew (no such warning in a full run). Set here, before any test module imports jax,
    which reads these at import; the process that made the folder removes it."""
    if "JAX_COMPILATION_CACHE_DIR" in os.environ:
        return
    folder = tempfile.mkdtemp(prefix="hlotune-tests-jax-cache-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    os.environ["JAX_COMPILATION_CACHE_DIR"] = folder
    os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
    os.environ["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "0"


_share_compiles()


# The files that take longest (60 s to 12 s of wall in a full run), handed out first; the rest
# follow as pytest-xdist orders them by default, most tests first (addopts turns that off
# with --no-loadscope-reorder). xdist gives each worker whole files, so a long file with few
# tests left for last (test_ddp, one test, 12 s) kept a worker busy while the other sat idle,
# 12 s at the end of a run (now 2 s). A stale entry only costs balance.
LONGEST_FILES = ("test_corpus.py", "test_tune.py", "test_zoo.py", "test_jit.py", "test_export_pytrees.py",
                 "test_compiler.py", "test_cli.py", "test_pretrained.py", "test_train.py", "test_report.py",
                 "test_fleet.py", "test_ray_runner.py", "test_opt_schedule_real.py", "test_zygote.py",
                 "test_fusion.py", "test_jax_api.py", "test_ddp.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: index for index, name in enumerate(LONGEST_FILES)}
    tests = collections.Counter(item.path for item in items)
    items.sort(key=lambda item: (rank.get(item.path.name, len(rank)), -tests[item.path], item.path))


@pytest.fixture(scope="session")
def tpugraphs_dir() -> Path:
    """The real TpuGraphs fixture folder, or a skip where this checkout has none.

    $HLOTUNE_SHARED_DATA names the shared `data` folder; otherwise it sits beside the repo.
    """
    data = Path(os.environ.get("HLOTUNE_SHARED_DATA") or REPO.parent / "shared" / "data")
    folder = data / "tpugraphs"
    if not folder.is_dir():
        skip_for_missing_data(f"no TpuGraphs fixtures at {folder} (set HLOTUNE_SHARED_DATA)")
    return folder


def skip_for_missing_data(reason: str) -> NoReturn:
    """Skip a test whose data this checkout lacks (the summary lists it with `reason`); under
    CI, which always has ../shared and the built-in dataset, a missing file is a failure."""
    _missing("this test's data", reason)


def need(*names: str, install: str, executable: bool = False) -> Any:
    """The first of `names` that is here: an imported module, or with `executable` a program's
    path on PATH. Where none is, the test skips, listing `install` as the way to get it; under
    CI, whose .ci/run installs every extra, Chromium and its driver, that is a failure, so a
    broken install cannot pass as skipped tests. Works at module level too."""
    for name in names:
        if executable:
            if path := shutil.which(name):
                return path
        elif importlib.util.find_spec(name.partition(".")[0]) is not None:
            return importlib.import_module(name)
    _missing("every optional dependency", f"{' or '.join(names)} is not installed ({install})")


def _missing(what: str, reason: str) -> NoReturn:
    if os.environ.get("CI"):
        pytest.fail(f"CI must have {what}: {reason}", pytrace=False)
    pytest.skip(reason=reason, allow_module_level=True)


def compile_and_run(fn: Callable, args: tuple) -> Any:
    """`fn(*args)` compiled as programs compile their example arguments (QUICK_COMPILE), for
    tests of what a program computes and that it builds, not of its speed: compiles are most
    of what the suite spends, and these take an eighth of the default's CPU (a tiny
    transformer's training step: 0.5 s, not 4.0 s)."""
    import jax

    from hlotune.programs.zoo.base import QUICK_COMPILE

    return jax.jit(fn).lower(*args).compile(compiler_options=QUICK_COMPILE)(*args)


def normals(seed: int, *shapes: tuple[int, ...], dtype: Any = np.float32) -> list[Any]:
    """Standard normal jax arrays of `shapes`, drawn by numpy: jax.random called outside a jit
    compiles a sampler for each shape and dtype at full optimisation (up to a second each)."""
    import jax.numpy as jnp

    rng = np.random.default_rng(seed)
    return [jnp.asarray(rng.standard_normal(shape, np.float32), dtype) for shape in shapes]


@pytest.fixture
def one_thread():
    """Torch on one thread for the test: the PPO budgets are sized for it, and results do not
    depend on how many threads a machine would use."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def cli(capfd) -> Callable[..., subprocess.CompletedProcess]:
    """`cli(*ARGS)` runs `hlotune ARGS` in this process and gives what a child process would: its
    exit status, stdout and stderr (captured at the file descriptors, so XLA's own messages
    count). A child pays for importing jax and torch afresh, seconds a call on 2 cores; tests of
    what only a real process shows (a SIGKILL, a terminal, the imports of a fresh interpreter)
    start one instead."""
    from hlotune.cli import main

    def run(*args) -> subprocess.CompletedProcess:
        argv = [str(arg) for arg in args]
        capfd.readouterr()  # this call's output only
        try:
            code = main(argv)
        except SystemExit as exit:  # argparse: --help, --version, usage errors
            code = exit.code if isinstance(exit.code, int) else int(exit.code is not None)
        out, err = capfd.readouterr()
        return subprocess.CompletedProcess(["hlotune", *argv], code, out, err)

    return run


@pytest.fixture(params=["sqlite", "postgresql"])
def db_location(request, tmp_path) -> str:
    """A new tuning database on each backend: a SQLite file, and a PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "tuning.sqlite")
    return request.getfixturevalue("postgres_url")


@pytest.fixture
def postgres_url() -> Any:
    """The URL of a new, empty PostgreSQL database on the server $HLOTUNE_TEST_POSTGRES names
    (`.ci/postgres` starts one and prints its URL), dropped after the test; a skip where no
    server is named (a failure under CI)."""
    import uuid

    server = os.environ.get("HLOTUNE_TEST_POSTGRES")
    if not server:
        _missing("a PostgreSQL server", "no PostgreSQL server: export HLOTUNE_TEST_POSTGRES=$(bash .ci/postgres)")
    psycopg = need("psycopg", install='pip install "hlotune[postgres]"')
    name = f"hlotune_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    yield f"{server.rpartition('/')[0]}/{name}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE {name} WITH (FORCE)")
