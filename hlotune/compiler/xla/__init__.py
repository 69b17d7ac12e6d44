"""hlotune's pass inside XLA:CPU's pipeline: the module it is handed, the kernels and thunks
read from it, the fusion rewrites and entry order it applies, and the compile cache around it."""
