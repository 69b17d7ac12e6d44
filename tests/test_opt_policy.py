"""GO's learned side: the policy network, PPO on the simulator, checkpoints and `hlotune opt`.

Budgets are tiny (a few PPO iterations on graphs of tens to hundreds of ops, one torch thread):
the tests check that learning happens and that the pieces fit, not how good a policy gets.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest
import torch

from hlotune.errors import HlotuneError
from hlotune.hlo.sources import from_jax
from hlotune.opt.commands import add_commands
from hlotune.opt.costs import OpGraph, op_graph
from hlotune.opt.device import DeviceModel
from hlotune.opt.policy import GOPolicy, PolicySettings, task_set
from hlotune.opt.ppo import PPOSettings, Problem, search, train
from hlotune.opt.report import METHODS


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def transformer() -> OpGraph:
    from hlotune.programs import load_program

    program = load_program("zoo:transformer@tiny", abstract=True)
    return op_graph(from_jax(program.fn, *program.args, name=program.name))


def opt(*argv: str) -> int:
    """Run `hlotune opt ...` through the parser add_commands builds, as the main CLI will."""
    parser = argparse.ArgumentParser(prog="hlotune")
    add_commands(parser.add_subparsers(required=True))
    args = parser.parse_args(["opt", *argv])
    return args.run(args)


def test_ppo_raises_the_mean_sampled_reward(transformer):
    problem = Problem.make(transformer, DeviceModel.uniform(4), "place")
    logs = train(GOPolicy(seed=0), [problem], PPOSettings(iterations=30, seed=0))
    first = np.mean([log.mean_reward for log in logs[:3]])
    last = np.mean([log.mean_reward for log in logs[-3:]])
    # Log step-time ratio: over 3% faster on average (simulated). Placing METIS groups, even
    # an untrained policy's samples run far faster than one device; PPO improves on that.
    assert last > first + 0.03


def test_one_policy_serves_2_4_and_8_devices(transformer):
    policy = GOPolicy(PolicySettings(max_devices=8), seed=1)
    for n in (2, 4, 8):
        problem = Problem.make(transformer, DeviceModel.uniform(n), "place+schedule+fuse")
        out = policy(problem.inputs, problem.devices, problem.tasks)
        batch = out.actions.sample(3, torch.Generator().manual_seed(0))
        assert batch.placement.shape == (3, transformer.num_ops)
        assert 0 <= batch.placement.min() and batch.placement.max() < n
        assert len(set(batch.placement.flatten().tolist())) == n  # every device gets ops
        assert out.actions.log_prob(batch).shape == (3, transformer.num_ops)
        found = search(policy, problem, samples=3, seed=0)
        assert found.result.step_time_s > 0 and found.samples == 4
    with pytest.raises(HlotuneError, match="at most 8 devices"):
        policy(problem.inputs, DeviceModel.uniform(9), problem.tasks)


def test_heads_follow_the_tasks(transformer):
    problem = Problem.make(transformer, DeviceModel.uniform(2), "fuse")
    assert problem.fixed_placement is not None  # fusion runs on a METIS placement
    greedy = GOPolicy().forward(problem.inputs, problem.devices, problem.tasks).actions.greedy()
    assert greedy.placement is None and greedy.priority is None and greedy.fuse.dtype == torch.bool
    assert task_set("fuse+place") == ("place", "fuse")
    with pytest.raises(HlotuneError, match="tasks must be"):
        task_set("place+layout")


def test_checkpoint_round_trip_and_training_are_deterministic(transformer, tmp_path):
    problem = Problem.make(transformer, DeviceModel.uniform(4), "place+schedule")
    config = PPOSettings(iterations=2, samples=4, epochs=2, seed=5)
    policy = GOPolicy(seed=3)
    logs = train(policy, [problem], config)
    assert logs == train(GOPolicy(seed=3), [problem], config)  # same seed, same run
    policy.save(tmp_path / "policy", training={"tasks": ["place+schedule"]})
    loaded, training = GOPolicy.load(tmp_path / "policy")
    assert training == {"tasks": ["place+schedule"]}
    expected, found = (search(model, problem, samples=8, seed=11) for model in (policy, loaded))
    np.testing.assert_array_equal(found.placement, expected.placement)
    np.testing.assert_array_equal(found.priority, expected.priority)
    assert found.result.step_time_s == expected.result.step_time_s
    (tmp_path / "policy" / "config.json").write_text('{"format": "something else"}')
    with pytest.raises(HlotuneError, match="not an hlotune GO policy"):
        GOPolicy.load(tmp_path / "policy")


def test_opt_place_json_has_every_method(capsys):
    assert opt("place", "zoo:mlp@tiny", "--devices", "2", "--iterations", "2", "--samples", "4",
               "--json") == 0
    result = json.loads(capsys.readouterr().out)  # JSON alone: no table
    assert result["graph"] == "zoo:mlp@tiny" and result["devices"] == 2
    assert set(result["results"]) == set(METHODS)
    assert all(isinstance(v, float) and v > 0 for v in result["results"].values())
    assert result["simulated"] is True


def test_opt_schedule_maps_human_to_heft_and_leaves_placers_out(capsys):
    assert opt("schedule", "zoo:mlp@tiny", "--devices", "2", "--iterations", "2",
               "--samples", "2") == 0
    assert "SIMULATED" in capsys.readouterr().out  # the table
    assert opt("schedule", "zoo:mlp@tiny", "--devices", "2", "--iterations", "2",
               "--samples", "2", "--json") == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result["results"]) == set(METHODS)
    assert result["results"]["metis"] is None and result["results"]["hdp"] is None
    assert result["results"]["human"] > 0


def test_opt_train_then_zero_shot_on_an_unseen_graph(tmp_path, capsys):
    out = tmp_path / "policy"
    assert opt("train", "--programs", "zoo:mlp@tiny", "--devices", "2", "4", "--tasks", "place",
               "--out", str(out), "--iterations", "2", "--json") == 0
    assert (out / "config.json").is_file() and (out / "policy.safetensors").is_file()
    printed = capsys.readouterr()
    summary = json.loads(printed.out)
    assert summary["out"] == str(out) and len(summary["problems"]) == 2
    assert summary["iterations"] == 4 and "round 2/2" in printed.err  # progress: stderr
    assert opt("train", "--programs", "zoo:mlp@tiny", "--devices", "2", "--tasks", "place",
               "--out", str(tmp_path / "quiet"), "--iterations", "2", "--quiet") == 0
    assert capsys.readouterr().err == ""
    assert opt("place", "zoo:cnn@tiny", "--devices", "4", "--policy", str(out), "--samples", "2",
               "--json") == 0
    result = json.loads(capsys.readouterr().out)
    assert result["graph"] == "zoo:cnn@tiny" and result["results"]["policy"] > 0
    with pytest.raises(HlotuneError, match="not trained to fuse"):
        opt("fuse", "zoo:cnn@tiny", "--devices", "4", "--policy", str(out))


@pytest.mark.parametrize("argv, message", [
    (["place", "zoo:mlp@tiny", "--devices", "0"], "--devices must be at least 1"),
    (["train", "--programs", "zoo:mlp@tiny", "--devices", "2", "-1", "--out", "x"],
     "--devices must be at least 1"),
    (["place", "zoo:no-such-model", "--devices", "2"], "unknown zoo program"),
    (["place", "missing.hlo", "--devices", "2"], "no such file"),
    (["place", "zoo:mlp@tiny", "--devices", "2", "--policy", "no/such/dir"],
     "no such policy folder"),
    (["place", "zoo:mlp@tiny", "--devices", "2", "--budget", "-1"], "--budget must not be"),
    (["train", "--programs", "zoo:mlp@tiny", "--devices", "2", "--out", "x",
      "--architecture", "lstm"], "architecture must be one of"),
])
def test_bad_input_is_a_user_error(argv, message):
    with pytest.raises(HlotuneError, match=message):
        opt(*argv)


def test_recurrent_architecture_serves_every_task_and_round_trips(transformer, tmp_path):
    """GO's policy in full (segment recurrence, a layer per task) behind one config switch."""
    config = PolicySettings(segment=16, architecture="recurrent")
    policy = GOPolicy(config, seed=2)
    assert set(policy.task_attention) == {"place", "schedule", "fuse"}
    assert not GOPolicy(PolicySettings(segment=16)).task_attention  # today's policy: none
    problem = Problem.make(transformer, DeviceModel.uniform(4), "place+schedule+fuse")
    logs = train(policy, [problem], PPOSettings(iterations=2, samples=4, epochs=1, seed=0))
    assert all(np.isfinite(log.mean_reward) for log in logs)
    policy.save(tmp_path / "go", training={})
    loaded, _ = GOPolicy.load(tmp_path / "go")
    assert loaded.config == config
    expected, found = (search(model, problem, samples=4, seed=1) for model in (policy, loaded))
    np.testing.assert_array_equal(found.placement, expected.placement)
    with pytest.raises(HlotuneError, match="architecture must be one of"):
        PolicySettings(architecture="lstm")


def test_opt_place_json_on_a_program_file_it_never_saw(tmp_path, capsys):
    """`hlotune opt place FILE.py:FACTORY --devices 4 --json` with the shipped policy: all five
    results, each a simulated step time."""
    source = tmp_path / "two_towers.py"
    source.write_text(
        "import jax.numpy as jnp\n"
        "import jax\n\n"
        "def build():\n"
        "    def fn(x, w1, w2):\n"
        "        left = jnp.tanh(x @ w1) @ w2\n"
        "        right = jax.nn.relu(x @ w2.T) @ w1.T\n"
        "        return (left * right).sum()\n"
        "    x = jnp.ones((64, 128))\n"
        "    return fn, (x, jnp.ones((128, 256)), jnp.ones((256, 128)))\n")
    assert opt("place", f"{source}:build", "--devices", "4", "--policy", "pretrained",
               "--samples", "4", "--json") == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["devices"] == 4 and result["simulated"] is True
    assert list(result["results"]) == ["policy", "human", "metis", "hdp", "random"]
    assert all(isinstance(v, float) and v > 0 for v in result["results"].values())
