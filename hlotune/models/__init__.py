"""Learned cost models: a GraphSAGE network that ranks the compiler configs of an HLO graph."""

from hlotune.models.config import ModelConfig
from hlotune.models.gnn import GraphContext, GraphCostModel
from hlotune.models.inputs import (
    GraphInputs,
    check_compatible,
    config_inputs,
    data_fields,
    graph_inputs,
)
from hlotune.models.normalizer import FeatureStats, fit_feature_stats
from hlotune.models.predict import predict_scores

__all__ = [
    "FeatureStats",
    "GraphContext",
    "GraphCostModel",
    "GraphInputs",
    "ModelConfig",
    "check_compatible",
    "config_inputs",
    "data_fields",
    "fit_feature_stats",
    "graph_inputs",
    "predict_scores",
]
