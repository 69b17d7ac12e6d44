"""Runners: measurements on a Ray worker, and records keyed by the measuring machine."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import pytest

from conftest import need
from hlotune.compiler.configs.config import DEFAULT_CONFIG
from hlotune.compiler.measurement.machine import this_machine
from hlotune.compiler.measurement.measure import MeasureSettings
from hlotune.errors import HlotuneError
from hlotune.tuning.runners.local import LocalRunner
from hlotune.tuning.runners.ray import _split, cluster_machine
from hlotune.tuning.runners.registry import make_runner, open_runner
from hlotune.tuning.storage import TuningDatabase
from hlotune.tuning.tuner import tune

pytestmark = pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")  # Ray forks to exec
CHEAP = dict(strategy="random", settings=MeasureSettings(rounds=2, repeats=1, default_replicas=1), progress=False)


@pytest.fixture(scope="module")
def local_ray():
    ray = need("ray", install="pip install 'hlotune[ray]'")
    ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False)  # never a cluster
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def ray_runner(local_ray):
    """The runner `ray` names, its worker started once for the module's tunes."""
    with open_runner("ray") as runner:
        yield runner


def test_a_tune_through_ray_workers_stores_their_measurements(ray_runner, tmp_path):
    path = tmp_path / "t.sqlite"
    result = tune("zoo:mlp@tiny", budget=3, batch=2, db=path, runner=ray_runner, **CHEAP)
    assert result.measurements == 3
    with TuningDatabase(path) as db:  # the worker is this machine: its fingerprint is ours
        records = db.records(result.fingerprint)
        assert len(records) == 3 and all(r.ok for r in records)
        assert db.best(result.fingerprint).chosen == result.best_config


def test_a_fleet_tune_measures_on_ray_workers_and_writes_the_shared_database(ray_runner, tmp_path):
    import jax

    import hlotune
    from hlotune.fleet.allocation import by_time
    from hlotune.fleet.tune import fleet_tune
    from hlotune.fleet.recorder import recorder_for

    location = str(tmp_path / "fleet.sqlite")
    recorded = hlotune.jit(lambda x, y: jnp.tanh(x @ y) @ y, db=location)
    for _ in range(3):
        jax.block_until_ready(recorded(jnp.ones((32, 32)), jnp.ones((32, 32))))
    recorder_for(location).flush()
    result = fleet_tune(location, allocate=by_time, budget=2, hours=None, runner=ray_runner, show=False)
    (outcome,) = result.outcomes
    assert outcome.measured == 2  # the recorded program's export: file travelled to the worker
    with TuningDatabase(location) as db:
        assert len(db.records(outcome.recording.fingerprint)) == 2 and db.best(outcome.recording.fingerprint) is not None


def test_records_go_under_the_measuring_machine(tmp_path):
    here = this_machine()
    worker = dataclasses.replace(here, cpu="A Worker CPU")
    elsewhere = LocalRunner()
    elsewhere.machine = worker  # as a Ray runner whose workers are another kind of machine

    path = tmp_path / "t.sqlite"
    result = tune("zoo:mlp@tiny", budget=2, db=path, runner=elsewhere, **CHEAP)
    with TuningDatabase(path, machine=worker) as db:
        assert len(db.records(result.fingerprint)) == 2
    with TuningDatabase(path) as db:
        assert db.records(result.fingerprint) == []
        assert db.lookup(result.fingerprint, DEFAULT_CONFIG.key) is None


def test_workers_of_different_hardware_and_unknown_runners_are_refused():
    here = this_machine()
    assert cluster_machine([here, here]) == here
    with pytest.raises(HlotuneError, match="differ in hardware"):
        cluster_machine([here, dataclasses.replace(here, cores=here.cores + 1)])
    with pytest.raises(HlotuneError, match="unknown runner"):
        make_runner("slurm")


def test_a_batch_is_spread_evenly_over_the_workers():
    assert _split(list(range(5)), 2) == [[0, 1, 2], [3, 4]]
    assert _split(list(range(2)), 4) == [[0], [1]]
    assert _split([], 3) == [[]]
