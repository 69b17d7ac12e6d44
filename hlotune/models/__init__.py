"""Learned cost models: a GraphSAGE network that ranks the compiler configs of an HLO graph.

Heavy imports (torch) wait until first use, so that a submodule without them (settings.py,
files.py, the baselines) imports without torch. `hlotune.models.config`, settings.py's name
before 1.2, imports it with a DeprecationWarning for one release.
"""

from __future__ import annotations

from hlotune.deprecation import moved_modules
from hlotune.lazy import lazy_attributes

_API = {
    "FeatureStats": ("hlotune.models.normalizer", "FeatureStats"),
    "GraphContext": ("hlotune.models.gnn", "GraphContext"),
    "GraphCostModel": ("hlotune.models.gnn", "GraphCostModel"),
    "GraphInputs": ("hlotune.models.inputs", "GraphInputs"),
    "ModelSettings": ("hlotune.models.settings", "ModelSettings"),
    "check_compatible": ("hlotune.models.inputs", "check_compatible"),
    "config_inputs": ("hlotune.models.inputs", "config_inputs"),
    "data_fields": ("hlotune.models.inputs", "data_fields"),
    "fit_feature_stats": ("hlotune.models.normalizer", "fit_feature_stats"),
    "graph_inputs": ("hlotune.models.inputs", "graph_inputs"),
    "predict_scores": ("hlotune.models.predict", "predict_scores"),
}
# Old name -> new, kept one release: `Config` names compiler configurations only.
_RENAMED = {"ModelConfig": "ModelSettings"}
__all__ = sorted(_API)
__getattr__ = lazy_attributes(__name__, _API, _RENAMED)
moved_modules({f"{__name__}.config": f"{__name__}.settings"})
