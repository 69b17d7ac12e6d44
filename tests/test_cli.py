"""The `hlotune` command as users run it: exit codes, stdout and stderr.

Most tests call the command in this process (the `cli` fixture); those about the process itself
(the `python -m hlotune.cli` entry, a hard exit, a terminal) start a real one.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hlotune.data.npz import read_sample

REPO = Path(__file__).resolve().parents[1]


def hlotune(*args: str) -> subprocess.CompletedProcess:
    """`hlotune ARGS` in a child process."""
    return subprocess.run(
        [sys.executable, "-m", "hlotune.cli", *map(str, args)], capture_output=True, text=True
    )


def assert_clean_error(result: subprocess.CompletedProcess, fragment: str) -> None:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], result.stderr


def test_help_lists_the_commands_and_the_exit_codes():
    """In a child: `python -m hlotune.cli` is a working entry point."""
    result = hlotune("--help")
    assert result.returncode == 0
    for command in ("featurize", "inspect", "zoo"):
        assert command in result.stdout
    codes = result.stdout.split("exit codes:")[1].split()
    assert [c for c in codes if c.isdigit()] == ["0", "1", "2", "3", "130"]


def test_usage_errors_exit_2(cli):
    assert cli("featurize", "--no-such-option").returncode == 2
    assert cli("no-such-command").returncode == 2


def test_featurize_zoo_program_writes_a_valid_npz(tmp_path, cli):
    out = tmp_path / "mlp.npz"
    result = cli("featurize", "zoo:mlp@tiny", "-o", out, "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    sample = read_sample(out)
    assert summary["nodes"] == sample.graph.num_nodes > 10
    assert sample.graph.node_feat.shape[1] == 140


def test_featurize_raw_record_matches_the_official_npz(tmp_path, tpugraphs_dir, cli):
    valid = "layout/xla/default/valid/unet_3d.4x4.bf16"
    out = tmp_path / "unet.npz"
    result = cli("featurize", tpugraphs_dir / "pb" / f"{valid}.pb", "-o", out)
    assert result.returncode == 0, result.stderr
    ours, official = read_sample(out), read_sample(tpugraphs_dir / "npz" / f"{valid}.npz")
    np.testing.assert_array_equal(ours.graph.node_feat, official.graph.node_feat)
    np.testing.assert_array_equal(ours.configs.node_config_ids, official.configs.node_config_ids)
    assert ours.num_configs == 112


def test_inspect_every_fixture_as_json(tpugraphs_dir, cli):
    result = cli("inspect", tpugraphs_dir, "--json")
    assert result.returncode == 0, result.stderr
    reports = [json.loads(line) for line in result.stdout.splitlines()]
    npz = [r for r in reports if r["path"].endswith(".npz")]
    assert len(npz) == 6 and all(r["valid"] and not r["errors"] for r in reports)
    for report in reports:
        assert {"path", "collection", "nodes", "edges", "configs", "valid", "errors"} <= set(report)
        assert report["labelled"] == (report["configs"] > 0 and "/test/" not in report["path"])
    unet = next(r for r in npz if "unet_3d" in r["path"])
    assert (unet["nodes"], unet["edges"], unet["configs"]) == (3163, 5112, 1965)
    assert unet["configurable_nodes"] == 62
    assert (unet["source"], unet["family"], unet["noise_floor"]) == ("tpugraphs", "unet_3d", None)


@pytest.mark.parametrize("collection", ["flags", "layout"])
def test_the_builtin_dataset_meets_its_spec_as_inspect_reports_it(cli, collection):
    """At least 150 graphs of 30 families per space, measured to a median noise floor of 2%,
    with the test split's families (three or more from the corpus) nowhere else."""
    result = cli("inspect", f"builtin:{collection}", "--json")
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.returncode == 0 and len(rows) >= 150
    assert len({r["family"] for r in rows}) >= 30 and {r["source"] for r in rows} == {"zoo", "corpus"}
    assert np.median([r["noise_floor"] for r in rows]) <= 0.02
    held_out = {r["family"]: r["source"] for r in rows if "/test/" in r["path"]}
    assert len(held_out) >= 6 and sum(source == "corpus" for source in held_out.values()) >= 3
    assert not held_out.keys() & {r["family"] for r in rows if "/test/" not in r["path"]}


def test_inspect_fails_on_an_invalid_file_in_a_folder(tmp_path, tpugraphs_dir, cli):
    shutil.copy(next((tpugraphs_dir / "npz" / "tile").rglob("*.npz")), tmp_path / "good.npz")
    (tmp_path / "bad.npz").write_bytes(b"PK\x03\x04 truncated")
    result = cli("inspect", tmp_path, "--json")
    assert result.returncode == 1
    reports = {json.loads(line)["path"].split("/")[-1]: json.loads(line) for line in result.stdout.splitlines()}
    assert reports["good.npz"]["valid"] and not reports["bad.npz"]["valid"]
    assert "bad.npz" in reports["bad.npz"]["errors"][0]


@pytest.mark.parametrize(
    "args, fragment",
    [
        (("featurize", "zoo:no_such_model"), "unknown zoo program"),
        (("featurize", "zoo:mlp@huge"), "unknown variant"),
        (("featurize", "missing.hlo"), "no such file"),
        (("featurize", "missing.py:make"), "no such file"),
        (("inspect", "missing_folder"), "no such file or folder"),
    ],
)
def test_bad_arguments_give_one_line_errors(args, fragment, cli):
    assert_clean_error(cli(*args), fragment)


def test_bad_files_give_one_line_errors(tmp_path, cli):
    (tmp_path / "empty.hlo").write_bytes(b"")
    (tmp_path / "garbage.pb").write_bytes(b"\x0a\xff\xff\xff\xff garbage")
    (tmp_path / "broken.hlo").write_text("HloModule m\nENTRY e {\n  ROOT x = f32[2] add(y, z)\n}\n")
    assert_clean_error(cli("featurize", tmp_path / "empty.hlo"), "empty file")
    assert_clean_error(cli("featurize", tmp_path / "garbage.pb"), "garbage.pb")
    assert_clean_error(cli("featurize", tmp_path / "broken.hlo"), "not valid HLO text")


def test_user_program_from_a_python_file(tmp_path, cli):
    (tmp_path / "model.py").write_text(
        "import jax.numpy as jnp\n"
        "def make():\n"
        "    return (lambda x: jnp.exp(x) @ x.T), (jnp.ones((4, 4)),)\n"
        "def broken():\n"
        "    raise RuntimeError('boom')\n"
    )
    result = cli("featurize", f"{tmp_path / 'model.py'}:make", "--optimized", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1])["nodes"] >= 3
    assert_clean_error(cli("featurize", f"{tmp_path / 'model.py'}:broken"), "boom")
    assert_clean_error(cli("featurize", f"{tmp_path / 'model.py'}:absent"), "no function")


def test_featurizing_several_modules_into_one_file_is_refused(tmp_path, cli):
    from hlotune.hlo.lowering import lowered_proto
    from hlotune.hlo import wire
    from hlotune.programs import load_program

    program = load_program("zoo:mlp@tiny", abstract=True)
    kernel = wire.field_bytes(1, lowered_proto(program.fn, program.args))
    (tmp_path / "kernels.pb").write_bytes(wire.field_bytes(1, kernel) * 2)
    result = cli("featurize", tmp_path / "kernels.pb", "-o", tmp_path / "one.npz")
    assert_clean_error(result, "give -o a folder")


def test_python_api_mirrors_the_cli(tmp_path, tpugraphs_dir, cli):
    import hlotune

    (sample,) = hlotune.featurize("zoo:mlp@tiny", extended=True)
    assert sample.graph.node_feat.shape[1] > 140
    hlotune.write_sample(tmp_path / "mlp.npz", sample)
    (report,) = hlotune.inspect(tmp_path / "mlp.npz")
    assert report.valid and report.nodes == sample.graph.num_nodes
    assert len(hlotune.Dataset(tpugraphs_dir / "npz")) == 6


def test_train_eval_predict_round_trip(tmp_path, tpugraphs_dir, cli):
    from hlotune.data.kaggle import read_submission

    tile = tpugraphs_dir / "npz" / "tile" / "xla"
    result = cli("train", "--data", tile / "valid", "--valid", tile / "valid",
                     "--out", tmp_path / "m", "--epochs", "2", "--seed", "1", "--json")
    assert result.returncode == 0, result.stderr
    assert "it/s" not in result.stderr  # no progress bar drawn into a log
    trained = json.loads(result.stdout)
    assert trained["epochs_run"] == 2 and len(trained["history"]) == 2
    assert (tmp_path / "m" / "model" / "model.safetensors").is_file()
    assert trained["model_dir"] == str(tmp_path / "m" / "model")
    evaluation = cli("eval", "--model", tmp_path / "m", "--data", tile, "--json")
    assert evaluation.returncode == 0, evaluation.stderr
    report = json.loads(evaluation.stdout)
    assert {"collection", "graphs", "kendall_tau", "opa", "top_k_error", "per_graph"} <= set(report)
    assert report["collection"] == "tile" and set(report["top_k_error"]) == {"1", "5", "10"}
    csv = tmp_path / "submission.csv"
    predicted = cli("predict", "--model", tmp_path / "m", "--data", tile, "--csv", csv, "--json")
    assert predicted.returncode == 0, predicted.stderr
    assert json.loads(predicted.stdout) == {"csv": str(csv), "rows": 3}
    rows = read_submission(csv)
    assert len(rows) == 3 and all(len(v) <= 5 for v in rows.values())  # test split included
    assert any(row.startswith("tile:xla:") for row in rows)


def test_train_model_options_reach_the_model_file(tmp_path, cli):
    """--conv, --config-layers and --drop-edge are stored in config.json, and a combination
    the model cannot run is a one-line error."""
    options = ["--conv", "gin", "--config-layers", "1", "--drop-edge", "0.2", "--layers", "2"]
    result = cli("train", "--data", "builtin:layout/valid", "--out", tmp_path / "m",
                     "--epochs", "1", "--hidden", "8", "-q", *options)
    assert result.returncode == 1  # gin cannot prune to the config layers' hops
    assert_clean_error(result, "needs conv 'sage'")
    result = cli("train", "--data", "builtin:layout/valid", "--out", tmp_path / "m",
                     "--epochs", "1", "--hidden", "8", "-q", *options[2:])
    assert result.returncode == 0, result.stderr
    model = json.loads((tmp_path / "m" / "model" / "config.json").read_text())["model"]
    assert (model["conv"], model["config_layers"], model["drop_edge"]) == ("sage", 1, 0.2)


def test_train_kaggle_options_reach_the_model_file(tmp_path, cli):
    """--residual, --instance-norm, --config-softmax, --test-permutations and
    --analytical-prior are stored in config.json (the groups are the training batch);
    --relative-targets trains."""
    options = ["--residual", "--instance-norm", "--config-softmax", "--configs-per-batch", "8",
               "--relative-targets", "--loss", "mse", "--analytical-prior"]
    bad = cli("train", "--data", "builtin:flags/valid", "--out", tmp_path / "bad", "--epochs", "1",
              *options, "--test-permutations", "0")
    assert_clean_error(bad, "test_permutations must be positive")
    result = cli("train", "--data", "builtin:flags/valid", "--out", tmp_path / "m", "--epochs", "1",
                 "--hidden", "8", "--json", *options, "--test-permutations", "4")
    assert result.returncode == 0, result.stderr
    assert np.isfinite(json.loads(result.stdout)["history"][0]["train_loss"])
    model = json.loads((tmp_path / "m" / "model" / "config.json").read_text())["model"]
    assert (model["residual"], model["instance_norm"], model["config_softmax"]) == (True, True, True)
    assert (model["test_group_size"], model["test_permutations"], model["analytical_prior"]) == (8, 4, True)


def test_eval_with_bad_models_and_options(tmp_path, tpugraphs_dir, cli):
    tile = tpugraphs_dir / "npz" / "tile" / "xla"
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text("{not json")
    assert_clean_error(cli("eval", "--model", tmp_path / "broken", "--data", tile), "broken")
    assert_clean_error(cli("eval", "--model", "baseline:oracle", "--data", tile), "unknown baseline")
    assert_clean_error(cli("eval", "--model", "baseline:random", "--data", tile,
                               "--protocol", "paper"), "--eval-indices")
    random_run = cli("eval", "--model", "baseline:random", "--data", tile, "--json")
    assert json.loads(random_run.stdout)["graphs"] == 2


def moved_note(old: str, new: str) -> str:
    return f"hlotune: note: '{old}' is now '{new}'; the old spelling goes in the next release"


def test_scale_run_past_its_memory_cap_exits_1_and_reports_the_run_failed(tmp_path):
    """In a child: past the cap the watchdog ends the process at once (os._exit). The old
    spelling `hlotune bench scale` runs the same after a note."""
    args = ["--nodes", "1000", "--mode", "full", "--max-rss-mb", "1", "--cache", str(tmp_path),
            "--json"]
    bench = subprocess.run([sys.executable, REPO / "benchmarks" / "scale_bench.py", "one", *args],
                           capture_output=True, text=True)
    old = hlotune("bench", "scale", *args)
    for result in (bench, old):
        assert result.returncode == 1  # 2 is for usage errors alone
        assert "RSS passed the 1 MB cap" in json.loads(result.stdout)["failed"]
    assert_clean_error(bench, "RSS passed the 1 MB cap (--max-rss-mb)")
    note, error = old.stderr.strip().splitlines()
    assert note == moved_note("bench scale", "python benchmarks/scale_bench.py one")
    assert error.endswith("RSS passed the 1 MB cap (--max-rss-mb)")


def test_help_lists_each_task_once_and_not_the_moved_ones():
    from hlotune.cli import _parser

    listing = _parser().format_help().split("COMMAND\n")[-1].split("\n\n")[0]
    names = [line.split()[0] for line in listing.splitlines() if line.startswith("    ") and
             not line.startswith("     ")]
    assert len(names) == len(set(names)) and {"eval", "cv", "rebuild"} <= set(names)
    assert "bench" not in names


def test_rebuild_hands_every_argument_to_the_tool_with_the_cli_exit_codes(tmp_path, cli):
    usage = cli("rebuild", "kernel-model")
    assert usage.returncode == 2 and "usage: hlotune rebuild kernel-model" in usage.stderr
    assert cli("rebuild", "kernel-model", "--help").stdout.startswith(
        "usage: hlotune rebuild kernel-model")
    assert_clean_error(cli("rebuild", "kernel-model", tmp_path, "--spaces", "nowhere"),
                       "hlotune: error:")
    assert cli("rebuild", "no-such-tool").returncode == 2


def test_rebuild_portfolio_runs_the_portfolio_tool(cli):
    result = cli("rebuild", "portfolio", "--help")
    assert result.returncode == 0 and result.stdout.startswith("usage: hlotune rebuild portfolio")
    assert "--source" in result.stdout
    old = cli("rebuild", "portfolio", "build", "--no-such-option")  # the old spelling's word
    note, *error = old.stderr.strip().splitlines()
    assert note == moved_note("hlotune rebuild portfolio build", "hlotune rebuild portfolio")
    assert old.returncode == 2 and error[0].startswith("usage: hlotune rebuild portfolio")


@pytest.mark.parametrize("module, tool", [("hlotune.collect.builtin", "dataset"),
                                          ("hlotune.collect.kernel_labels", "kernel-labels"),
                                          ("hlotune.train.kernels", "kernel-model"),
                                          ("hlotune.tuning.portfolio", "portfolio")])
def test_the_old_python_m_spellings_note_the_new_one_and_run_it(module, tool):
    result = subprocess.run([sys.executable, "-m", module, "--no-such-option"],
                            capture_output=True, text=True)
    note, *error = result.stderr.strip().splitlines()
    assert note == moved_note(f"python -m {module}", f"hlotune rebuild {tool}")
    assert result.returncode == 2 and error[0].startswith(f"usage: hlotune rebuild {tool}")


def _stderr_on_a_terminal(*args: str) -> str:
    """Run `hlotune ARGS` with stderr on a pseudo-terminal, as a person would, and read it."""
    import fcntl
    import os
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # 100 columns
    child = subprocess.Popen([sys.executable, "-m", "hlotune.cli", *args],
                             stdout=subprocess.DEVNULL, stderr=follower)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert child.wait() == 0
    return b"".join(chunks).decode()


def test_progress_bars_show_on_a_terminal_unless_quiet():
    evaluate = ("eval", "--model", "baseline:random", "--data", "builtin:layout/valid")
    bar = _stderr_on_a_terminal(*evaluate)
    assert bar.startswith("\reval:") and "/20 [" in bar and "graph/s]" in bar
    assert _stderr_on_a_terminal(*evaluate, "--quiet") == ""
