"""Message-passing GNN node classifier: each edge's message is computed from both its ends
(gather), averaged at the receiver (`segment_sum`), and fed to a residual node update.

The example input is a batch of fixed random graphs joined into one disjoint graph, the way
GNN libraries batch graphs: `batch` graphs of `nodes` nodes and `edges` directed edges each.
"""

import jax
import jax.numpy as jnp

from hlotune.programs.zoo.base import Workload
from hlotune.programs.zoo.layers import dense, dense_init, softmax_cross_entropy


def _layer_init(key, hidden: int) -> dict:
    k_message, k_update = jax.random.split(key)
    return {
        "message": dense_init(k_message, 2 * hidden, hidden),  # from (sender, receiver)
        "update": dense_init(k_update, 2 * hidden, hidden),  # from (node, its mean message)
    }


def init(
    key,
    *,
    batch: int,
    nodes: int,
    edges: int,
    features: int,
    hidden: int,
    layers: int,
    classes: int,
):
    k_embed, k_head, k_x, k_send, k_recv, k_y, *keys = jax.random.split(key, layers + 6)
    params = {
        "embed": dense_init(k_embed, features, hidden),
        "layers": [_layer_init(k, hidden) for k in keys],
        "head": dense_init(k_head, hidden, classes),
    }
    offsets = jnp.arange(batch, dtype=jnp.int32)[:, None] * nodes  # graph i's first node

    def ends(k):
        return (jax.random.randint(k, (batch, edges), 0, nodes, dtype=jnp.int32) + offsets).ravel()

    x = {
        "nodes": jax.random.normal(k_x, (batch * nodes, features)),
        "senders": ends(k_send),
        "receivers": ends(k_recv),
    }
    y = jax.random.randint(k_y, (batch * nodes,), 0, classes, dtype=jnp.int32)
    return params, x, y


def apply(params, graph):
    senders, receivers = graph["senders"], graph["receivers"]
    count = graph["nodes"].shape[0]
    degree = jax.ops.segment_sum(jnp.ones(receivers.shape), receivers, num_segments=count)
    h = jax.nn.relu(dense(params["embed"], graph["nodes"]))
    for p in params["layers"]:
        messages = jax.nn.relu(dense(p["message"], jnp.concatenate([h[senders], h[receivers]], -1)))
        inbox = jax.ops.segment_sum(messages, receivers, num_segments=count)
        inbox = inbox / jnp.maximum(degree, 1.0)[:, None]
        h = h + jax.nn.relu(dense(p["update"], jnp.concatenate([h, inbox], -1)))
    return dense(params["head"], h)


WORKLOAD = Workload(
    name="gnn",
    description="Message-passing GNN (edge gathers, segment_sum mean aggregation, node labels)",
    sizes={
        "tiny": dict(batch=2, nodes=16, edges=48, features=8, hidden=32, layers=2, classes=4),
        "small": dict(batch=8, nodes=128, edges=512, features=32, hidden=64, layers=3, classes=8),
        "base": dict(
            batch=8, nodes=1024, edges=8192, features=64, hidden=128, layers=4, classes=16
        ),
    },
    init=init,
    apply=apply,
    loss=softmax_cross_entropy,
)
