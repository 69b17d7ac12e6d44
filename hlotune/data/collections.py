"""The kinds of collection, in one place. A collection is data: measured configs of programs,
one kind of config each (docs/architecture.md's glossary); a space (compiler/spaces/space.py) is what
a tune searches, and some spaces have no collection of their own ("all")."""

from __future__ import annotations

KINDS = ("tile", "layout", "flags", "fusion")  # TpuGraphs' tile and layout, and ours
LEARNED = ("tile", "layout", "flags")  # what the cost models learn from (fusion: the fusion policy's data)
COLLECTED = ("flags", "layout", "fusion")  # what `hlotune collect` measures (tile: kernels/tile_collection.py)
BUILTIN = ("flags", "layout", "tile")  # the built-in dataset's (hlotune.data.builtin)
# the collections whose models rank each space's configs (fusion: its own policy, not a cost model)
RANKING = {"flags": ("flags",), "layout": ("layout",), "tile": ("tile",), "all": ("flags", "layout")}
