"""Built-in JAX workloads: real architectures at several sizes, inference and training."""

from hlotune.zoo import cnn, mlp, transformer
from hlotune.zoo.base import Workload

WORKLOADS: dict[str, Workload] = {w.name: w for w in (mlp.WORKLOAD, cnn.WORKLOAD, transformer.WORKLOAD)}

__all__ = ["WORKLOADS", "Workload"]
