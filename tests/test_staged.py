"""The "all" space's staged search: flags and layouts, then the kernels of the best config so
far (tile, then fusion), each stage built around that config and given its share."""

from __future__ import annotations

import pytest

from hlotune.compiler.configs.config import DEFAULT_CONFIG, CompileConfig
from hlotune.compiler.configs.flags import FlagConfig
from hlotune.compiler.configs.kernel_config import KernelConfig
from hlotune.compiler.xla.kernels import Kernel
from hlotune.compiler.spaces.space import SearchSpace
from hlotune.errors import HlotuneError
from hlotune.tuning.strategies.base import Trial
from hlotune.tuning.strategies.exhaustive import Exhaustive
from hlotune.tuning.strategies.staged import Stage, Staged

FAST = CompileConfig(flags=FlagConfig((("xla_cpu_use_xnnpack", False),)))


def _configs(tag: str, count: int) -> list[CompileConfig]:
    return [CompileConfig(kernels=KernelConfig(((f"{tag}{i}#k", (i + 1,)),))) for i in range(count)]


def _kernel(name: str) -> Kernel:
    return Kernel(name, f"{name}#{name}", name, "kLoop", "c", "f32[8]", {})


def test_each_stage_asks_its_share_then_the_next_is_built_around_the_best_so_far():
    built = []

    def second(base):
        built.append(base)
        return Exhaustive(_configs("b", 10))

    staged = Staged([Stage("first", 3, None, lambda base: Exhaustive([FAST, *_configs("a", 10)])),
                     Stage("second", 2, None, second)])
    assert staged.name == "first+second" and staged.stage == "first"
    asked = staged.ask(8)
    assert asked == [FAST, *_configs("a", 2)] and not built  # the first stage's share: 3
    staged.tell([Trial(DEFAULT_CONFIG, 1.0), Trial(asked[0], 0.8), Trial(asked[1], float("inf")),
                 Trial(asked[2], 0.9)])
    assert staged.ask(8) == _configs("b", 2) and built == [FAST]  # around the fastest healthy one
    assert staged.stage == "second" and staged.bases == [DEFAULT_CONFIG, FAST]
    assert staged.ask(8) == [] and staged.stage is None


def test_what_a_stage_leaves_passes_on_and_a_stage_with_nothing_to_tune_is_skipped():
    staged = Staged([Stage("first", 4, None, lambda base: Exhaustive(_configs("a", 1))),
                     Stage("empty", 4, None, lambda base: None),
                     Stage("last", 2, None, lambda base: Exhaustive(_configs("c", 10)))])
    assert staged.ask(8) == _configs("a", 1)
    assert staged.ask(8) == _configs("c", 8)  # 1 of 10 asked: 9 left for the last stage
    assert staged.ask(8) == _configs("c", 9)[8:] and staged.ask(8) == []
    assert staged.bases == [DEFAULT_CONFIG, DEFAULT_CONFIG]


class _Recording(Exhaustive):
    def __init__(self, configs):
        super().__init__(configs)
        self.asked_for = []

    def ask(self, n):
        self.asked_for.append(n)
        return super().ask(n)


def test_a_stage_is_asked_for_a_whole_number_of_configs():
    first, second = _Recording(_configs("a", 10)), _Recording(_configs("b", 10))
    staged = Staged([Stage("first", 5, None, lambda base: first), Stage("second", 3, None, lambda base: second)])
    while staged.ask(4):
        pass
    assert first.asked_for and second.asked_for
    assert all(type(n) is int for n in first.asked_for + second.asked_for)  # range() and slices need them


def test_a_stage_in_seconds_ends_on_the_clock():
    now = [0.0]
    staged = Staged([Stage("first", None, 10.0, lambda base: Exhaustive(_configs("a", 10))),
                     Stage("second", None, 5.0, lambda base: Exhaustive(_configs("b", 10)))],
                    clock=lambda: now[0])
    assert staged.ask(2) == _configs("a", 2)
    now[0] = 10.0
    assert staged.ask(2) == _configs("b", 2)
    now[0] = 15.0
    assert staged.ask(2) == []


def test_a_staged_search_needs_a_stage():
    with pytest.raises(HlotuneError, match="at least one stage"):
        Staged([])


def test_a_kernel_space_on_a_base_keeps_its_flags_and_adds_kernels():
    base = CompileConfig(flags=FAST.flags, kernels=KernelConfig(((_kernel("a").key, (2,)),)))
    space = SearchSpace("fusion", fusion={_kernel("b").key: ("merge",)}, base=base)
    config = space.config({f"fusion:{_kernel('b').key}": "merge"})
    assert config.flags == FAST.flags and dict(config.kernels.partitions) == {_kernel("a").key: (2,)}
    assert dict(config.kernels.fusion) == {_kernel("b").key: "merge"}
    assert space.genome(config) == {f"fusion:{_kernel('b').key}": "merge"}  # the base is no gene
    assert space.levels(1) == [[config]]
    with pytest.raises(HlotuneError, match="keeps its base's flags"):
        space.genome(DEFAULT_CONFIG)
    with pytest.raises(HlotuneError, match="stand on a base config"):
        SearchSpace("flags", base=base)


def test_tuning_all_tunes_the_kernels_of_the_best_flags_and_a_rerun_measures_nothing(tmp_path):
    from hlotune.compiler.measurement.measure import MeasureSettings
    from hlotune.tuning.storage import TuningDatabase
    from hlotune.tuning.tuner import tune

    arguments = dict(space="all", budget=16, batch=6, db=tmp_path / "db.sqlite", progress=False,
                     settings=MeasureSettings(rounds=2, repeats=2, default_replicas=1))
    result = tune("zoo:mlp@tiny", **arguments)
    # a stage that runs dry (the kernels of the best flags offer fewer choices) leaves configs
    assert result.strategy == "evolutionary+tile+fusion" and 0 < result.measurements <= 16
    with TuningDatabase(tmp_path / "db.sqlite") as db:
        records = db.records(result.fingerprint)
    tiles = [r for r in records if r.config.kernels.partitions and not r.config.kernels.fusion]
    fusions = [r for r in records if r.config.kernels.fusion]
    if tiles:
        assert fusions  # both kernel stages measured configs
        # each kernel stage stood on one config of the search before it: every config of theirs
        # keeps its flags and layouts, and the tile stage's were profiled (kernel by kernel).
        # Costs are against the batch's default by kernel name: none in common where the best
        # flags renamed every kernel the default has (which flags win depends on the noise)
        assert len({(r.config.flags, r.config.layout) for r in tiles}) == 1
        assert all(r.kernel_costs is not None for r in tiles if r.ok), [(r.status, r.reason, r.kernel_costs) for r in tiles]
        flags = {(r.config.flags, r.config.layout) for r in records if r.config.kernels.is_default}
        assert {(r.config.flags, r.config.layout) for r in fusions} <= flags
    else:  # both kernel stages ran dry: the flags that won (by the noise) leave XLA no kernel
        assert not fusions and not _kernels_of_the_best_flags(records)
    again = tune("zoo:mlp@tiny", **arguments)
    assert again.measurements == 0 and again.best_config == result.best_config


def _kernels_of_the_best_flags(records) -> list[Kernel]:
    """The tunable kernels XLA makes under the cheapest flags-and-layouts config measured, the
    one the kernel stages stood on. Some win and leave none: the fusion pass disabled with the
    legacy fusion emitters, say."""
    from hlotune.compiler.spaces.kernel_space import program_module
    from hlotune.compiler.xla.kernels import kernels_of
    from hlotune.compiler.configs.layouts import LayoutSpace
    from hlotune.compiler.spaces.space import tunable_kernels
    from hlotune.programs import load_program

    best = min((r for r in records if r.config.kernels.is_default), key=lambda r: r.cost)
    return tunable_kernels(kernels_of(program_module(LayoutSpace(load_program("zoo:mlp@tiny")), best.config)))


def test_without_kernel_stages_all_searches_flags_and_layouts_alone(tmp_path):
    from hlotune.compiler.measurement.measure import MeasureSettings
    from hlotune.tuning.storage import TuningDatabase
    from hlotune.tuning.tuner import tune

    result = tune("zoo:mlp@tiny", space="all", budget=8, batch=4, kernel_stages=False, progress=False,
                  db=tmp_path / "db.sqlite", settings=MeasureSettings(rounds=2, repeats=2, default_replicas=1))
    assert result.strategy == "evolutionary"
    with TuningDatabase(tmp_path / "db.sqlite") as db:
        assert all(r.config.kernels.is_default for r in db.records(result.fingerprint))
