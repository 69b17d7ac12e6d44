"""Multi-task learning over the two config spaces: flags and layout graphs are the same programs.

Two ways share what one space's model learns about graphs with the other's:
- sequential (`transfer_node_layers`, `--init-from`): a run starts its node layers from a
  model trained on the other space;
- joint (`JointTask`, `--joint-data`): a run trains a companion model on the other space's
  graphs beside its own, the two holding one set of node layers (opcode embedding, feature
  scaling, node encoder, graph layers) and each its own config encoder and head. Every step
  then takes a graph of each space, so the shared layers learn from both at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from hlotune.data.dataset import Dataset
from hlotune.errors import HlotuneError
from hlotune.models.gnn import GraphCostModel

NODE_LAYERS = ("opcode_embedding.", "node_encoder.", "convs.", "norms.")
# The modules a joint companion shares with the model: NODE_LAYERS and the node features'
# scaling, which must be one for a shared node encoder to see one input distribution.
SHARED_MODULES = ("node_norm", "opcode_embedding", "node_encoder", "convs", "norms")


def transfer_node_layers(source: GraphCostModel, target: GraphCostModel) -> None:
    """Copy `source`'s node layers (opcode embedding, node encoder, graph layers) into `target`;
    its feature scaling, config encoder and head stay its own. A one-line HlotuneError when the
    layers differ."""
    mine = target.state_dict()
    theirs = {k: v for k, v in source.state_dict().items() if k.startswith(NODE_LAYERS)}
    wanted = {k for k in mine if k.startswith(NODE_LAYERS)}
    if set(theirs) != wanted or any(theirs[k].shape != mine[k].shape for k in wanted):
        raise HlotuneError(
            "--init-from: that model's node layers differ from this one's (hidden size, layers, "
            "conv, node features or instance norm)"
        )
    target.load_state_dict(mine | theirs)


@dataclass
class JointTask:
    """The other space's half of a joint run: its graphs and the companion model."""

    train_sets: list[Dataset]
    files: list[tuple[int, int]]  # its labelled graphs, as the trainer's (dataset, index)
    companion: GraphCostModel
    weight: float  # of its loss beside the model's own

    @classmethod
    def tied(
        cls,
        model: GraphCostModel,
        companion: GraphCostModel,
        train_sets: list[Dataset],
        files: list[tuple[int, int]],
        weight: float,
    ) -> JointTask:
        """The task with `companion` using `model`'s node layers and feature scaling as its own
        (the same modules, so one optimizer step moves both models' shared part)."""
        mine, theirs = model.config, companion.config
        if theirs.collection == mine.collection:
            raise HlotuneError(f"--joint-data: {theirs.collection} graphs like --data; joint "
                               "training takes the other space's graphs")
        if theirs.node_feat_dim != mine.node_feat_dim:
            raise HlotuneError(f"--joint-data: its graphs have {theirs.node_feat_dim} node "
                               f"features, --data's {mine.node_feat_dim}")
        for name in SHARED_MODULES:
            setattr(companion, name, getattr(model, name))
        return cls(train_sets, files, companion, weight)
