"""The learned cost model: scores the configs of one graph, lower = predicted faster.

    node  -> opcode embedding + normalised features -> MLP                   (once per graph)
          -> join configs (graph-level: every node or after pooling; layout: configurable
             nodes, before message passing or after it)
          -> graph layers over both edge directions (GraphSAGE, GAT, GIN or GPS: `convs.py`),
             each [instance-normalised over the nodes] [+ its input]
          -> concat(sum, mean) pooling -> MLP -> [attention across configs]
             -> [softmax over the config axis] -> head [+ w * analytical cost] -> score

Training and tuning score many configs of the same graph, so the model is split in two:
`encode_graph` does everything that does not depend on the config once, and `score` runs only
the config-dependent rest for a batch of C configs. How much is shared depends on the join:
late join shares the whole GNN (a config is then one vector against the pooled graph, or for
layout its sites against their nodes' final embeddings); early join and layout configs joined
at the nodes need message passing per config, which for layout runs only on the configurable
nodes' neighbourhood when `prune_hops` is set (see `prune.py`). `config_layers` shares the
first layers too and joins the configs before the last ones only, so their neighbourhood is
that many hops.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from hlotune.errors import HlotuneError
from hlotune.hlo.opcodes import NUM_OPCODES
from hlotune.models.attention import ConfigSoftmax, CrossConfigAttention
from hlotune.models.settings import ModelSettings
from hlotune.models.convs import make_conv
from hlotune.models.files import CONFIG_FILE, WEIGHTS_FILE, read_model_files, write_model_files
from hlotune.models.inputs import GraphInputs
from hlotune.models.layout_embedding import VALUES, LayoutEmbedding
from hlotune.models.norm import GraphInstanceNorm
from hlotune.models.normalizer import FeatureStats, SignLogNormalizer
from hlotune.models.prune import Subgraph, prune


@dataclass
class GraphContext:
    """The config-independent part of one graph, computed once and reused for all its configs.

    Late join keeps only `pooled`. Otherwise the config-dependent layers run over `nodes`
    (all nodes, or a pruned subgraph whose dropped part is summarised by `outside`, the
    messages it sends in at each layer, and `outside_sum`, its pooled final embeddings).
    """

    num_nodes: int
    pooled: Tensor | None = None  # (2H,) late join: readout of the config-free GNN
    nodes: Tensor | None = None  # (k, H) encoded nodes the config-dependent layers run on
    edge_index: Tensor | None = None  # (2, m_k) among `nodes`
    config_nodes: Tensor | None = None  # (nc,) layout: positions of configurable nodes in `nodes`
    outside: list[Tensor] | None = None  # per layer (k, 2H): messages from dropped nodes
    outside_sum: Tensor | float = 0.0  # (H,) sum of the dropped nodes' final embeddings
    sites: Tensor | None = None  # (nc, H) layout late join: final states of configurable nodes

    @property
    def rows_per_config(self) -> int:
        """Node rows each config propagates: what memory per config scales with."""
        if self.sites is not None:
            return max(1, int(self.sites.shape[0]))
        return 1 if self.nodes is None else int(self.nodes.shape[0])


class GraphCostModel(nn.Module):
    def __init__(self, config: ModelSettings) -> None:
        if not config.complete:
            raise HlotuneError("model config: collection, node_feat_dim and config_dim must be set")
        super().__init__()
        self.config = config
        hidden, dropout = config.hidden_dim, config.dropout
        self.node_norm = SignLogNormalizer(config.node_feat_dim)
        self.opcode_embedding = nn.Embedding(NUM_OPCODES, config.opcode_dim)
        self.node_encoder = _mlp(config.opcode_dim + config.node_feat_dim, hidden, hidden, dropout)
        if config.collection == "layout":
            self.config_encoder: nn.Module = LayoutEmbedding(hidden)
        else:
            self.config_norm = SignLogNormalizer(config.config_dim)
            self.config_encoder = _mlp(config.config_dim, hidden, hidden, dropout)
        self.convs = nn.ModuleList(
            make_conv(config.conv, hidden, config.attention_heads) for _ in range(config.num_layers)
        )
        self.norms = (
            nn.ModuleList(GraphInstanceNorm(hidden) for _ in range(config.num_layers))
            if config.instance_norm
            else None
        )
        shared = self.late_join or self.layout_late
        self.embed = _mlp(2 * hidden + (hidden if shared else 0), hidden, hidden, dropout)
        if self.layout_late:
            self.site_encoder = _mlp(2 * hidden, hidden, hidden, dropout)
        if config.layout_join == "sites":
            self.site_attention = CrossConfigAttention(hidden, config.attention_heads, dropout)
        self.attention = (
            CrossConfigAttention(hidden, config.attention_heads, dropout)
            if config.cross_config_attention
            else None
        )
        self.config_softmax = ConfigSoftmax(hidden) if config.config_softmax else None
        self.prior_weight = nn.Parameter(torch.zeros(())) if config.analytical_prior else None
        self.head = _mlp(hidden, hidden, 1, dropout)

    @property
    def late_join(self) -> bool:
        return self.config.collection != "layout" and self.config.join == "late"

    @property
    def layout_late(self) -> bool:
        return self.config.collection == "layout" and self.config.layout_join in ("late", "sites")

    @property
    def device(self) -> torch.device:
        return self.head[0].weight.device

    def set_feature_stats(self, stats: FeatureStats) -> None:
        """Fix the feature scaling to the training data's (see `normalizer.py`)."""
        self.node_norm.set_stats(stats.node)
        if stats.config is not None:
            self.config_norm.set_stats(stats.config)

    def forward(self, graph: GraphInputs, configs: Tensor, prior: Tensor | None = None) -> Tensor:
        """Scores `(C,)` of C configs of one graph, `(C, config_dim)` or `(C, nc, 18)` (layout);
        `prior` `(C,)`: their analytical costs, for a model with `analytical_prior`."""
        return self.score(self.encode_graph(graph), configs, prior)

    @property
    def shared_layers(self) -> int:
        """Layers before any config joins, run once per graph: all of them with a late join."""
        if self.late_join or self.layout_late:
            return len(self.convs)
        return len(self.convs) - (self.config.config_layers or len(self.convs))

    def encode_graph(self, graph: GraphInputs) -> GraphContext:
        n, shared, edges = graph.num_nodes, self.shared_layers, self._edges(graph.edge_index)
        nodes = self._propagate(self._encode_nodes(graph), edges, range(shared))
        if self.late_join or self.layout_late:
            sites = nodes[graph.node_config_ids] if self.layout_late else None
            return GraphContext(n, pooled=_readout(nodes.sum(dim=-2), n), sites=sites)
        whole = GraphContext(n, nodes=nodes, edge_index=edges, config_nodes=graph.node_config_ids)
        hops = self.config.pruning_hops
        if graph.node_config_ids is None or hops is None:
            return whole
        subgraph = prune(edges, graph.node_config_ids, n, hops)
        return whole if subgraph.is_whole_graph else self._pruned(nodes, edges, subgraph)

    def _pruned(self, nodes: Tensor, edge_index: Tensor, subgraph: Subgraph) -> GraphContext:
        """Run the config layers once over the whole graph without configs, to summarise the
        dropped part.

        A dropped node is more than its hops from every configurable node, so with hops >= the
        config layers no config reaches it: its embeddings here are exact, and so are the
        messages it sends into the subgraph.
        """
        kept, boundary, n = subgraph.nodes, subgraph.boundary_edge_index, subgraph.num_nodes
        outside, state = [], nodes
        for index in range(self.shared_layers, len(self.convs)):
            outside.append(self.convs[index].summed_messages(state, boundary, n)[kept])
            state = self._layer(index, state, edge_index)
        dropped = torch.ones(n, dtype=torch.bool, device=nodes.device)
        dropped[kept] = False
        return GraphContext(
            n,
            nodes=nodes[kept],
            edge_index=subgraph.edge_index,
            config_nodes=subgraph.seeds,
            outside=outside,
            outside_sum=state[dropped].sum(dim=0),
        )

    def score(self, context: GraphContext, configs: Tensor, prior: Tensor | None = None) -> Tensor:
        """Scores `(C,)` of C configs against a graph's `encode_graph` context."""
        if self.late_join or self.layout_late:
            return self._head(context.pooled, configs, prior, context.sites)
        x = self._join(context, configs)
        layers = range(self.shared_layers, len(self.convs))
        for index, messages in zip(layers, context.outside or [None] * len(layers)):
            x = self._layer(index, x, context.edge_index, messages)
        pooled = _readout(x.sum(dim=-2) + context.outside_sum, context.num_nodes)
        return self._head(pooled, configs, prior)

    def segment_sum(self, segment: GraphInputs, configs: Tensor) -> Tensor:
        """Sum of the final node states of one GST segment run on its own (edges leaving it cut):
        `(C, H)` for its slice of the config batch, or `(1, H)` when no config reaches it (late
        join, or a layout segment without configurable nodes), which then runs once, not C times.
        """
        shared, edges = self.shared_layers, self._edges(segment.edge_index)
        x = self._propagate(self._encode_nodes(segment), edges, range(shared))
        ids = segment.node_config_ids
        if not self.late_join and (ids is None or ids.numel()):
            x = self._join(GraphContext(segment.num_nodes, nodes=x, config_nodes=ids), configs)
        x = self._propagate(x, edges, range(shared, len(self.convs)))
        return x.sum(dim=-2).reshape(-1, x.shape[-1])

    def score_segments(
        self, total: Tensor, num_nodes: int, configs: Tensor, prior: Tensor | None = None
    ) -> Tensor:
        """Scores `(C,)` from the segments' summed `segment_sum`s over a graph of `num_nodes`:
        the same readout as `score`, so a segmentation that cuts no edge gives the same scores."""
        return self._head(_readout(total.expand(len(configs), -1), num_nodes), configs, prior)

    def _layer(
        self, index: int, x: Tensor, edge_index: Tensor, outside: Tensor | None = None
    ) -> Tensor:
        """Graph layer `index`, then its instance norm and residual where the config asks."""
        y = self.convs[index](x, edge_index, outside)
        if self.norms is not None:
            y = self.norms[index](y)
        return y + x if self.config.residual else y

    def _propagate(self, x: Tensor, edge_index: Tensor, layers: range) -> Tensor:
        for index in layers:
            x = self._layer(index, x, edge_index)
        return x

    def _edges(self, edge_index: Tensor) -> Tensor:
        """DropEdge: in training, each step sees the graph with a random `drop_edge` of its edges
        removed, so the model cannot lean on any one path (a regulariser for few graphs)."""
        if not (self.training and self.config.drop_edge):
            return edge_index
        from torch_geometric.utils import dropout_edge

        return dropout_edge(edge_index, p=self.config.drop_edge, force_undirected=False)[0]

    def _encode_nodes(self, graph: GraphInputs) -> Tensor:
        opcodes = self.opcode_embedding(graph.node_opcode)
        return self.node_encoder(torch.cat((opcodes, self.node_norm(graph.node_feat)), dim=-1))

    def _head(
        self, features: Tensor, configs: Tensor, prior: Tensor | None, sites: Tensor | None = None
    ) -> Tensor:
        """Pooled `(C or 1, 2H)` readout -> scores `(C,)`; late join adds the configs here: a
        graph-level config as one vector, a layout as the sum over its sites of each site's
        layout met with its node's final embedding (`sites`), after the sites of a config
        attended to each other with layout_join "sites". The analytical prior is added last."""
        if self.late_join:
            encoded = self.config_encoder(self.config_norm(configs))
            features = torch.cat((features.expand(len(configs), -1), encoded), dim=-1)
        elif self.layout_late:
            met = self.site_sum(sites, configs)
            features = torch.cat((features.expand(len(configs), -1), met), dim=-1)
        embedded = self.embed(features)
        if self.attention is not None:
            embedded = self.attention(embedded)
        if self.config_softmax is not None:
            embedded = self.config_softmax(embedded)
        scores = self.head(embedded).squeeze(-1)
        if self.prior_weight is None:
            return scores
        if prior is None:
            raise HlotuneError("this model adds the analytical prior to its scores: pass the "
                               "configs' costs (models.inputs.prior_inputs)")
        return scores + self.prior_weight * prior

    def site_sum(self, sites: Tensor, configs: Tensor) -> Tensor:
        """`(C, H)`: over a layout's sites, each site's layout met with its node's final state
        `sites` `(nc, H)`, the sites of a config attending to each other first ("sites").

        A site's state depends on its node and its layout alone, and the configs ranked
        together share most of theirs (a search changes a few sites at a time), so it is
        computed once per distinct (site, layout) pair and gathered; with "sites" the
        attention then runs per config on the gathered projections (`CrossConfigAttention.
        summed`). With dropout in training, every site of every config runs on its own."""
        # site_encoder on concat(node, layout), its first linear layer split in two: the node
        # half once per graph, the layout half folded into the layout embedding's table (a
        # linear map of a sum of embeddings is the sum of mapped embeddings), so a site costs
        # its lookups and the rest of the MLP, not a concatenation.
        first, rest = self.site_encoder[0], self.site_encoder[1:]
        hidden = sites.shape[-1]
        nodes = F.linear(sites, first.weight[:, :hidden], first.bias)  # (nc, H)
        table = self.config_encoder.table.weight @ first.weight[:, hidden:].T
        attend = self.config.layout_join == "sites"
        if self.training and self.config.dropout:
            met = rest(self.config_encoder(configs, table) + nodes)  # (C, nc, H)
            return (self.site_attention(met) if attend else met).sum(dim=-2)
        pair_sites, pair_layouts, index = distinct_site_layouts(configs)
        met = rest(self.config_encoder(pair_layouts, table) + nodes[pair_sites])  # (U, H)
        return self.site_attention.summed(met, index) if attend else F.embedding_bag(index, met, mode="sum")

    def _join(self, context: GraphContext, configs: Tensor) -> Tensor:
        """`(C, k, H)` node states with each config added in: at every node (graph-level; adding a
        projection is a concatenation followed by a linear layer), or at the configurable nodes."""
        if context.config_nodes is None:
            return context.nodes + self.config_encoder(self.config_norm(configs)).unsqueeze(-2)
        layouts = self.config_encoder(configs)  # (C, nc, H)
        states = context.nodes.expand(len(configs), -1, -1)
        return states.index_add(-2, context.config_nodes, layouts)

    def save(self, model_dir: str | os.PathLike[str]) -> None:
        """Write `config.json` and `model.safetensors` (weights and feature statistics)."""
        write_model_files(model_dir, self.config.to_dict(), self.state_dict())

    @classmethod
    def load(
        cls, model_dir: str | os.PathLike[str], device: torch.device | str = "cpu"
    ) -> GraphCostModel:
        """Rebuild a saved model, in eval mode (scoring is what loading is for, and switching
        modes per call walks every submodule); HlotuneError for a missing, corrupt or
        inconsistent folder."""
        raw_config, tensors = read_model_files(model_dir)
        try:
            config = ModelSettings.from_dict(raw_config)
            model = cls(config)
        except HlotuneError as err:
            raise HlotuneError(f"{Path(model_dir) / CONFIG_FILE}: {err}") from None
        problem = _state_problem(model.state_dict(), tensors)
        if problem:
            raise HlotuneError(f"{Path(model_dir) / WEIGHTS_FILE}: {problem}")
        model.load_state_dict(tensors)
        return model.to(device).eval()


def distinct_site_layouts(configs: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """The distinct (site, layout) pairs of layout configs `(C, nc, 18)`: the site `(U,)` and
    layout `(U, 18)` of each, and which pair each config has at each site `(C, nc)`."""
    count, sites = configs.shape[0], configs.shape[1]
    digits = torch.tensor(VALUES, dtype=torch.long, device=configs.device) ** torch.arange(
        configs.shape[-1], device=configs.device)  # 7**18 < 2**63: one integer per layout
    codes = ((configs.long() + 1) * digits).sum(dim=-1)
    _, layout_ids = torch.unique(codes, return_inverse=True)
    site_ids = torch.arange(sites, device=configs.device)
    keys, index = torch.unique(layout_ids * sites + site_ids, return_inverse=True)
    first = torch.empty(len(keys), dtype=torch.long, device=configs.device)
    first.scatter_(0, index.flatten(), torch.arange(count * sites, device=configs.device))
    return keys % sites, configs.reshape(-1, configs.shape[-1])[first], index


def _state_problem(expected: dict[str, Tensor], found: dict[str, Tensor]) -> str | None:
    missing = sorted(set(expected) - set(found))
    if missing:
        return f"{len(missing)} tensors missing for this config.json ({_some(missing)})"
    unexpected = sorted(set(found) - set(expected))
    if unexpected:
        return f"{len(unexpected)} tensors this config.json does not use ({_some(unexpected)})"
    for key, tensor in expected.items():
        if found[key].shape != tensor.shape or found[key].dtype != tensor.dtype:
            return (
                f"{key}: {found[key].dtype} {tuple(found[key].shape)}, this config.json needs "
                f"{tensor.dtype} {tuple(tensor.shape)}"
            )
    return None


def _some(names: list[str]) -> str:
    return ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")


def _readout(total: Tensor, num_nodes: int) -> Tensor:
    """concat(sum, mean): the sum keeps a config's local change at full size in a big graph,
    the mean gives a size-independent view."""
    return torch.cat((total, total / max(num_nodes, 1)), dim=-1)


def _mlp(width_in: int, hidden: int, width_out: int, dropout: float) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(width_in, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, width_out)
    )
