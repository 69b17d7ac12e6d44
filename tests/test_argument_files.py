"""Example arguments handed to measurement workers in a file (compiler/measurement/argument_files.py): a later
worker gets the same values without running init, and a file that does not hold them is ignored."""

import os
import subprocess
import sys
import tempfile

import jax
import numpy as np
import pytest

from hlotune.compiler.measurement import argument_files
from hlotune.compiler.measurement.argument_files import argument_file, load_with_arguments, offer
from hlotune.programs import Program, load_program
from hlotune.tuning.fingerprint import program_fingerprint

BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"  # jax's event for each XLA compile
_compiles: list[str] | None = None  # the compiles seen while a test records them


def _record(event: str, duration: float, **kwargs) -> None:
    if _compiles is not None and event == BACKEND_COMPILE:
        _compiles.append(event)


jax.monitoring.register_event_duration_secs_listener(_record)  # jax 0.8 cannot unregister one


def _loaded_counting_compiles(spec: str, path: str):
    """The program, and how many compiles its load took; jax's caches are emptied first, so
    running init compiles it even where this process ran it before."""
    global _compiles
    jax.clear_caches()
    _compiles = []
    try:
        program = load_with_arguments(spec, path)
        return program, len(_compiles)
    finally:
        _compiles = None


def _same_values(a, b) -> bool:
    left, right = jax.tree_util.tree_leaves(a.args), jax.tree_util.tree_leaves(b.args)
    return (jax.tree_util.tree_structure(a.args) == jax.tree_util.tree_structure(b.args)
            and all(x.dtype == y.dtype and np.asarray(x).tobytes() == np.asarray(y).tobytes()
                    for x, y in zip(left, right)))


@pytest.mark.parametrize("spec", ["zoo:transformer@tiny-train", "go:rnnlm@tiny"])
def test_a_later_worker_gets_the_first_ones_values_and_compiles_nothing_for_them(spec, tmp_path):
    path = str(tmp_path / "arguments.npz")
    first, first_compiles = _loaded_counting_compiles(spec, path)
    assert first_compiles > 0 and os.path.exists(path)  # init ran, and its values were written
    later, later_compiles = _loaded_counting_compiles(spec, path)
    assert later_compiles == 0
    assert _same_values(later, first) and program_fingerprint(later) == program_fingerprint(first)


def test_bfloat16_values_come_back_bit_for_bit(tmp_path):
    pytest.importorskip("transformers")
    spec, path = "corpus:hf-bert@tiny-bf16", str(tmp_path / "arguments.npz")
    first = load_with_arguments(spec, path)
    assert jax.tree_util.tree_leaves(first.args)[0].dtype == jax.numpy.bfloat16
    assert _same_values(load_with_arguments(spec, path), first)


def test_a_file_that_does_not_hold_the_programs_values_is_ignored_and_replaced(tmp_path):
    """Another program's values (other shapes), and a torn file, are not read: init runs and
    writes the right ones."""
    spec, path = "zoo:mlp@tiny", tmp_path / "arguments.npz"
    load_with_arguments("zoo:mlp@tiny-b2", str(path))
    other = path.read_bytes()
    for wrong in (other, other[: len(other) // 2]):
        path.write_bytes(wrong)
        program, compiles = _loaded_counting_compiles(spec, str(path))
        assert compiles > 0 and _same_values(program, load_program(spec))
        assert path.read_bytes() != wrong


def test_only_programs_traced_for_shapes_get_a_file_and_an_offer_writes_it_once(tmp_path):
    assert argument_file("numerics:heat@tiny") is None and argument_file("model.py:make") is None
    path = argument_file("zoo:mlp@tiny")
    assert path is not None and os.path.dirname(path) == str(argument_files._folder())
    program = load_program("zoo:mlp@tiny")
    offer(program)
    written = os.stat(path).st_mtime_ns
    offer(program)
    assert os.stat(path).st_mtime_ns == written
    assert _same_values(load_with_arguments("zoo:mlp@tiny", path), program)


def test_a_weak_typed_leaf_is_not_written(tmp_path):
    """Read back, it would be a strong-typed array, and the program would lower differently."""
    weak = jax.numpy.asarray(2.0)
    program = Program("zoo:mlp@tiny", lambda x: x, (weak,))
    argument_files._write(program, str(tmp_path / "arguments.npz"))
    assert not (tmp_path / "arguments.npz").exists()


def test_the_file_is_keyed_by_the_variables_a_worker_reads_at_start(monkeypatch):
    """Under another PRNG implementation init makes other values of the same shapes."""
    before = argument_file("zoo:mlp@tiny")
    monkeypatch.setenv("HLOTUNE_UNRELATED", "1")
    assert argument_file("zoo:mlp@tiny") == before
    monkeypatch.setenv("JAX_DEFAULT_PRNG_IMPL", "rbg")
    assert argument_file("zoo:mlp@tiny") != before


def test_folders_of_processes_that_died_are_removed_and_live_ones_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    orphan, live = (tmp_path / f"{argument_files.FOLDER_PREFIX}{pid}-x" for pid in (dead, os.getpid()))
    orphan.mkdir()
    live.mkdir()
    argument_files._remove_orphans()
    assert not orphan.exists() and live.exists()
