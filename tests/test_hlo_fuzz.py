"""Property-based fuzzing of the HLO text and proto paths: any input parses or fails cleanly."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hlotune.errors import HlotuneError
from hlotune.hlo.featurize import featurize
from hlotune.hlo.proto import graph_from_proto
from hlotune.hlo.graph import HloGraph
from hlotune.hlo.text_parser import texts_to_protos

VALID = jax.jit(lambda x, w: jnp.tanh(x @ w).sum(axis=0)).lower(
    jnp.ones((4, 8)), jnp.ones((8, 3))
).as_text(dialect="hlo")

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# XLA's parser runs in a child process (it can abort). An example is a batch of texts parsed in
# one child, as the kernel stages send theirs; where that child dies, each text is parsed alone in
# its own (text_parser.py), so both paths meet the bad texts: 30 texts, 6 child starts or more.
FUZZ_TEXTS = settings(FUZZ, max_examples=6)


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


def _each_parses_or_fails_cleanly(texts: list[str]) -> None:
    for proto in texts_to_protos(texts):
        _parses_or_fails_cleanly(_graph, proto)


def _graph(proto: bytes | HlotuneError) -> HloGraph:
    if isinstance(proto, HlotuneError):
        raise proto
    return graph_from_proto(proto)


@FUZZ_TEXTS
@given(st.lists(mutated_text(), min_size=5, max_size=5))
def test_mutated_hlo_text_parses_or_fails_cleanly(texts):
    _each_parses_or_fails_cleanly(texts)


@FUZZ_TEXTS
@given(st.lists(st.text(max_size=200), min_size=5, max_size=5))
def test_arbitrary_text_fails_cleanly(texts):
    _each_parses_or_fails_cleanly(texts)


PROTO = jax.jit(lambda x: jnp.sin(x) * 2).lower(jnp.ones(4)).compiler_ir("hlo").as_serialized_hlo_module_proto()


@FUZZ
@given(st.integers(0, len(PROTO) - 1), st.binary(min_size=1, max_size=3))
def test_corrupted_proto_parses_or_fails_cleanly(at, patch):
    _parses_or_fails_cleanly(graph_from_proto, PROTO[:at] + patch + PROTO[at + len(patch) :])
