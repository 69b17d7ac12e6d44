"""Baselines a learned cost model must beat: analytical rules and gradient-boosted trees.

analytical.py: hand-written rules per collection, nothing trained; gbdt.py: LightGBM on the
fixed-width rows of features.py; layout_changes.py: the layout transposes both read.
"""

from hlotune.models.baselines.analytical import analytical_scores
from hlotune.models.baselines.gbdt import GbdtBaseline

__all__ = ["GbdtBaseline", "analytical_scores"]
