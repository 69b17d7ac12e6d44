"""The SIMULATED schedule of one step, as a Chrome trace (Perfetto) and as a Gantt chart.

Nothing here was measured: the slices are hlotune.opt.simulator's kernels and transfers on a
modelled machine, and both outputs say so (the trace's `otherData`, the chart's title).

The trace follows the Trace Event Format that chrome://tracing and ui.perfetto.dev read: one
"X" (complete) event per kernel and per transfer, `ts` and `dur` in microseconds; process 1
holds one thread (track) per device, process 2 one per link (ordered device pair), each named
by "M" metadata events. A fused kernel is one event whose args list its ops, so every op of
the graph appears in exactly one device event.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hlotune.atomic import write_bytes_atomic
from hlotune.hlo.opcodes import OPCODE_NAMES
from hlotune.opt.costs import OpGraph
from hlotune.opt.device import DeviceModel
from hlotune.opt.simulator import SimResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure

DEVICES_PID, LINKS_PID = 1, 2
SIMULATED = "SIMULATED (hlotune.opt.simulator on a modelled machine; not a measurement)"
_US = 1e6
_COLOURS = {"kernel": "tab:blue", "fused kernel": "tab:orange", "transfer": "tab:green"}


@dataclass(frozen=True)
class Slice:
    """A span of one track: a kernel on a device or a tensor on a link."""

    pid: int
    tid: int  # the device, or the link's index src * N + dst
    name: str
    kind: str  # a key of _COLOURS
    start_s: float
    end_s: float
    args: dict


def schedule(graph: OpGraph, devices: DeviceModel, result: SimResult) -> list[Slice]:
    """Every kernel and transfer of a simulated step, by start time."""
    return sorted(_kernels(graph, result) + _transfers(graph, devices, result),
                  key=lambda s: (s.start_s, s.pid, s.tid))


def _kernels(graph: OpGraph, result: SimResult) -> list[Slice]:
    members: dict[int, list[int]] = {}
    for op, root in enumerate(result.kernel.tolist()):
        members.setdefault(root, []).append(op)
    slices = []
    for root, ops in members.items():
        label = _op_label(graph, root)
        fused = len(ops) > 1
        slices.append(Slice(
            DEVICES_PID, int(result.device[root]),
            f"fusion of {len(ops)} ops into {label}" if fused else label,
            "fused kernel" if fused else "kernel",
            float(result.start_s[root]), float(result.finish_s[root]),
            {"ops": ops, "opcodes": [_opcode(graph, op) for op in ops],
             "flops": float(graph.flops[ops].sum())},
        ))
    return slices


def _transfers(graph: OpGraph, devices: DeviceModel, result: SimResult) -> list[Slice]:
    """A link is FIFO and store-and-forward: a transfer held it for latency + bytes / bandwidth
    up to its arrival."""
    sent = result.transfers
    slices = []
    for src, dst, arrival, nbytes in zip(sent.src.tolist(), sent.device.tolist(),
                                         sent.arrival_s.tolist(), sent.nbytes.tolist()):
        a = int(result.device[src])
        held = devices.link_latency[a, dst] + nbytes / devices.link_bandwidth[a, dst]
        slices.append(Slice(
            LINKS_PID, a * devices.num_devices + dst, f"{_op_label(graph, src)} to device {dst}",
            "transfer", arrival - float(held), arrival, {"op": src, "bytes": nbytes},
        ))
    return slices


def _opcode(graph: OpGraph, op: int) -> str:
    return OPCODE_NAMES[int(graph.opcode[op])]


def _op_label(graph: OpGraph, op: int) -> str:
    return f"{_opcode(graph, op)} (op {op})"


def _tracks(num_devices: int) -> list[tuple[int, int, str]]:
    """(pid, tid, name) of every device and every link."""
    tracks = [(DEVICES_PID, d, f"device {d}") for d in range(num_devices)]
    tracks += [(LINKS_PID, a * num_devices + b, f"link {a} -> {b}")
               for a in range(num_devices) for b in range(num_devices) if a != b]
    return tracks


def chrome_trace(slices: list[Slice], num_devices: int, about: dict) -> dict:
    """The trace as a JSON object; `about` (graph, task, method...) joins its otherData."""
    events = [
        {"ph": "M", "pid": pid, "name": "process_name", "args": {"name": name}}
        for pid, name in ((DEVICES_PID, "simulated devices"), (LINKS_PID, "simulated links"))
    ]
    for pid, tid, name in _tracks(num_devices):
        events.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_name", "args": {"name": name}})
        events.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_sort_index",
                       "args": {"sort_index": tid}})
    events += [
        {"ph": "X", "pid": s.pid, "tid": s.tid, "name": s.name, "cat": s.kind,
         "ts": s.start_s * _US, "dur": (s.end_s - s.start_s) * _US, "args": s.args}
        for s in slices
    ]
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"simulated": True, "note": SIMULATED, **about}}


def gantt(slices: list[Slice], num_devices: int, title: str) -> Figure:
    """One row per device, then per link that carried a tensor; time in microseconds
    (matplotlib, imported here: a trace alone does not wait for it)."""
    from matplotlib.figure import Figure

    used = {(s.pid, s.tid) for s in slices}
    rows = [(pid, tid, name) for pid, tid, name in _tracks(num_devices)
            if pid == DEVICES_PID or (pid, tid) in used]
    figure = Figure(figsize=(10, 1.2 + 0.35 * len(rows)), layout="constrained")
    axes = figure.subplots()
    for y, (pid, tid, _) in enumerate(rows):
        for kind, colour in _COLOURS.items():
            spans = [(s.start_s * _US, (s.end_s - s.start_s) * _US)
                     for s in slices if (s.pid, s.tid) == (pid, tid) and s.kind == kind]
            if spans:
                axes.broken_barh(spans, (y - 0.4, 0.8), facecolors=colour, edgecolor="white",
                                 linewidth=0.3)
    for kind in dict.fromkeys(s.kind for s in slices):
        axes.bar(0, 0, color=_COLOURS[kind], label=kind)  # legend entries only
    axes.set_yticks(range(len(rows)), [name for _, _, name in rows])
    axes.invert_yaxis()
    axes.set_xlabel("simulated time (µs)")
    axes.set_title(title, fontsize=9)
    axes.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    return figure


def write_schedule(
    graph: OpGraph, devices: DeviceModel, result: SimResult, about: dict,
    trace: Path | None = None, plot: Path | None = None,
) -> None:
    """Write the step's Chrome trace to `trace` and its Gantt chart (PNG) to `plot`."""
    slices = schedule(graph, devices, result)
    if trace is not None:
        text = json.dumps(chrome_trace(slices, devices.num_devices, about))
        write_bytes_atomic(trace, text.encode())
    if plot is not None:
        what = ", ".join(f"{k} {v}" for k, v in about.items())
        title = (f"SIMULATED schedule: {what}, step {result.step_time_s * 1e3:.4g} ms\n"
                 "hlotune.opt.simulator on a modelled machine; not a measurement")
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        buffer = io.BytesIO()
        FigureCanvasAgg(gantt(slices, devices.num_devices, title)).print_png(buffer)
        write_bytes_atomic(plot, buffer.getvalue())


def numbered(path: Path | None, index: int, count: int) -> Path | None:
    """`path` for one graph; path-<index>.suffix for each of several."""
    if path is None or count == 1:
        return path
    return path.with_name(f"{path.stem}-{index}{path.suffix}")

