"""LSTM language model: token embedding, stacked LSTM layers run over time by `lax.scan`, and
next-token logits.

The input projections of a whole sequence are one matmul before the scan; only the recurrent
matmul stays inside the loop, as in cuDNN-style LSTMs.
"""

import jax
import jax.numpy as jnp

from hlotune.programs.zoo.base import Workload
from hlotune.programs.zoo.layers import dense, dense_init, softmax_cross_entropy


def _lstm_init(key, cin: int, hidden: int) -> dict:
    k_in, k_rec = jax.random.split(key)
    recurrent = jax.random.normal(k_rec, (hidden, 4 * hidden)) / jnp.sqrt(hidden)
    return {"input": dense_init(k_in, cin, 4 * hidden), "recurrent": recurrent}


def _lstm(p, xs):
    """(batch, seq, cin) -> (batch, seq, hidden), from zero state."""
    hidden = p["recurrent"].shape[0]

    def step(carry, gates_in):
        h, c = carry
        i, f, g, o = jnp.split(gates_in + h @ p["recurrent"], 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), h

    zeros = jnp.zeros((xs.shape[0], hidden), xs.dtype)
    _, hs = jax.lax.scan(step, (zeros, zeros), dense(p["input"], xs).swapaxes(0, 1))
    return hs.swapaxes(0, 1)


def init(key, *, batch: int, seq: int, dim: int, hidden: int, layers: int, vocab: int):
    key_embed, key_head, key_tokens, *keys = jax.random.split(key, layers + 3)
    params = {
        "embed": jax.random.normal(key_embed, (vocab, dim)) * 0.1,
        "layers": [_lstm_init(k, dim if i == 0 else hidden, hidden) for i, k in enumerate(keys)],
        "head": dense_init(key_head, hidden, vocab),
    }
    tokens = jax.random.randint(key_tokens, (batch, seq + 1), 0, vocab, dtype=jnp.int32)
    return params, tokens[:, :-1], tokens[:, 1:]


def apply(params, tokens):
    x = params["embed"][tokens]
    for p in params["layers"]:
        x = _lstm(p, x)
    return dense(params["head"], x)


WORKLOAD = Workload(
    name="lstm",
    description="LSTM language model (stacked LSTM layers via lax.scan, next-token loss)",
    sizes={
        "tiny": dict(batch=2, seq=8, dim=16, hidden=32, layers=1, vocab=64),
        "small": dict(batch=8, seq=32, dim=64, hidden=128, layers=2, vocab=512),
        "base": dict(batch=32, seq=64, dim=256, hidden=512, layers=2, vocab=4096),
    },
    init=init,
    apply=apply,
    loss=softmax_cross_entropy,
)
