"""A program's configs as independent genes (flags x layouts x kernel options, tiles,
fusions), and the one encoding of configs that collection writes and cost models read."""
