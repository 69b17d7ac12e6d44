"""Where a compiled program's time goes, kernel by kernel, from jax.profiler traces:
`hlotune profile` and the kernel labels of the kernel collections."""
