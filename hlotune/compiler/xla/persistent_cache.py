"""jax's persistent compilation cache, off around the compiles it would answer wrongly.

jax keys the cache on the module as lowered and on the options that change the executable. Two
kinds of hlotune compile must reach XLA itself: one edited by hlotune's pass (hook.py), whose
edit the key cannot see, and one that reads what XLA's passes dumped (xla_support.py), whose
dump options the key leaves out. jax decides once per process whether the cache is used, so
turning its option off is not enough: that decision is reset on the way in and on the way out.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def persistent_cache_off() -> Iterator[None]:
    import jax
    from jax.experimental.compilation_cache import compilation_cache

    was = jax.config.jax_enable_compilation_cache
    jax.config.update("jax_enable_compilation_cache", False)
    compilation_cache.reset_cache()
    try:
        yield
    finally:
        jax.config.update("jax_enable_compilation_cache", was)
        compilation_cache.reset_cache()
