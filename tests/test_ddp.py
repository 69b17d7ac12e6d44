"""Distributed training: two gloo processes under torchrun match one process stepping on both
processes' graphs at once (DDP averages the gradients, `graphs_per_step=2` averages the loss)."""

from __future__ import annotations

import os
import subprocess
import sys

import torch
from safetensors.torch import load_file

from hlotune.data.builtin import resolve
from hlotune.data.dataset import Dataset
from hlotune.data.npz import write_sample
from hlotune.models.settings import ModelSettings
from hlotune.train import TrainSettings, train
from hlotune.train.gst import GSTSettings

BUILTIN_TRAIN = resolve("builtin:layout/train")
GRAPHS = ("cnn@tiny", "mlp@tiny", "gpt@tiny")  # an odd count: the last step is padded
OPTIONS = ["--epochs", "2", "--hidden", "16", "--layers", "2", "--configs-per-batch", "8"]


def test_two_processes_agree_with_one(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for name in GRAPHS:
        write_sample(data / f"{name}.npz", Dataset(BUILTIN_TRAIN / f"{name}.npz")[0])
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
         "--standalone", "-m", "hlotune.train", "--data",
         str(data), "--valid", str(data), "--out", str(tmp_path / "ddp"), "--segment-size",
         "100", *OPTIONS],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    settings = TrainSettings(epochs=2, configs_per_batch=8, graphs_per_step=2,
                             gst=GSTSettings(segment_size=100))
    single = train(data, data, tmp_path / "one", settings, progress=False,
                   model_settings=ModelSettings(hidden_dim=16, num_layers=2))
    ddp = load_file(tmp_path / "ddp" / "model" / "model.safetensors")
    one = load_file(single.model_dir / "model.safetensors")
    assert ddp.keys() == one.keys()
    for key in one:
        torch.testing.assert_close(ddp[key], one[key], rtol=1e-5, atol=1e-6)
    assert (tmp_path / "ddp" / "log.csv").read_text().count("\n") == 3  # rank 0 logged 2 epochs
