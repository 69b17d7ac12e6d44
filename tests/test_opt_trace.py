"""GO's simulated schedules as Chrome traces and Gantt charts (`opt ... --trace/--plot`)."""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict

import numpy as np
import pytest

from hlotune.opt import baselines
from hlotune.opt.commands import add_commands, load_graphs
from hlotune.opt.device import DeviceModel
from hlotune.opt.simulator import simulate
from hlotune.opt.trace import DEVICES_PID, LINKS_PID, write_schedule

pytestmark = pytest.mark.usefixtures("one_thread")
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def step():
    """zoo:transformer@tiny on 3 devices, METIS placement with greedy fusion: kernels fused
    and not, and tensors crossing links."""
    ((name, graph),) = load_graphs("zoo:transformer@tiny")
    devices = DeviceModel.uniform(3)
    placement = baselines.metis_placement(graph, devices)
    result = simulate(graph, devices, placement, None, baselines.greedy_fusion(graph, placement))
    assert result.num_transfers > 0 and len(set(result.kernel.tolist())) < graph.num_ops
    return name, graph, devices, result


def test_the_trace_has_every_op_once_and_tracks_that_never_overlap(step, tmp_path):
    name, graph, devices, result = step
    write_schedule(graph, devices, result, {"graph": name}, trace=tmp_path / "t.json")
    trace = json.loads((tmp_path / "t.json").read_text())
    assert trace["otherData"]["simulated"] is True and "SIMULATED" in trace["otherData"]["note"]
    events = trace["traceEvents"]

    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "thread_name"}
    assert sorted(n for (pid, _), n in names.items() if pid == DEVICES_PID) == [
        "device 0", "device 1", "device 2"]
    assert sum(pid == LINKS_PID for pid, _ in names) == 3 * 2

    slices = [e for e in events if e["ph"] == "X"]
    kernels = [e for e in slices if e["pid"] == DEVICES_PID]
    ops = Counter(op for e in kernels for op in e["args"]["ops"])
    assert sorted(ops) == list(range(graph.num_ops)) and set(ops.values()) == {1}
    assert sum(e["pid"] == LINKS_PID for e in slices) == result.num_transfers

    tracks = defaultdict(list)
    for e in slices:
        assert (e["pid"], e["tid"]) in names and e["dur"] >= 0
        tracks[e["pid"], e["tid"]].append((e["ts"], e["ts"] + e["dur"]))
    for spans in tracks.values():
        spans.sort()
        assert all(end <= start + 1e-6 for (_, end), (start, _) in zip(spans, spans[1:]))

    step_us = result.step_time_s * 1e6
    assert max(e["ts"] + e["dur"] for e in kernels) == pytest.approx(step_us)
    busy = np.zeros(devices.num_devices)
    for e in kernels:
        busy[e["tid"]] += e["dur"]
    np.testing.assert_allclose(busy, result.busy_s * 1e6, rtol=1e-9)
    assert all(b <= step_us * (1 + 1e-9) for b in busy)


def test_opt_fuse_writes_the_trace_and_the_gantt_chart(tmp_path, capsys):
    parser = argparse.ArgumentParser(prog="hlotune")
    add_commands(parser.add_subparsers(required=True))
    trace, plot = tmp_path / "out" / "fuse.json", tmp_path / "fuse.png"
    args = parser.parse_args(["opt", "fuse", "zoo:mlp@tiny", "--devices", "2", "--iterations", "0",
                              "--samples", "2", "--trace", str(trace), "--plot", str(plot)])
    assert args.run(args) == 0
    written = json.loads(trace.read_text())
    assert written["otherData"] | {"graph": "zoo:mlp@tiny", "task": "fuse", "method": "policy"} \
        == written["otherData"]
    assert plot.read_bytes().startswith(PNG) and plot.stat().st_size > 5_000
    assert "SIMULATED" in capsys.readouterr().out
