"""The corpus: real models from maintained libraries as `corpus:` programs. One program of each
source library compiles at size tiny (inference, training step, bf16), and one is featurized
into TpuGraphs arrays. The libraries come with the extra [corpus]: where it is absent these
tests skip, except under CI, which installs it with [dev]."""

from __future__ import annotations

import json
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import compile_and_run, need
from hlotune.data.npz import read_sample
from hlotune.errors import HlotuneError
from hlotune.programs import is_program_spec, load_program
from hlotune.programs.corpus import CORPUS
from hlotune.programs.variants import BF16_SUFFIX, _parse_variant


CORPUS_EXTRA = 'pip install -e ".[corpus]"'


def _leaves(tree) -> list[np.ndarray]:
    return [np.asarray(leaf, dtype=np.float32) if leaf.dtype == jnp.bfloat16 else np.asarray(leaf)
            for leaf in jax.tree_util.tree_leaves(tree)]


def _compile_and_run(spec: str):
    program = load_program(spec)
    return program, compile_and_run(program.fn, program.args)


def test_the_variant_grammar_reads_bf16_after_train():
    assert _parse_variant("base-b8-train-bf16") == ("base", 8, True, True)
    assert _parse_variant("tiny-bf16") == ("tiny", None, False, True)
    assert _parse_variant("tiny-bf16-train")[0] == ""


@pytest.mark.parametrize("spec, fragment", [
    ("zoo:mlp@tiny-bf16", "unknown variant 'tiny-bf16' of zoo:mlp"),
    ("corpus:jaxmd-lj@tiny-train", "unknown variant 'tiny-train' of corpus:jaxmd-lj"),
    ("corpus:hf-bert@huge", "unknown variant 'huge' of corpus:hf-bert"),
    ("corpus:no-such-model", "unknown corpus program 'no-such-model'"),
])
def test_unknown_programs_and_variants_are_errors(spec, fragment):
    assert is_program_spec(spec)
    with pytest.raises(HlotuneError, match=fragment):
        load_program(spec)


def test_naming_the_corpus_imports_no_library():
    code = ("import sys; from hlotune.programs.corpus import CORPUS; "
            "print([m for m in ('transformers', 'haiku', 'jax_md', 'mujoco') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_zoo_list_names_every_program_with_its_library(cli):
    out = cli("zoo", "list", "--json")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    corpus = {row["name"]: row for row in rows if row["source"] == "corpus"}
    assert set(corpus) == set(CORPUS) and len(corpus) >= 25
    assert {row["source"] for row in rows} == {"zoo", "corpus", "numerics"}
    assert all(row["library"] == "hlotune" for row in rows if row["source"] == "zoo")
    assert corpus["hf-bert"]["library"] == "transformers"
    assert "tiny-train-bf16" in corpus["hf-bert"]["variants"]
    assert corpus["mjx-bodies"]["variants"] == ["tiny", "small", "base"]


def test_a_training_step_compiles_and_updates_every_parameter():
    need("transformers", install=CORPUS_EXTRA)
    _, (params, velocity, loss) = _compile_and_run("corpus:hf-gpt2@tiny-train")
    assert loss.shape == () and np.isfinite(loss)
    for after, gradient in zip(_leaves(params), _leaves(velocity), strict=True):
        assert np.isfinite(after).all()
        assert np.any(gradient != 0)  # the first momentum step holds the gradient


@pytest.mark.parametrize("library, spec", [
    ("transformers", "corpus:hf-vit@tiny-bf16"),
    ("haiku", "corpus:haiku-resnet@tiny"),
    ("jax_md", "corpus:jaxmd-lj@tiny"),
    ("mujoco", "corpus:mjx-bodies@tiny"),
])
def test_inference_compiles_and_runs_finite(library, spec):
    need(library, install=CORPUS_EXTRA)
    program, out = _compile_and_run(spec)
    assert all(np.isfinite(leaf).all() for leaf in _leaves(out))
    floats = {leaf.dtype for leaf in jax.tree_util.tree_leaves(program.args)
              if jnp.issubdtype(leaf.dtype, jnp.floating)}
    assert floats == {np.dtype(jnp.bfloat16 if spec.endswith(BF16_SUFFIX) else jnp.float32)}


def test_a_batch_override_and_the_seed_shape_the_arguments():
    need("transformers", install=CORPUS_EXTRA)
    model = CORPUS["hf-bert"]
    (_, x), (_, again), (_, other) = (model.program("tiny", train=False, batch=3, seed=s)[1]
                                      for s in (0, 0, 1))
    assert x["input_ids"].shape == (3, model.sizes["tiny"]["seq"])
    assert np.array_equal(x["input_ids"], again["input_ids"])
    assert not np.array_equal(x["input_ids"], other["input_ids"])


def test_a_corpus_program_featurizes_into_tpugraphs_arrays():
    need("transformers", install=CORPUS_EXTRA)
    from hlotune.hlo.sources import featurize_source

    (sample,) = featurize_source("corpus:hf-llama@tiny")
    graph = sample.graph
    assert (sample.name, sample.source) == ("hf-llama@tiny", "corpus:hf-llama@tiny")
    assert graph.node_feat.shape == (len(graph.node_opcode), 140)
    assert graph.edge_index.max() < len(graph.node_opcode)
    assert len(graph.node_opcode) > 100  # a whole decoder, not a stub


def test_collect_measures_a_corpus_program_into_the_dataset_format(tmp_path, cli):
    """`hlotune collect` on a corpus program, as the built-in dataset's edition 2 is collected."""
    need("jax_md", install=CORPUS_EXTRA)
    result = cli("collect", "--space", "flags", "--program", "corpus:jaxmd-lj@tiny", "--configs", "2",
                 "--batch", "2", "--samples", "2", "--out", tmp_path, "-q")
    assert result.returncode == 0, result.stderr
    summary = json.loads((tmp_path / "jaxmd-lj@tiny.json").read_text())
    assert summary["program"] == "corpus:jaxmd-lj@tiny"
    # the default, 2 drawn configs and a replacement for each that failed
    assert summary["result"]["configs"] + summary["result"]["failed"] == 3 + summary["replacements"]
    sample = read_sample(tmp_path / "jaxmd-lj@tiny.npz")
    assert sample.num_configs == summary["result"]["configs"] and (sample.configs.config_runtime > 0).all()
