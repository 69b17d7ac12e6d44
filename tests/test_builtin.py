"""The built-in dataset: addressing, family splits and the measurements it holds."""

from __future__ import annotations

import pytest

from conftest import skip_for_missing_data
from hlotune.collect.builtin import SAMPLES
from hlotune.data.builtin import EDITION, ROOT, SPLITS, TILE_EDITION, resolve
from hlotune.data.dataset import Dataset
from hlotune.errors import HlotuneError


@pytest.mark.parametrize("spec", ["builtin:tiles", "builtin:flags/training", "builtin:"])
def test_unknown_builtin_names_are_clean_errors(spec):
    with pytest.raises(HlotuneError, match="unknown built-in dataset"):
        resolve(spec)


def test_the_dataset_is_planned_to_its_spec():
    """At least 150 programs of 30 families, split by family, with at least six held-out test
    families, three of them from the corpus; collected breadth first."""
    programs = {split: EDITION.programs(split) for split in EDITION.splits}
    families = [family for split in EDITION.splits.values() for family in split]
    assert len(families) == len(set(families)) >= 30
    assert len(set(f.partition(":")[2] for f in families)) == len(families)  # as files name them
    assert sum(map(len, programs.values())) >= 150
    assert len(EDITION.splits["test"]) >= 6 and sum(f.startswith("corpus:") for f in EDITION.splits["test"]) >= 3
    order = EDITION.order()
    assert sorted(order) == sorted((split, p) for split, ps in programs.items() for p in ps)
    assert {p.partition("@")[0] for _, p in order[: len(families)]} == set(families)


def test_the_quickest_families_come_first_within_each_round_and_split():
    slowest = EDITION.splits["test"][0]
    order, plain = EDITION.order({slowest: 900.0, EDITION.splits["test"][1]: 60.0}), EDITION.order()
    assert sorted(order) == sorted(plain) and [s for s, _ in order] == [s for s, _ in plain]
    test_round = [p.partition("@")[0] for s, p in order[: len(EDITION.splits["test"])]]
    assert test_round[-2:] == [EDITION.splits["test"][1], slowest] and set(test_round) == set(EDITION.splits["test"])


def test_a_slow_family_waits_with_its_later_variants_until_the_quick_ones_are_all_in():
    slow = EDITION.splits["train"][0]
    quick = {family: 100.0 for split in EDITION.splits.values() for family in split}
    order = [program for _, program in EDITION.order(quick | {slow: 1000.0})]
    first, *later = [f"{slow}@{variant}" for variant in EDITION.variants_of(slow)]
    assert order.index(first) < sum(map(len, EDITION.splits.values()))  # still in the first round
    assert order[-len(later):] == later


def test_the_tile_collection_goes_on_past_the_editions_programs_with_its_own_variants():
    from hlotune.programs.corpus import CORPUS
    from hlotune.programs.variants import resolve_workload
    from hlotune.programs.zoo import WORKLOADS

    edition, order = EDITION.order(), TILE_EDITION.order()
    assert order[: len(edition)] == edition and len(order) > len(edition)
    assert TILE_EDITION.splits == EDITION.splits  # the same families in the same splits
    for _, spec in order[len(edition):]:  # every added variant names a program that exists
        prefix = spec.partition(":")[0] + ":"
        assert resolve_workload(spec, prefix, WORKLOADS if prefix == "zoo:" else CORPUS, "program").name == spec


@pytest.mark.parametrize("split", list(SPLITS))
@pytest.mark.parametrize("collection", ["flags", "layout"])
def test_collected_files_are_valid_and_split_by_family(collection, split):
    if not (ROOT / collection / split).is_dir():
        skip_for_missing_data(f"builtin:{collection}/{split} is not collected in this checkout")
    dataset = Dataset(f"builtin:{collection}/{split}")
    assert dataset.collection == collection and len(dataset) > 0
    for sample in dataset:
        assert sample.name.split("@")[0] in SPLITS[split]
        assert sample.num_configs >= EDITION.configs + 1 and sample.labelled
        assert sample.configs.config_runtime_samples.shape[1] >= SAMPLES
        assert (sample.configs.config_runtime > 0).all()
