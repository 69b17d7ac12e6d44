"""hlotune: machine learning for ML compilers (TpuGraphs graphs, cost models, XLA autotuning)."""

__version__ = "0.1.0"
