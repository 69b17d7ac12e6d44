"""Where measurement batches run: a `Runner` (base.py) on this machine, on a Ray cluster's
workers, or a replay of recorded measurements, made by name from the registry (registry.py)."""
