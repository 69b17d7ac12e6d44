"""Benchmarks run from the `hlotune bench` command."""
