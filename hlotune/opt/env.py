"""GraphOptEnv: GO's graph optimisation task as a gymnasium environment.

One episode is one full assignment, as in GO: reset() shows the graph, step(action) simulates
the action for every op at once and ends the episode. The three tasks (placement, scheduling,
fusion) are enabled alone or together; a disabled one keeps the simulator's default (all ops on
device 0, topological order, no fusion). Everything runs in-process on hlotune.opt.simulator.

Reward: -log(step time / baseline step time), less OOM_PENALTY when a device runs out of memory.
The baseline is the default assignment unless the caller names another step time.
"""

from __future__ import annotations

import numpy as np

from hlotune.errors import HlotuneError
from hlotune.extras import require
from hlotune.hlo.opcodes import NUM_OPCODES
from hlotune.opt.costs import OpGraph
from hlotune.opt.device import DeviceModel
from hlotune.opt.simulator import reward, simulate

gym = require("gymnasium", "opt", "GO (hlotune.opt)")
spaces = gym.spaces

# Columns of the observation's node_features, each scaled to [0, 1] over the graph.
NODE_FEATURES = ("log_flops", "log_bytes", "depth")


class GraphOptEnv(gym.Env):
    """Observation: {"node_features" (n, 3) float32, "opcode" (n,) TpuGraphs ids, "edge_index"
    (E, 2) [producer, consumer]}. Action: a dict of the enabled tasks' arrays, one entry per op:
    "placement" (a device), "priority" (in [0, 1], higher runs first; only the order counts),
    "fuse" (1 = fuse into the single consumer)."""

    metadata = {"render_modes": []}

    def __init__(
        self,
        graph: OpGraph,
        devices: DeviceModel,
        *,
        place: bool = True,
        schedule: bool = False,
        fuse: bool = False,
        baseline_step_time_s: float | None = None,
    ):
        if not (place or schedule or fuse):
            raise HlotuneError("enable at least one task: place, schedule or fuse")
        self.graph, self.devices = graph, devices
        n, num_edges = graph.num_ops, graph.num_edges
        tasks = {}
        if place:
            tasks["placement"] = spaces.MultiDiscrete(np.full(n, devices.num_devices))
        if schedule:
            tasks["priority"] = spaces.Box(0.0, 1.0, (n,), np.float32)
        if fuse:
            tasks["fuse"] = spaces.MultiBinary(n)
        self.action_space = spaces.Dict(tasks)
        self.observation_space = spaces.Dict({
            "node_features": spaces.Box(0.0, 1.0, (n, len(NODE_FEATURES)), np.float32),
            "opcode": spaces.Box(0, NUM_OPCODES - 1, (n,), np.int64),
            "edge_index": spaces.Box(0, max(n - 1, 0), (num_edges, 2), np.int64),
        })
        self._observation = observation(graph)
        if baseline_step_time_s is None:
            baseline_step_time_s = simulate(graph, devices).step_time_s
        if not baseline_step_time_s > 0:
            raise HlotuneError("the baseline step time must be positive (does the graph do work?)")
        self.baseline_step_time_s = float(baseline_step_time_s)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        return self._fresh_observation(), {}

    def step(self, action: dict):
        unknown = set(action) - set(self.action_space.spaces)
        if unknown:
            raise HlotuneError(f"action has entries for disabled tasks: {sorted(unknown)}")
        result = simulate(
            self.graph,
            self.devices,
            placement=action.get("placement"),
            priority=action.get("priority"),
            fuse=action.get("fuse"),
        )
        info = {
            "step_time_s": result.step_time_s,
            "baseline_step_time_s": self.baseline_step_time_s,
            "oom": result.oom,
            "peak_memory_bytes": result.peak_memory_bytes,
            "busy_s": result.busy_s,
        }
        value = reward(result, self.baseline_step_time_s)
        return self._fresh_observation(), value, True, False, info

    def _fresh_observation(self) -> dict[str, np.ndarray]:
        """A copy: gymnasium callers own what an env returns and may modify it."""
        return {key: array.copy() for key, array in self._observation.items()}


def observation(graph: OpGraph) -> dict[str, np.ndarray]:
    """The static view of the graph a policy reads."""
    features = np.stack([
        _unit(np.log1p(graph.flops)),
        _unit(np.log1p(graph.bytes_in + graph.bytes_out)),
        _unit(graph.depth.astype(np.float64)),
    ], axis=1).astype(np.float32)
    return {
        "node_features": features,
        "opcode": graph.opcode.astype(np.int64),
        "edge_index": graph.edge_index().astype(np.int64),
    }


def _unit(values: np.ndarray) -> np.ndarray:
    top = values.max(initial=0.0)
    return values / top if top > 0 else np.zeros_like(values)
