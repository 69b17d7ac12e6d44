"""GO's scheduling task on real XLA:CPU modules: entry orders read, checked and imposed at
POST_SCHEDULER, the baselines' and the policy's orders, and `opt schedule --measure`.

zoo:vae@tiny (39 entry instructions) is the program: its orders differ in peak bytes (XLA's
buffer assignment gives 6,208 temporary bytes to XLA's default order and to the memory-greedy
one, 6,336 to depth-first, on jaxlib 0.10.2).
"""

from __future__ import annotations

import argparse
import json

import jax
import numpy as np
import pytest

from hlotune.compiler.measurement.output_check import check_outputs
from hlotune.compiler.xla.schedule import EntrySchedule, compile_schedule
from hlotune.errors import HlotuneError

PROGRAM = "zoo:vae@tiny"  # memory-greedy and depth-first orders peak apart on it
# The command's measured run, a dozen real compiles: 0.2 s each, not vae's 0.6.
COMMAND_PROGRAM = "zoo:cnn@tiny"

pytestmark = pytest.mark.usefixtures("one_thread")

# A scheduled module by hand: %b must follow %a through a control dependency only.
TEXT = """HloModule m, is_scheduled=true

ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %a = f32[4]{0} negate(%p)
  %b = f32[4]{0} exponential(%p), control-predecessors={%a}, metadata={op_name="%c"}
  ROOT %c = f32[4]{0} add(%a, %b)
}
"""


@pytest.fixture(scope="module")
def program():
    """(the program's layouts, its lowered default build, XLA's default compile)."""
    from hlotune.compiler.configs.layouts import DEFAULT_LAYOUT, LayoutSpace
    from hlotune.programs import load_program

    layouts = LayoutSpace(load_program(PROGRAM))
    lowered = layouts.build(DEFAULT_LAYOUT).lower(*layouts.leaves)
    return layouts, lowered, compile_schedule(lowered)


@pytest.fixture(scope="module")
def ops(program):
    from hlotune.hlo.sources import from_text
    from hlotune.opt.schedules import EntryOps

    text = program[2].text
    return EntryOps.of(EntrySchedule.parse(text), from_text(text))


def outputs(layouts, executable) -> list[np.ndarray]:
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(executable(*layouts.leaves))]


def test_entry_reads_operands_and_control_predecessors_not_metadata():
    entry = EntrySchedule.parse(TEXT)
    assert entry.names == ("p", "a", "b", "c") and entry.root == 3
    assert entry.after == ((), (0,), (0, 1), (1, 2))  # %b follows %a; "%c" in metadata is no use
    assert entry.check(["p", "a", "b", "c"]) == (0, 1, 2, 3)


@pytest.mark.parametrize("order, message", [
    (["p", "b", "a", "c"], "runs 'b' before 'a'"),
    (["p", "a", "c"], "leaves out 'b'"),
    (["p", "a", "a", "b", "c"], "names an instruction twice"),
    (["p", "a", "b", "x"], "'x', not an instruction of main"),
    (["p", "a", "c", "b"], "runs 'c' before 'b'"),
])
def test_a_bad_order_is_a_one_line_error(order, message):
    with pytest.raises(HlotuneError, match=message):
        EntrySchedule.parse(TEXT).check(order)


def test_the_root_must_come_last():
    text = TEXT.replace("%p = f32[4]{0} parameter(0)", "%p = f32[4]{0} parameter(0)\n"
                        "  %d = f32[4]{0} sine(%p)")
    with pytest.raises(HlotuneError, match="must end with the ROOT 'c'"):
        EntrySchedule.parse(text).check(["p", "a", "b", "c", "d"])


def test_a_compile_with_a_bad_order_raises_the_check(program):
    _, lowered, default = program
    order = list(default.order)
    with pytest.raises(HlotuneError, match=f"runs '{order[-1]}' before"):
        compile_schedule(lowered, [*order[:-2], order[-1], order[-2]])  # the ROOT uses the last


def test_an_imposed_order_is_the_one_compiled_and_computes_the_same(program, ops):
    from hlotune.opt.schedules import depth_first

    layouts, lowered, default = program
    order = depth_first(ops)
    assert order != default.order  # a real reordering
    imposed = compile_schedule(lowered, order)
    compiled = EntrySchedule.parse(imposed.executable.as_text())
    assert compiled.names == order
    assert check_outputs(outputs(layouts, imposed.executable), outputs(layouts, default.executable)).ok


def test_orders_respect_dependencies_and_memory_greedy_peaks_below_depth_first(program, ops):
    from hlotune.opt.schedules import depth_first, memory_greedy

    _, lowered, default = program
    greedy, deep = memory_greedy(ops), depth_first(ops)
    for order in (greedy, deep):
        assert sorted(ops.entry.check(order)) == list(range(len(ops.entry.names)))
    assert compile_schedule(lowered, greedy).peak_bytes < compile_schedule(lowered, deep).peak_bytes


def test_the_policy_orders_are_valid_and_seeded(ops):
    from hlotune.opt.commands import PRETRAINED_DIR
    from hlotune.opt.policy import GOPolicy
    from hlotune.opt.schedules import policy_orders

    policy, _ = GOPolicy.load(PRETRAINED_DIR)
    orders = policy_orders(policy, ops, samples=3, seed=0)
    assert len(orders) == 4  # the greedy priorities and 3 samples
    for order in orders:
        ops.entry.check(order)
    assert orders == policy_orders(policy, ops, samples=3, seed=0)


def test_moves_keep_orders_valid_and_move_one_instruction(ops):
    from hlotune.opt.schedules import Moves

    moves, rng = Moves(ops), np.random.default_rng(0)
    order = ops.entry.names
    for _ in range(50):
        moved = moves.move(order, rng)
        if moved is None:
            continue
        ops.entry.check(moved)  # after what it follows, before its users, the ROOT last
        rest = [name for name in order if name in moved]
        differ = [a != b for a, b in zip(order, moved)]
        assert sum(differ) >= 2 and sorted(rest) == sorted(moved)
        assert any([*order[:i], *order[i + 1:]] == [n for n in moved if n != order[i]]
                   for i in range(len(order)))  # one instruction taken out and put back
        order = moved


def test_the_search_never_ends_above_where_it_started(program, ops):
    from hlotune.opt.schedules import Moves, depth_first
    from hlotune.opt.measured_schedule import ScheduleClimber

    _, lowered, _ = program
    start = compile_schedule(lowered, depth_first(ops))
    climb = ScheduleClimber(lowered, Moves(ops), start, seed=0)
    found = climb.run(float("inf"), max_moves=6)
    assert climb.moves == 6 and 0 <= climb.kept <= 6
    assert found.peak_bytes <= start.peak_bytes
    ops.entry.check(found.order)


def opt(*argv: str) -> int:
    from hlotune.opt.commands import add_commands
    from hlotune.opt import measured_fusion, measured_schedule

    parser = argparse.ArgumentParser(prog="hlotune")
    add_commands(parser.add_subparsers(required=True),
                 measured={"schedule": measured_schedule.run, "fuse": measured_fusion.run})
    args = parser.parse_args(["opt", *argv])
    return args.run(args)


def test_opt_schedule_measure_json_with_a_search_budget(capsys):
    """One measured run (each measured schedule is a real compile): the baselines, XLA's three
    schedulers, and a search within its budget that ends at or below the best of them."""
    assert opt("schedule", COMMAND_PROGRAM, "--measure", "--samples", "2", "--budget", "1", "--json",
               "--quiet") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["measured"] and report["graph"] == COMMAND_PROGRAM
    assert set(report["results"]) == {"policy", "xla", "depth_first", "memory_greedy", "search"}
    for result in report["results"].values():
        assert result["peak_bytes"] > 0 and result["ms"] > 0 and result["outputs_ok"]
    assert set(report["xla_schedulers"]) == {"default", "memory", "concurrency"}
    xla = report["results"]["xla"]["peak_bytes"]
    assert xla == min(report["xla_schedulers"].values())
    assert report["policy_beats_xla"] == (report["results"]["policy"]["peak_bytes"] < xla)
    assert report["noise"] >= 0 and report["search_moves"] > 0
    peaks = {name: report["results"][name]["peak_bytes"] for name in ("xla", "policy", "search")}
    assert peaks["search"] <= min(peaks["xla"], peaks["policy"])
    assert peaks[report["chosen"]] == min(peaks.values())


@pytest.mark.parametrize("argv, message", [
    (["schedule", PROGRAM], "needs --devices N"),
    (["schedule", PROGRAM, "--measure", "--devices", "2"], "--devices is for the simulated task"),
    (["schedule", "model.hlo", "--measure"], "give a program spec"),
    (["schedule", PROGRAM, "--measure", "--budget", "-1"], "--budget must not be negative"),
    (["fuse", PROGRAM, "--measure", "--budget", "5"], "--budget is for the simulated task"),
])
def test_opt_schedule_flags_are_checked(argv, message):
    with pytest.raises(HlotuneError, match=message):
        opt(*argv)
