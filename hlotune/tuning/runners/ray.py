"""Measurements on the workers of a Ray cluster.

The Ray runner (`ray` or `ray:ADDRESS`) connects with `ray.init(address=...)` to a cluster
that Ray's own tools started (`ray start --head` on one machine, `ray start --address
HEAD:6379` on the others); `ray:auto` finds the cluster this machine belongs to, plain `ray`
does what `ray.init()` does ($RAY_ADDRESS, else a cluster started here, else a new local
instance). A cluster with token authentication needs
RAY_AUTH_MODE=token and its token (`ray get-auth-token`) on the driver too. The runner puts one
worker on every node with a CPU, reserving all of that node's CPUs so that Ray schedules
nothing beside a measurement (`ray start --head --num-cpus 0` keeps the driver's node out). A
worker measures one batch at a time with the ordinary `measure`, in its own process on its own
machine; a batch of configs is spread over the workers, each part measured beside its own
default replicas as any batch is, and each worker reports its hardware fingerprint with its
result.

A Ray run tunes for the cluster's workers: they must share one hardware fingerprint (the same
CPU, core count, system and jax), or the runner refuses to start. `export:` programs travel
to the workers with the batch; `file.py:FACTORY` programs must exist at the same path on every
worker (a shared filesystem), and hlotune must be installed on every node.
"""

from __future__ import annotations

import logging
import socket
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path

from hlotune.atomic import write_bytes_atomic
from hlotune.compiler.configs.config import CompileConfig
from hlotune.compiler.measurement.machine import Machine, this_machine
from hlotune.compiler.measurement.measure import BatchResult, MeasureSettings, measure
from hlotune.errors import HlotuneError
from hlotune.extras import require
from hlotune.programs import EXPORT_PREFIX

_START_TIMEOUT_S = 120.0  # for every worker to start and report its machine
_CONNECT_TIMEOUT_S = 10.0


class RayRunner:
    """Measures on every CPU node of a Ray cluster, one batch per worker at a time."""

    def __init__(self, address: str | None = None) -> None:
        ray = require("ray", "ray", "the Ray runner")
        self._ray = ray
        self._owns_connection = not ray.is_initialized()
        if self._owns_connection:
            _check_reachable(address)
            try:
                with warnings.catch_warnings():  # Ray forks only to exec: JAX's fork warning is moot
                    warnings.filterwarnings("ignore", "os.fork", RuntimeWarning)
                    ray.init(address=address, include_dashboard=False, log_to_driver=False,
                             logging_level=logging.ERROR)
            except (ConnectionError, ValueError, RuntimeError) as error:
                raise HlotuneError(f"cannot connect to Ray at {address or 'a new local instance'}: "
                                   f"{_first_line(error)} (a cluster with token authentication "
                                   "needs RAY_AUTH_MODE=token and its token here)") from None
        self._workers: list = []
        self._payloads: dict[str, object] = {}
        try:
            self._workers = self._start_workers()
            self.machine = cluster_machine(self._get([w.machine.remote() for w in self._workers],
                                                     _START_TIMEOUT_S))
        except BaseException:
            self.close()
            raise

    def _start_workers(self) -> list:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        nodes = [n for n in self._ray.nodes() if n["Alive"] and n["Resources"].get("CPU", 0) >= 1]
        if not nodes:
            raise HlotuneError("the Ray cluster has no node with a CPU to measure on")
        remote = self._ray.remote(_Worker)
        return [
            remote.options(
                num_cpus=node["Resources"]["CPU"],
                scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False),
            ).remote()
            for node in nodes
        ]

    def measure(
        self, program: str, configs: Sequence[CompileConfig], settings: MeasureSettings
    ) -> list[BatchResult]:
        payload = self._payload(program)
        parts = _split(list(configs), len(self._workers))
        replies = self._get([
            worker.measure.remote(program, payload, part, settings)
            for worker, part in zip(self._workers, parts)
        ])
        for machine, _ in replies:
            if machine.fingerprint != self.machine.fingerprint:
                raise HlotuneError(f"a Ray worker now reports hardware {machine.fingerprint}, not the "
                                   f"cluster's {self.machine.fingerprint}: the cluster changed")
        return [result for _, result in replies]

    def _payload(self, program: str):
        """An exported program's file in Ray's object store (put once), or None."""
        if not program.startswith(EXPORT_PREFIX):
            return None
        if program not in self._payloads:
            path = Path(program.removeprefix(EXPORT_PREFIX))
            try:
                self._payloads[program] = self._ray.put(path.read_bytes())
            except OSError as error:
                raise HlotuneError(f"{path}: cannot read ({error.strerror})") from None
        return self._payloads[program]

    def _get(self, refs: list, timeout_s: float | None = None) -> list:
        """ray.get, with a worker's failure as a one-line HlotuneError."""
        exceptions = self._ray.exceptions
        try:
            return self._ray.get(refs, timeout=timeout_s)
        except exceptions.RayTaskError as error:
            cause = error.cause
            if isinstance(cause, HlotuneError):
                raise HlotuneError(f"on a Ray worker: {cause}") from None
            raise HlotuneError(f"on a Ray worker: {type(cause).__name__}: {_first_line(cause)}") from None
        except exceptions.RayActorError as error:
            raise HlotuneError(f"a Ray worker died (is hlotune installed on every node?): "
                               f"{_first_line(error)}") from None
        except exceptions.GetTimeoutError:
            raise HlotuneError(f"the Ray workers did not start within {timeout_s:g} s (does every "
                               "node have its CPUs free?)") from None

    def close(self) -> None:
        for worker in self._workers:
            self._ray.kill(worker)
        if self._owns_connection:
            self._ray.shutdown()


class _Worker:
    """A Ray actor on one node: it runs one call at a time, so one batch at a time."""

    def machine(self) -> Machine:
        return this_machine()

    def measure(
        self, program: str, payload: bytes | None, configs: list[CompileConfig], settings: MeasureSettings
    ) -> tuple[Machine, BatchResult]:
        if payload is not None:  # an exported program, copied here under its content-hash name
            name = Path(program.removeprefix(EXPORT_PREFIX)).name
            path = Path(tempfile.gettempdir()) / "hlotune-programs" / name
            if not path.is_file():
                write_bytes_atomic(path, payload)
            program = f"{EXPORT_PREFIX}{path}"
        return this_machine(), measure(program, configs, settings)


def cluster_machine(machines: Sequence[Machine]) -> Machine:
    """The one hardware fingerprint the workers share; an error if they differ."""
    distinct = {machine.fingerprint: machine for machine in machines}
    if len(distinct) != 1:
        described = "; ".join(f"{m.fingerprint} ({m.cpu}, {m.cores} cores, jax {m.jax})"
                              for m in distinct.values())
        raise HlotuneError(f"the Ray workers differ in hardware ({described}): a tune needs one "
                           "kind of machine, so start a cluster of identical nodes")
    return next(iter(distinct.values()))


def _check_reachable(address: str | None) -> None:
    """A HOST:PORT nobody answers at is an error now (ray.init would retry for minutes)."""
    host, _, port = (address or "").rpartition(":")
    if not host or "/" in host or not port.isdigit():
        return  # none, auto or ray://...: Ray's to resolve
    try:
        socket.create_connection((host, int(port)), timeout=_CONNECT_TIMEOUT_S).close()
    except OSError as error:
        raise HlotuneError(f"no Ray cluster answers at {address} ({error.strerror or error}): "
                           "start one with `ray start --head`") from None


def _split(configs: list[CompileConfig], parts: int) -> list[list[CompileConfig]]:
    """Up to `parts` contiguous, near-equal, non-empty parts (one empty part for no configs)."""
    count = min(parts, len(configs)) or 1
    size, extra = divmod(len(configs), count)
    bounds = [i * size + min(i, extra) for i in range(count + 1)]
    return [configs[start:stop] for start, stop in zip(bounds, bounds[1:])]


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__
