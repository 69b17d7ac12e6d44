"""Property-based fuzzing of the HLO text and proto paths: any input parses or fails cleanly."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hlotune.errors import HlotuneError
from hlotune.hlo.featurize import featurize
from hlotune.hlo.proto import graph_from_proto
from hlotune.hlo.sources import from_text

VALID = jax.jit(lambda x, w: jnp.tanh(x @ w).sum(axis=0)).lower(
    jnp.ones((4, 8)), jnp.ones((8, 3))
).as_text(dialect="hlo")

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# Each text example runs XLA's parser in a child process (it can abort): fewer, costlier examples.
FUZZ_TEXT = settings(FUZZ, max_examples=30)


def _parses_or_fails_cleanly(parse, data) -> None:
    try:
        graph = parse(data)
    except HlotuneError as error:
        assert str(error) and "\n" not in str(error)
        return
    arrays = featurize(graph)
    assert arrays.node_feat.shape[0] == graph.num_nodes


@st.composite
def mutated_text(draw) -> str:
    """The valid module with a few characters deleted, replaced or inserted."""
    text = VALID
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text) - 1))
        edit = draw(st.sampled_from(["delete", "replace", "insert"]))
        piece = draw(st.text(alphabet="{}()[],=%.:0123456789fsu-_ \nabcxyz", max_size=4))
        if edit == "delete":
            text = text[:at] + text[at + len(piece) + 1 :]
        elif edit == "replace":
            text = text[:at] + piece + text[at + len(piece) :]
        else:
            text = text[:at] + piece + text[at:]
    return text


@FUZZ_TEXT
@given(mutated_text())
def test_mutated_hlo_text_parses_or_fails_cleanly(text):
    _parses_or_fails_cleanly(from_text, text)


@FUZZ_TEXT
@given(st.text(max_size=200))
def test_arbitrary_text_fails_cleanly(text):
    _parses_or_fails_cleanly(from_text, text)


PROTO = jax.jit(lambda x: jnp.sin(x) * 2).lower(jnp.ones(4)).compiler_ir("hlo").as_serialized_hlo_module_proto()


@FUZZ
@given(st.integers(0, len(PROTO) - 1), st.binary(min_size=1, max_size=3))
def test_corrupted_proto_parses_or_fails_cleanly(at, patch):
    _parses_or_fails_cleanly(graph_from_proto, PROTO[:at] + patch + PROTO[at + len(patch) :])
