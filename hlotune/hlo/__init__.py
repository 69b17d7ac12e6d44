"""HLO in: JAX lowering, HLO text and protos, turned into graphs with the 140 TpuGraphs features."""
