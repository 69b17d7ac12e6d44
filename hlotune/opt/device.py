"""DeviceModel: the machine the simulator runs an op graph on.

N devices, each with a compute throughput, a memory bandwidth and a memory capacity, joined by
directed links (a bandwidth and a latency per ordered pair). Two kernel-level costs complete it:
the fixed overhead of launching one kernel, and the fused-kernel overhead that makes fusion a
trade-off (see hlotune.opt.simulator).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hlotune.errors import HlotuneError

_PER_DEVICE = ("flops", "mem_bandwidth", "memory")
_PER_LINK = ("link_bandwidth", "link_latency")
_SCALARS = ("launch_overhead_s", "fusion_overhead_s")


@dataclass(frozen=True)
class DeviceModel:
    """A machine of N devices. Arrays are float64; entry [i, j] of a link matrix is the link
    from device i to device j (the diagonal is never used: an op's data on its own device is
    read at memory bandwidth)."""

    flops: np.ndarray  # (N,) flop/s
    mem_bandwidth: np.ndarray  # (N,) byte/s
    memory: np.ndarray  # (N,) bytes
    link_bandwidth: np.ndarray  # (N, N) byte/s
    link_latency: np.ndarray  # (N, N) s
    launch_overhead_s: float = 0.0  # paid by every kernel
    fusion_overhead_s: float = 0.0  # a fused kernel of k ops pays this * (k - 1) ** 2

    def __post_init__(self) -> None:
        for name in _PER_DEVICE + _PER_LINK:
            try:
                value = np.array(getattr(self, name), dtype=np.float64)
            except (TypeError, ValueError):
                raise HlotuneError(f"device model: {name} must be numbers") from None
            value.setflags(write=False)
            object.__setattr__(self, name, value)
        for name in _SCALARS:
            try:
                object.__setattr__(self, name, float(getattr(self, name)))
            except (TypeError, ValueError):
                raise HlotuneError(f"device model: {name} must be a number") from None
        self.validate()

    @property
    def num_devices(self) -> int:
        return len(self.flops)

    def validate(self) -> None:
        """Raise HlotuneError unless every array has its shape and every number its sign."""
        if self.flops.ndim != 1 or len(self.flops) < 1:
            raise HlotuneError("device model: flops must list N >= 1 numbers, one per device")
        n = len(self.flops)
        for name in _PER_DEVICE:
            _check(name, getattr(self, name), (n,), positive=True)
        _check("link_bandwidth", self.link_bandwidth, (n, n), positive=True)
        _check("link_latency", self.link_latency, (n, n), positive=False)
        for name in _SCALARS:
            _check(name, np.array(getattr(self, name)), (), positive=False)

    @classmethod
    def uniform(
        cls,
        n: int,
        *,
        flops: float = 15e12,
        mem_bandwidth: float = 900e9,
        memory: float = 16 * 2**30,
        link_bandwidth: float = 25e9,
        link_latency: float = 5e-6,
        launch_overhead_s: float = 5e-6,
        fusion_overhead_s: float = 1e-7,
    ) -> DeviceModel:
        """N identical devices, all pairs linked alike.

        The defaults are illustrative, of a V100-class GPU (15 TFLOP/s fp32, 900 GB/s HBM, 16 GiB)
        on a 25 GB/s, 5 us interconnect, 5 us per kernel launch; they are not a measured machine.
        """
        if not isinstance(n, (int, np.integer)) or n < 1:
            raise HlotuneError(f"device model: needs at least one device, got {n!r}")
        return cls(
            flops=np.full(n, flops),
            mem_bandwidth=np.full(n, mem_bandwidth),
            memory=np.full(n, memory),
            link_bandwidth=np.full((n, n), link_bandwidth),
            link_latency=np.full((n, n), link_latency),
            launch_overhead_s=launch_overhead_s,
            fusion_overhead_s=fusion_overhead_s,
        )

    def to_dict(self) -> dict:
        arrays = {name: getattr(self, name).tolist() for name in _PER_DEVICE + _PER_LINK}
        return arrays | {name: getattr(self, name) for name in _SCALARS}

    @classmethod
    def from_dict(cls, data: dict) -> DeviceModel:
        if not isinstance(data, dict):
            raise HlotuneError("device model: expected a JSON object")
        missing = [name for name in _PER_DEVICE + _PER_LINK if name not in data]
        unknown = sorted(set(data) - set(_PER_DEVICE + _PER_LINK + _SCALARS))
        if missing or unknown:
            raise HlotuneError(f"device model: missing keys {missing}, unknown keys {unknown}")
        return cls(**data)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> DeviceModel:
        try:
            data = json.loads(Path(path).read_text())
        except FileNotFoundError:
            raise HlotuneError(f"{path}: no such file") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise HlotuneError(f"{path}: not a JSON device model ({error})") from None
        try:
            return cls.from_dict(data)
        except HlotuneError as error:
            raise HlotuneError(f"{path}: {error}") from None


def _check(name: str, value: np.ndarray, shape: tuple[int, ...], *, positive: bool) -> None:
    if value.shape != shape:
        raise HlotuneError(f"device model: {name} has shape {value.shape}, expected {shape}")
    if not np.all(np.isfinite(value)):
        raise HlotuneError(f"device model: {name} must be finite")
    if positive and not np.all(value > 0):
        raise HlotuneError(f"device model: {name} must be positive")
    if not positive and not np.all(value >= 0):
        raise HlotuneError(f"device model: {name} must not be negative")
