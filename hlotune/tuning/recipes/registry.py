"""The spaces `hlotune tune --space` names (compiler/spaces/space.py's kinds), each with the recipe
that builds its search, imported when a tune builds one: the command line lists its choices
without importing any."""

from __future__ import annotations

from hlotune.lazy import Imported


def _recipe(module: str, name: str) -> Imported:
    return Imported(f"hlotune.tuning.recipes.{module}", name)


# name -> the Recipe class, called with the tune's Build
SPACES: dict[str, Imported] = {
    "flags": _recipe("flags", "FlagsRecipe"),
    "layout": _recipe("layout", "LayoutRecipe"),
    "tile": _recipe("tile", "TileRecipe"),
    "fusion": _recipe("fusion", "FusionRecipe"),
    "all": _recipe("all", "AllRecipe"),
}
