"""GO's recurrent graphs, unrolled over time in Python so every step is its own ops (a
`lax.scan` would fold into one while op): an LSTM language model and an LSTM encoder-decoder
with attention (NMT), as in GO's RNNLM and GNMT benchmarks."""

import jax
import jax.numpy as jnp

from hlotune.programs.zoo.base import Workload
from hlotune.programs.zoo.layers import dense, dense_init, softmax_cross_entropy


def lstm_init(key, cin: int, hidden: int) -> dict:
    k_in, k_rec = jax.random.split(key)
    recurrent = jax.random.normal(k_rec, (hidden, 4 * hidden)) / jnp.sqrt(hidden)
    return {"input": dense_init(k_in, cin, 4 * hidden), "recurrent": recurrent}


def lstm_cell(p, x, state):
    """One time step of one layer: (h, c) -> (h, c)."""
    h, c = state
    i, f, g, o = jnp.split(dense(p["input"], x) + h @ p["recurrent"], 4, axis=-1)
    c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
    return jax.nn.sigmoid(o) * jnp.tanh(c), c


def lstm_stack(layers, x, states):
    """One time step through every layer: (the top layer's h, the new states)."""
    new = []
    for p, state in zip(layers, states):
        state = lstm_cell(p, x, state)
        new.append(state)
        x = state[0]
    return x, new


def zero_states(layers, batch: int):
    hidden = layers[0]["recurrent"].shape[0]
    zeros = jnp.zeros((batch, hidden))
    return [(zeros, zeros)] * len(layers)


def _stack_init(key, layers: int, cin: int, hidden: int) -> list:
    keys = jax.random.split(key, layers)
    return [lstm_init(k, cin if i == 0 else hidden, hidden) for i, k in enumerate(keys)]


def _tokens(key, batch: int, length: int, vocab: int):
    tokens = jax.random.randint(key, (batch, length + 1), 0, vocab, dtype=jnp.int32)
    return tokens[:, :-1], tokens[:, 1:]


# --- RNN language model -----------------------------------------------------------------------


def rnnlm_init(key, *, batch: int, seq: int, dim: int, hidden: int, layers: int, vocab: int):
    k_embed, k_layers, k_head, k_tokens = jax.random.split(key, 4)
    params = {
        "embed": jax.random.normal(k_embed, (vocab, dim)) * 0.1,
        "layers": _stack_init(k_layers, layers, dim, hidden),
        "head": dense_init(k_head, hidden, vocab),
    }
    return params, *_tokens(k_tokens, batch, seq, vocab)


def rnnlm_apply(params, tokens):
    x = params["embed"][tokens]
    states = zero_states(params["layers"], tokens.shape[0])
    outputs = []
    for t in range(tokens.shape[1]):
        top, states = lstm_stack(params["layers"], x[:, t], states)
        outputs.append(top)
    return dense(params["head"], jnp.stack(outputs, axis=1))


RNNLM = Workload(
    name="rnnlm",
    description="LSTM language model unrolled over time (GO's RNNLM)",
    sizes={
        "tiny": dict(batch=2, seq=4, dim=16, hidden=16, layers=2, vocab=32),
        "small": dict(batch=32, seq=24, dim=256, hidden=512, layers=2, vocab=2048),
        "large": dict(batch=64, seq=64, dim=1024, hidden=1024, layers=4, vocab=8192),
    },
    init=rnnlm_init,
    apply=rnnlm_apply,
    loss=softmax_cross_entropy,
)


# --- NMT: LSTM encoder-decoder with attention -------------------------------------------------


def nmt_init(key, *, batch: int, src: int, tgt: int, hidden: int, layers: int, vocab: int):
    keys = jax.random.split(key, 7)
    params = {
        "src_embed": jax.random.normal(keys[0], (vocab, hidden)) * 0.1,
        "tgt_embed": jax.random.normal(keys[1], (vocab, hidden)) * 0.1,
        "encoder": _stack_init(keys[2], layers, hidden, hidden),
        # Input feeding: the decoder's first layer reads the token and the last attention output.
        "decoder": _stack_init(keys[3], layers, 2 * hidden, hidden),
        "combine": dense_init(keys[4], 2 * hidden, hidden),
        "head": dense_init(keys[5], hidden, vocab),
    }
    source = jax.random.randint(keys[6], (batch, src), 0, vocab, dtype=jnp.int32)
    target_in, target_out = _tokens(jax.random.fold_in(keys[6], 1), batch, tgt, vocab)
    return params, (source, target_in), target_out


def nmt_apply(params, tokens):
    source, target = tokens
    x = params["src_embed"][source]
    states = zero_states(params["encoder"], source.shape[0])
    encoded = []
    for t in range(source.shape[1]):
        top, states = lstm_stack(params["encoder"], x[:, t], states)
        encoded.append(top)
    memory = jnp.stack(encoded, axis=1)  # (batch, src, hidden)
    y = params["tgt_embed"][target]
    attended = jnp.zeros_like(encoded[0])
    outputs = []
    for t in range(target.shape[1]):
        top, states = lstm_stack(params["decoder"], jnp.concatenate([y[:, t], attended], -1),
                                 states)
        weights = jax.nn.softmax(jnp.einsum("bsh,bh->bs", memory, top), axis=-1)
        context = jnp.einsum("bs,bsh->bh", weights, memory)
        attended = jnp.tanh(dense(params["combine"], jnp.concatenate([top, context], -1)))
        outputs.append(attended)
    return dense(params["head"], jnp.stack(outputs, axis=1))


NMT = Workload(
    name="nmt",
    description="LSTM encoder-decoder with attention, unrolled (GO's GNMT-like NMT)",
    sizes={
        "tiny": dict(batch=2, src=3, tgt=3, hidden=16, layers=2, vocab=32),
        "small": dict(batch=32, src=12, tgt=12, hidden=512, layers=2, vocab=2048),
        "large": dict(batch=64, src=40, tgt=40, hidden=1024, layers=4, vocab=8192),
    },
    init=nmt_init,
    apply=nmt_apply,
    loss=softmax_cross_entropy,
)
