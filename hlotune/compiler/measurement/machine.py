"""What a measurement depends on besides the program: the machine and the compiler version.

Runtimes measured here mean nothing on another CPU or another XLA, so every record carries
this fingerprint (and the tuning database keys on it).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from dataclasses import asdict, dataclass
from functools import cache


@dataclass(frozen=True)
class Machine:
    cpu: str
    cores: int
    system: str
    jax: str
    jaxlib: str

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:16]

    def to_dict(self) -> dict:
        return asdict(self) | {"fingerprint": self.fingerprint}


@cache
def this_machine() -> Machine:
    import jax
    import jaxlib

    return Machine(
        cpu=_cpu_model(),
        cores=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        system=f"{platform.system()} {platform.machine()}",
        jax=jax.__version__,
        jaxlib=jaxlib.__version__,
    )


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
