"""How `tune()` builds a tune's parts from its options: one recipe per space (registry.py), each
a `Recipe` (base.py) that says what its space does differently."""
