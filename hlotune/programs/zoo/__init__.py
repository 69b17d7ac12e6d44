"""Built-in JAX workloads: real architectures at several sizes, inference and training."""

from hlotune.programs.zoo import (
    cnn,
    gnn,
    gpt,
    lstm,
    mlp,
    mobilenet,
    moe,
    resnet,
    transformer,
    unet,
    vae,
    vit,
)
from hlotune.programs.zoo.base import Workload

WORKLOADS: dict[str, Workload] = {
    module.WORKLOAD.name: module.WORKLOAD
    for module in (mlp, cnn, transformer, resnet, mobilenet, unet, vit, gpt, lstm, moe, gnn, vae)
}

__all__ = ["WORKLOADS", "Workload"]
