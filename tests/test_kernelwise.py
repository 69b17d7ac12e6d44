"""The tile space's search, XTAT's: each kernel's candidates ranked by a tile model or in a random
order, the favourites of every kernel measured together, each kernel's fastest kept."""

from __future__ import annotations

import pytest

from hlotune.compiler.xla.kernels import Kernel
from hlotune.compiler.measurement.measure import MeasureSettings
from hlotune.compiler.spaces.space import PARTITION_CHOICES, UNTUNABLE_KINDS, SearchSpace
from hlotune.errors import HlotuneError
from hlotune.tuning.strategies.base import Trial
from hlotune.tuning.strategies.kernelwise import KERNEL_NOISE, KernelCandidates, Kernelwise, rank_candidates

pytestmark = pytest.mark.usefixtures("one_thread")


def _kernel(name: str) -> Kernel:
    return Kernel(name, f"{name}#{name}", name, "kLoop", "c", "f32[8]", {})


def _strategy(per_kernel: int) -> tuple[Kernelwise, list[Kernel]]:
    kernels = [_kernel("a"), _kernel("b")]
    space = SearchSpace("tile", kernels=kernels)
    ranked = [KernelCandidates(kernels[0], ((4,), (1,), (2,))), KernelCandidates(kernels[1], ((16,), (2,), (8,)))]
    return Kernelwise(space, ranked, per_kernel), kernels


def test_each_round_gives_every_kernel_its_next_favourite_then_the_fastest_of_each():
    search, (a, b) = _strategy(per_kernel=2)
    rounds = search.ask(8)
    assert [dict(c.kernels.partitions) for c in rounds] == [{a.key: (4,), b.key: (16,)}, {a.key: (1,), b.key: (2,)}]
    # a is faster on its second candidate, b on neither beyond the kernel noise
    search.tell([Trial(rounds[0], 1.0, {"a": 0.95, "b": 1.0 - KERNEL_NOISE / 2}),
                 Trial(rounds[1], 1.0, {"a": 0.5, "b": 1.3})])
    (combined,) = search.ask(8)
    assert dict(combined.kernels.partitions) == {a.key: (1,)}
    assert search.ask(8) == []


def test_a_failed_config_teaches_nothing_about_its_kernels():
    search, _ = _strategy(per_kernel=1)
    (only,) = search.ask(8)
    search.tell([Trial(only, float("inf"), {"a": 0.1, "b": 0.1})])
    assert search.ask(8) == []  # nothing beat XLA's choice: the combination is the default


def test_without_a_model_each_kernel_takes_a_random_order_of_the_seed():
    kernels = [_kernel(name) for name in "abcdefgh"] + [Kernel("x", "x#x", "x", UNTUNABLE_KINDS[0], "c", "f32[8]", {})]
    orders = {seed: [c.ranked for c in rank_candidates("", kernels, None, seed)] for seed in (0, 1)}
    assert len(orders[0]) == 8  # the library kernel is not tunable
    assert all(sorted(order) == sorted(PARTITION_CHOICES) for order in orders[0] + orders[1])
    assert len(set(orders[0])) > 1 and orders[0] != orders[1]  # by kernel and by seed
    assert [c.ranked for c in rank_candidates("", kernels, None, 0)] == orders[0]  # repeatable


def test_per_kernel_must_be_positive():
    with pytest.raises(HlotuneError, match="per_kernel"):
        _strategy(per_kernel=0)


def test_a_tile_tune_measures_each_kernels_favourites_and_keeps_their_times(tmp_path):
    from hlotune.compiler.spaces.kernel_space import program_kernels
    from hlotune.compiler.configs.layouts import LayoutSpace
    from hlotune.programs import load_program
    from hlotune.tuning.fingerprint import program_fingerprint
    from hlotune.tuning.storage import TuningDatabase
    from hlotune.tuning.tuner import tune

    program = load_program("zoo:mlp@tiny")
    result = tune("zoo:mlp@tiny", space="tile", budget=8, per_kernel=2, db=tmp_path / "db.sqlite",
                  progress=False, settings=MeasureSettings(rounds=2, default_replicas=1))
    kernels = [k for k in program_kernels(LayoutSpace(program)) if k.kind not in UNTUNABLE_KINDS]
    assert result.to_json()["space"] == "tile" and result.strategy == "kernelwise"
    with TuningDatabase(tmp_path / "db.sqlite") as db:
        records = [r for r in db.records(program_fingerprint(program)) if r.config.kernels.partitions]
    first, second = (dict(r.config.kernels.partitions) for r in records[:2])
    assert set(first) == set(second) == {k.key for k in kernels}  # every kernel, every round
    assert all(first[k] != second[k] and first[k] in PARTITION_CHOICES for k in first)
    assert all(r.kernel_costs and {k.name for k in kernels} <= set(r.kernel_costs) for r in records[:2])
    assert set(result.candidate.kernels.to_dict()) <= {k.key for k in kernels}
