"""Data-parallel training: `torchrun --nproc_per_node=K -m hlotune.train ...` runs K trainers.

Every process builds the same model and walks the same shuffled graph order; at each step rank r
takes its own share of the step's graphs, and PyTorch DDP all-reduces (averages) the gradients,
so a step of K processes with one graph each equals one process with `graphs_per_step=K` (the
test checks the weights agree). Rank 0 alone validates and writes the model and checkpoints,
then sends the trainer state to the others. Backend: nccl on GPUs, gloo on CPU.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TypeVar

import torch
from torch import distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

T = TypeVar("T")


@dataclass(frozen=True)
class Group:
    """This process's place among the trainers; world 1 is a plain single process."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def active(self) -> bool:
        return self.world > 1


def join() -> Group:
    """The process group torchrun describes in the environment, or a single process."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return Group()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if not dist.is_initialized():
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
    return Group(dist.get_rank(), dist.get_world_size(), local_rank)


def finish(group: Group) -> None:
    """Wait for every process at the end of a run: a process that destroys its gloo group while
    a peer still talks to it can abort the peer ("terminate called without an active
    exception"). Not on the error path, where the peer may never arrive."""
    if group.active:
        dist.barrier()


def leave(group: Group) -> None:
    if group.active and dist.is_initialized():
        dist.destroy_process_group()


def device(group: Group) -> torch.device:
    return torch.device(f"cuda:{group.local_rank}" if torch.cuda.is_available() else "cpu")


def wrap(module: nn.Module, group: Group, *, unused: bool = False) -> nn.Module:
    """DDP around `module` in a group. `unused`: some steps leave parameters without a grad
    (under GST, sampled segments without configurable nodes skip the config encoder)."""
    if not group.active:
        return module
    return DistributedDataParallel(module, find_unused_parameters=unused)


def mean(value: float, group: Group) -> float:
    """The mean of `value` over the group's processes."""
    if not group.active:
        return value
    tensor = torch.tensor([value], dtype=torch.float64, device=device(group))
    dist.all_reduce(tensor)
    return float(tensor.item()) / group.world


def from_main(value: T, group: Group) -> T:
    """Rank 0's `value` on every process (any picklable object)."""
    if not group.active:
        return value
    holder = [value]
    dist.broadcast_object_list(holder, src=0)
    return holder[0]
