"""The layout space: each tensor's layout."""

from __future__ import annotations

from hlotune.tuning.recipes.base import Recipe


class LayoutRecipe(Recipe):
    """No warm start: other programs' winners are taken by their flags, and this space has none
    (their layouts name another program's tensors)."""

    warm_starts = False
