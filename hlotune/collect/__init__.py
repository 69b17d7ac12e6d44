"""Collection: programs x configs measured on this machine into TpuGraphs files, and the built-in dataset."""
