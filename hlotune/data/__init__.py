"""The TpuGraphs format: npz files, their schema, datasets, and the ranking metrics every stage scores with."""
