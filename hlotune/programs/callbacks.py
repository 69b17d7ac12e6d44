"""Host callbacks: the Python calls inside a program that jax.export cannot serialize.

Such a program cannot cross to a worker process, so it is measured in the user's process; the
user is told why in one line, with the fix where one is known (equinox's runtime checks become
NaNs, and exportable, under EQX_ON_ERROR=nan).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator


def callback_reason(fn: Callable, args: tuple) -> str:
    """Whose host callbacks `fn(*args)` makes, and how to avoid them where known: words that
    follow "its host callbacks are"."""
    import jax

    modules = {_module(callback) for callback in _callbacks(jax.make_jaxpr(fn)(*args).jaxpr)}
    sources = []
    if any(module.startswith("equinox") for module in modules):
        sources.append("equinox's runtime checks (EQX_ON_ERROR=nan makes them exportable)")
    if any(not module.startswith("equinox") for module in modules) or not sources:
        sources.append("jax.debug or jax.pure_callback callbacks")
    return " and ".join(sources)


def _callbacks(jaxpr) -> Iterator[Callable]:
    """The Python function of every callback equation, nested jaxprs included."""
    for eqn in jaxpr.eqns:
        callback = eqn.params.get("callback")
        if callable(callback):
            yield getattr(callback, "callback_func", callback)  # pure_callback wraps it
        for inner in _jaxprs(eqn.params):
            yield from _callbacks(inner)


def _jaxprs(params: dict) -> Iterator:
    """The jaxprs among an equation's parameters (a cond's branches, a jit's, a scan's):
    duck-typed, as jax.extend.core.jaxprs_in_params, which jax 0.8 lacks, does."""
    for value in params.values():
        for item in value if isinstance(value, (tuple, list)) else (value,):
            inner = getattr(item, "jaxpr", item)  # a ClosedJaxpr's
            if hasattr(inner, "eqns"):
                yield inner


def _module(callback: Callable) -> str:
    return getattr(callback, "__module__", None) or ""
