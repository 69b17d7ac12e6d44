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
    from jax.extend.core import jaxprs_in_params

    for eqn in jaxpr.eqns:
        callback = eqn.params.get("callback")
        if callable(callback):
            yield getattr(callback, "callback_func", callback)  # pure_callback wraps it
        for inner in jaxprs_in_params(eqn.params):
            yield from _callbacks(inner)


def _module(callback: Callable) -> str:
    return getattr(callback, "__module__", None) or ""
