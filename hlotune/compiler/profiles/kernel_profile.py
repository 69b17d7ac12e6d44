"""Each kernel's time in a run, read from a jax.profiler trace of a compiled program.

XLA:CPU's profile holds one event per kernel (thunk) per execution, with the stats `hlo_module`,
`hlo_op` and `run_id`, beside events that are not kernels (the PjRt client's, the thread pool's,
`end: NAME` markers). Three things of the real trace shape the arithmetic:
- parents: a `while` or `conditional` thunk's event spans the kernels of its body on the same
  thread, so a kernel's time is its own (exclusive) time, its nested kernels' events taken out;
- loops: a body's kernels repeat per iteration, so a kernel's time in a run is the sum of its
  events in that run, and `calls` says how many there were;
- threads: independent kernels may overlap on the runtime's worker threads, so the kernels'
  sum can exceed the run's wall time; `KernelProfile.sum_ns` is reported beside it, not forced
  to agree;
- gaps: between one kernel's end and the next one's start the runtime dispatches, so a run's
  span in the trace (its first kernel's start to its last kernel's end, `span_ns`) is what the
  kernels' sum is set against to see how much of a run they fill.
Profiled runs are separate from the timed ones (measure.py): the profiler's overhead never
enters a program's runtime.
"""

from __future__ import annotations

import statistics
import tempfile
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hlotune.errors import HlotuneError


@dataclass(frozen=True)
class KernelProfile:
    """Medians over profiled runs: each kernel's exclusive ns per program run, and its events
    per run."""

    module: str
    runs: int
    kernel_ns: dict[str, float]
    calls: dict[str, int]
    span_ns: float = 0.0  # a run's first kernel start to its last kernel end, the median run

    @property
    def sum_ns(self) -> float:
        return float(sum(self.kernel_ns.values()))


@dataclass(frozen=True)
class _Event:
    op: str
    run: int
    start: float
    end: float


def profile_kernels(executable: Any, args: list, runs: int = 5) -> KernelProfile:
    """Run `executable(*args)` `runs` times under the profiler and read each kernel's time."""
    import jax

    if runs < 1:
        raise HlotuneError(f"profiled runs must be at least 1, got {runs}")
    module = executable.as_text().split(",", 1)[0].removeprefix("HloModule ").strip()
    with tempfile.TemporaryDirectory(prefix="hlotune-profile-") as folder:
        with jax.profiler.trace(folder):
            for _ in range(runs):
                jax.block_until_ready(executable(*args))
        planes = list(Path(folder).rglob("*.xplane.pb"))
        if not planes:
            raise HlotuneError("jax.profiler wrote no trace (is another profiler session running?)")
        data = jax.profiler.ProfileData.from_file(str(planes[0]))
        threads = [_kernel_events(line.events, module) for plane in data.planes for line in plane.lines]
    profile = summarize(module, [event for thread in threads for event in exclusive(thread)])
    spans = run_spans([event for thread in threads for event in thread])
    return replace(profile, span_ns=statistics.median(spans.values()))


def _kernel_events(line_events, module: str) -> list[_Event]:
    """The kernel events of one thread of the trace, as they are (parents span their bodies)."""
    events = []
    for event in line_events:
        stats = dict(event.stats)
        if stats.get("hlo_module") == module and "hlo_op" in stats:
            events.append(_Event(str(stats["hlo_op"]), int(stats.get("run_id", 0)),
                                 float(event.start_ns), float(event.end_ns)))
    return events


def run_spans(events: list[_Event]) -> dict[int, float]:
    """Each run's span in the trace: its first kernel's start to its last kernel's end, on any
    thread (the events as recorded, parents whole)."""
    first: dict[int, float] = {}
    last: dict[int, float] = {}
    for event in events:
        first[event.run] = min(first.get(event.run, event.start), event.start)
        last[event.run] = max(last.get(event.run, event.end), event.end)
    return {run: last[run] - first[run] for run in first}


def exclusive(events: list[_Event]) -> list[_Event]:
    """Each event shortened by the events nested in it (same thread): a parent keeps only its
    own time, as (start, start + own duration)."""
    events = sorted(events, key=lambda e: (e.start, -e.end))
    nested = [0.0] * len(events)
    stack: list[int] = []
    for index, event in enumerate(events):
        while stack and events[stack[-1]].end <= event.start:
            stack.pop()
        if stack:
            nested[stack[-1]] += event.end - event.start
        stack.append(index)
    return [_Event(e.op, e.run, e.start, e.end - n) for e, n in zip(events, nested)]


def summarize(module: str, events: list[_Event]) -> KernelProfile:
    """Per kernel, the median over runs of its summed time and of its event count."""
    per_run: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for event in events:
        per_run[event.run][event.op].append(event.end - event.start)
    if not per_run:
        raise HlotuneError(f"the profile holds no kernel of {module}")
    names = sorted({op for run in per_run.values() for op in run})
    runs = list(per_run.values())
    kernel_ns = {op: statistics.median(sum(run.get(op, [])) for run in runs) for op in names}
    calls = {op: int(statistics.median(len(run.get(op, [])) for run in runs)) for op in names}
    return KernelProfile(module, len(runs), kernel_ns, calls)
