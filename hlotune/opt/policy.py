"""GO's policy network (Zhou et al., NeurIPS 2020): one network, three heads.

    node embeddings   opcode embedding + node features (the env's, and topological position)
    local structure   GraphSAGE over both edge directions (hlotune.models.sage)
    long range        attention along the topological order, segment by segment (attention.py)
    graph adaptation  FiLM: a graph embedding scales and shifts every layer's features
    heads             placement (a device per group of ops), scheduling (a priority per op),
                      fusion (a bit per op), plus a value estimate of the graph for PPO

Attention over every pair of ops would cost O(n^2); instead the topological order is cut into
segments. PolicySettings.architecture chooses how segments share information: "summary" (ops
attend to their own segment, and segment summaries to each other: O(n * segment +
(n / segment)^2)), or "recurrent", GO's in full: Transformer-XL-style recurrence (a segment
attends to itself, to the previous segment's states and to GRU memories carried forward and
backward over all segments), with one more such layer per task before its head, as GO's
multi-task network has. Order reaches attention through the segmentation and the depth and
position features.

Placement is decided per group of ops, as in HDP (Mirhoseini et al. 2018): the graph is cut by
METIS into up to PLACEMENT_GROUPS groups of balanced cost and few bytes cut, and each group's
mean embedding picks its device. Ops decided one by one scatter a graph over the devices (a
tensor crossing links at nearly every edge), and PPO spends its iterations undoing that; on
groups it starts from placements that already run (nearly) as fast as METIS's and learns which
groups to put together. The placement head scores each group against a device embedding (a
learned embedding of the device index plus its speed and memory relative to the machine's mean),
so the number of devices N is an input: one policy serves any N up to `max_devices`. All heads
share the trunk; a call enables those of its tasks, the others produce nothing (the simulator's
defaults apply to them).

Every op (a group, for placement) decides independently given the embeddings (GO's one-shot
full assignment), so a distribution is a product over ops and its log-probability is kept per op
(PPO clips per op; the ops of a group share their group's placement log-probability).
Checkpoints are a folder of config.json (the PolicySettings and training metadata) and
policy.safetensors: no pickle, so loading one runs no code.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn
from torch.nn import functional as F

from hlotune.errors import HlotuneError
from hlotune.hlo.opcodes import NUM_OPCODES
from hlotune.atomic import write_bytes_atomic
from hlotune.models.files import CONFIG_FILE, load_tensors, read_document, save_tensors
from hlotune.models.sage import BidirectionalSAGEConv
from hlotune.opt.attention import RecurrentAttention, SegmentAttention
from hlotune.opt.baselines import metis_groups
from hlotune.opt.costs import OpGraph
from hlotune.opt.device import DeviceModel
from hlotune.opt.env import NODE_FEATURES, observation

TASKS = ("place", "schedule", "fuse")
# The env's node features and the op's place in the topological order, in [0, 1]: where an op
# sits in the program is what a layer-wise split (the human baseline) places by.
INPUT_FEATURES = (*NODE_FEATURES, "topological_position")
DEVICE_FEATURES = ("log_relative_flops", "log_relative_mem_bandwidth", "log_relative_memory")

WEIGHTS_FILE = "policy.safetensors"
FORMAT = "hlotune-go-policy"
VERSION = 2  # 2: placement per METIS group of ops
# Placement groups per graph (METIS parts, at least 8 ops each): 32 to 64 groups place about as
# well as HDP's 16 when sampled at random on the GO graphs, and leave the policy room to learn.
PLACEMENT_GROUPS = 64

# The priority head's log standard deviation is kept in this range: the entropy bonus would
# otherwise widen it without bound, and a vanishing one stops exploration of orders.
_LOG_STD_RANGE = (-5.0, 2.0)


def task_set(names) -> tuple[str, ...]:
    """Task names (an iterable, or text like "place+fuse") in canonical order, checked."""
    if isinstance(names, str):
        names = names.split("+")
    chosen = set(names)
    unknown = sorted(chosen - set(TASKS))
    if unknown or not chosen:
        raise HlotuneError(f"tasks must be some of {'+'.join(TASKS)}, got {'+'.join(names)!r}")
    return tuple(task for task in TASKS if task in chosen)


def trained_tasks(training: dict) -> set[str]:
    """The tasks a policy folder's training record says it learnt (its task sets, split)."""
    return {task for tasks in training.get("tasks", []) for task in tasks.split("+")}


ARCHITECTURES = ("summary", "recurrent")


@dataclass(frozen=True)
class PolicySettings:
    hidden: int = 64
    sage_layers: int = 3
    segment: int = 64  # ops per attention segment
    heads: int = 4
    max_devices: int = 16  # rows of the device-index embedding
    # "summary": one attention over the order, within segments and across segment summaries,
    # shared by the heads. "recurrent": GO's in full, Transformer-XL-style segment recurrence
    # (RecurrentAttention) in the trunk and one more such layer per task before its head.
    architecture: str = "summary"

    def __post_init__(self) -> None:
        values = asdict(self)
        sizes = {k: v for k, v in values.items() if k != "architecture"}
        if not all(type(v) is int and v > 0 for v in sizes.values()):
            raise HlotuneError(f"policy settings must be positive integers, got {sizes}")
        if self.architecture not in ARCHITECTURES:
            raise HlotuneError(f"policy architecture must be one of {', '.join(ARCHITECTURES)}, "
                               f"got {self.architecture!r}")
        if self.hidden % self.heads:
            raise HlotuneError(f"hidden ({self.hidden}) must be a multiple of heads ({self.heads})")


@dataclass(frozen=True)
class GraphTensors:
    """What the policy reads of an OpGraph, as tensors (built once per graph)."""

    features: Tensor  # (n, len(INPUT_FEATURES)) float32
    opcode: Tensor  # (n,) int64
    edge_index: Tensor  # (2, E) [consumer, producer], as BidirectionalSAGEConv reads edges
    order: Tensor  # (n,) a topological order
    group: Tensor  # (n,) int64: each op's placement group

    @property
    def num_groups(self) -> int:
        return int(self.group.max()) + 1 if len(self.group) else 0

    @classmethod
    def of(cls, graph: OpGraph) -> GraphTensors:
        obs = observation(graph)
        position = np.empty(graph.num_ops, dtype=np.float32)
        position[graph.order] = np.arange(graph.num_ops) / max(graph.num_ops - 1, 1)
        features = np.concatenate([obs["node_features"], position[:, None]], axis=1)
        return cls(
            features=torch.from_numpy(features),
            opcode=torch.from_numpy(obs["opcode"]),
            edge_index=torch.from_numpy(np.stack([graph.edge_dst, graph.edge_src])),
            order=torch.from_numpy(graph.order),
            group=torch.from_numpy(metis_groups(graph, DeviceModel.uniform(1), PLACEMENT_GROUPS)),
        )


@dataclass(frozen=True)
class Assignments:
    """K full assignments: one row per assignment, one column per op; None for disabled tasks."""

    placement: Tensor | None  # (K, n) int64 devices
    priority: Tensor | None  # (K, n) float32: unbounded scores, higher runs first
    fuse: Tensor | None  # (K, n) bool

    def __len__(self) -> int:
        present = [t for t in (self.placement, self.priority, self.fuse) if t is not None]
        return len(present[0])

    def arrays(self, k: int) -> dict[str, np.ndarray | None]:
        """The k-th assignment as simulate's keyword arguments."""
        return {
            "placement": None if self.placement is None else self.placement[k].numpy(),
            "priority": None if self.priority is None else self.priority[k].double().numpy(),
            "fuse": None if self.fuse is None else self.fuse[k].numpy(),
        }


class ActionDistribution:
    """The policy's distribution over full assignments: per placement group, a categorical over
    devices; per op, a Gaussian priority and a Bernoulli fuse bit (those of the enabled tasks)."""

    def __init__(self, place_logits: Tensor | None, priority_mean: Tensor | None,
                 priority_log_std: Tensor, fuse_logits: Tensor | None, group: Tensor):
        self.place_logits = place_logits  # (G, N): one row per placement group
        self.group = group  # (n,) each op's group
        self.priority_mean = priority_mean  # (n,)
        self.priority_log_std = priority_log_std.clamp(*_LOG_STD_RANGE)  # ()
        self.fuse_logits = fuse_logits  # (n,)

    def sample(self, k: int, generator: torch.Generator) -> Assignments:
        """K assignments drawn with `generator` (the same generator state, the same draws)."""
        placement = priority = fuse = None
        if self.place_logits is not None:
            probs = self.place_logits.softmax(-1)
            draws = torch.multinomial(probs, k, replacement=True, generator=generator)
            placement = draws.T[:, self.group].contiguous()
        if self.priority_mean is not None:
            noise = torch.randn((k, *self.priority_mean.shape), generator=generator)
            priority = self.priority_mean + self.priority_log_std.exp() * noise
        if self.fuse_logits is not None:
            uniform = torch.rand((k, *self.fuse_logits.shape), generator=generator)
            fuse = uniform < self.fuse_logits.sigmoid()
        return Assignments(placement, priority, fuse)

    def greedy(self) -> Assignments:
        """The single most likely assignment."""
        return Assignments(
            None if self.place_logits is None
            else self.place_logits.argmax(-1)[self.group][None],
            None if self.priority_mean is None else self.priority_mean[None],
            None if self.fuse_logits is None else (self.fuse_logits > 0)[None],
        )

    def log_prob(self, actions: Assignments) -> Tensor:
        """(K, n): each op's log-probability of its part of each assignment."""
        total = 0.0
        if self.place_logits is not None:
            log_probs = self._op_place_log_probs()  # (n, N)
            total = total + log_probs.gather(1, actions.placement.T).T
        if self.priority_mean is not None:
            z = (actions.priority - self.priority_mean) / self.priority_log_std.exp()
            total = total - 0.5 * z**2 - self.priority_log_std - 0.5 * math.log(2 * math.pi)
        if self.fuse_logits is not None:
            logits = self.fuse_logits.expand_as(actions.fuse)
            total = total - F.binary_cross_entropy_with_logits(
                logits, actions.fuse.float(), reduction="none")
        return total

    def entropy(self) -> Tensor:
        """(n,): each op's entropy, summed over the enabled heads."""
        total = 0.0
        if self.place_logits is not None:
            log_probs = self._op_place_log_probs()
            total = total - (log_probs.exp() * log_probs).sum(-1)
        if self.priority_mean is not None:
            gaussian = 0.5 * math.log(2 * math.pi * math.e) + self.priority_log_std
            total = total + gaussian.expand_as(self.priority_mean)
        if self.fuse_logits is not None:
            p = self.fuse_logits.sigmoid()
            total = total + F.binary_cross_entropy_with_logits(
                self.fuse_logits, p, reduction="none")
        return total

    def _op_place_log_probs(self) -> Tensor:
        """(n, N): each op's log-probabilities over devices, its group's."""
        return self.place_logits.log_softmax(-1)[self.group]


@dataclass
class PolicyOutput:
    actions: ActionDistribution
    value: Tensor  # (): the expected reward of a sampled assignment (PPO's baseline)


class GOPolicy(nn.Module):
    """The network; `seed` fixes its initial weights without touching torch's global RNG."""

    def __init__(self, config: PolicySettings = PolicySettings(), seed: int = 0):
        super().__init__()
        self.config = config
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self._build(config)

    def _build(self, config: PolicySettings) -> None:
        d = config.hidden
        self.opcode = nn.Embedding(NUM_OPCODES, d)
        self.node_features = nn.Linear(len(INPUT_FEATURES), d)
        self.graph_summary = nn.Sequential(nn.Linear(2 * d, d), nn.ReLU())
        # Scale and shift for each SAGE layer and the attention; zero-initialised so training
        # starts from the unmodulated network.
        self.film = nn.Linear(d, 2 * d * (config.sage_layers + 1))
        nn.init.zeros_(self.film.weight)
        nn.init.zeros_(self.film.bias)
        self.convs = nn.ModuleList(BidirectionalSAGEConv(d) for _ in range(config.sage_layers))
        recurrent = config.architecture == "recurrent"
        attention = RecurrentAttention if recurrent else SegmentAttention
        self.attention = attention(d, config.heads, config.segment)
        # GO's multi-task network: a recurrent attention layer of its own before each head.
        self.task_attention = nn.ModuleDict(
            {task: RecurrentAttention(d, config.heads, config.segment) for task in TASKS}
            if recurrent else {})
        self.device_index = nn.Embedding(config.max_devices, d)
        self.device_features = nn.Linear(len(DEVICE_FEATURES), d)
        self.place_query = nn.Linear(d, d)
        self.priority = nn.Linear(d, 1)
        self.priority_log_std = nn.Parameter(torch.zeros(()))
        self.fuse = nn.Linear(d, 1)
        self.value = nn.Sequential(nn.Linear(3 * d + len(TASKS), d), nn.ReLU(), nn.Linear(d, 1))

    def forward(self, graph: GraphTensors, devices: DeviceModel, tasks) -> PolicyOutput:
        tasks = task_set(tasks)
        n_devices = devices.num_devices
        if n_devices > self.config.max_devices:
            raise HlotuneError(
                f"this policy places on at most {self.config.max_devices} devices, got {n_devices}")
        x = self.opcode(graph.opcode) + self.node_features(graph.features)
        z = self.graph_summary(_pool(x))
        scale, shift = self.film(z).view(-1, 2, x.shape[1]).unbind(1)
        h = x
        for layer, conv in enumerate(self.convs):
            h = (1 + scale[layer]) * conv(h, graph.edge_index) + shift[layer]
        h = (1 + scale[-1]) * self.attention(h, graph.order) + shift[-1]

        device_inputs = torch.from_numpy(_device_features(devices))
        device = self.device_index.weight[:n_devices] + self.device_features(device_inputs)
        place_logits = priority = fuse = None
        if "place" in tasks:
            groups = _group_mean(self._task_states("place", h, graph), graph)
            place_logits = self.place_query(groups) @ device.T / math.sqrt(h.shape[1])
        if "schedule" in tasks:
            priority = self.priority(self._task_states("schedule", h, graph)).squeeze(-1)
        if "fuse" in tasks:
            fuse = self.fuse(self._task_states("fuse", h, graph)).squeeze(-1)
        task_bits = torch.tensor([float(task in tasks) for task in TASKS])
        value = self.value(torch.cat([_pool(h), device.mean(0), task_bits])).squeeze(-1)
        return PolicyOutput(
            ActionDistribution(place_logits, priority, self.priority_log_std, fuse, graph.group),
            value)

    def _task_states(self, task: str, h: Tensor, graph: GraphTensors) -> Tensor:
        """The trunk's states as `task`'s head reads them (through its own layer, if any)."""
        layer = self.task_attention[task] if task in self.task_attention else None
        return h if layer is None else layer(h, graph.order)

    def save(self, folder: str | Path, training: dict) -> None:
        """Write the checkpoint folder; `training` (JSON) records what it was trained on."""
        folder = Path(folder)
        document = {"format": FORMAT, "version": VERSION, "policy": asdict(self.config),
                    "training": training}
        write_bytes_atomic(folder / WEIGHTS_FILE, save_tensors(self.state_dict()))
        write_bytes_atomic(folder / CONFIG_FILE, (json.dumps(document, indent=2) + "\n").encode())

    @classmethod
    def load(cls, folder: str | Path) -> tuple[GOPolicy, dict]:
        """(the policy, its training metadata) from a checkpoint folder."""
        folder = Path(folder)
        if not folder.is_dir():
            raise HlotuneError(f"{folder}: no such policy folder")
        document = read_document(folder / CONFIG_FILE, FORMAT, VERSION, "GO policy")
        known = {f.name for f in fields(PolicySettings)}
        settings = document.get("policy")
        if not isinstance(settings, dict) or set(settings) - known:
            raise HlotuneError(f"{folder / CONFIG_FILE}: bad policy settings {settings!r}")
        try:
            policy = cls(PolicySettings(**settings))
        except HlotuneError as error:
            raise HlotuneError(f"{folder / CONFIG_FILE}: {error}") from None
        try:
            policy.load_state_dict(load_tensors(folder / WEIGHTS_FILE))
        except RuntimeError as error:  # missing, unexpected or misshapen tensors
            first = str(error).strip().splitlines()[0]
            raise HlotuneError(
                f"{folder / WEIGHTS_FILE}: does not fit the config ({first})") from None
        return policy, document.get("training") or {}


def _pool(x: Tensor) -> Tensor:
    """A graph's summary of node embeddings: their mean and their elementwise max."""
    return torch.cat([x.mean(0), x.max(0).values])


def _group_mean(h: Tensor, graph: GraphTensors) -> Tensor:
    """(G, d): the mean embedding of each placement group's ops."""
    sums = h.new_zeros(graph.num_groups, h.shape[1]).index_add_(0, graph.group, h)
    counts = torch.bincount(graph.group, minlength=graph.num_groups).clamp(min=1)
    return sums / counts[:, None].to(h.dtype)


def _device_features(devices: DeviceModel) -> np.ndarray:
    """(N, 3) float32: each device's speed and memory relative to the machine's mean, in log."""
    columns = [devices.flops, devices.mem_bandwidth, devices.memory]
    return np.stack([np.log(c / c.mean()) for c in columns], axis=1).astype(np.float32)
