"""Sorting the keywords of hlotune.tune, hlotune.compiled and @hlotune.autotune.

`tune(fn, *args, budget=8, mode="fast")` takes the function's example call beside its own
options, as `Executor.submit` does: a keyword that names an option is one (an option wins over
a parameter of the same name, which can still be passed positionally), and any other goes to
the function where its signature takes it. A keyword that is neither is more often a typo than
not, so it is an HlotuneError naming it and the closest name, never the bare TypeError of an
unexpected keyword; jax.jit's options other than the static ones are named as such.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Collection
from dataclasses import fields
from typing import Any

from hlotune.errors import HlotuneError
from hlotune.tuning.options import TuneOptions

OPTION_NAMES = frozenset(f.name for f in fields(TuneOptions))  # tune's and autotune's options


def split_keywords(keywords: dict[str, Any], api: Callable, options: Collection[str],
                   fn: Callable | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the `options` among `keywords`, the arguments `fn` takes) for a call of `api`; any
    other keyword is an HlotuneError."""
    params = _parameters(fn)
    takes_any = any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params)
    arguments = {p.name for p in params if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                      inspect.Parameter.KEYWORD_ONLY)}
    chosen, passed = {}, {}
    for name, value in keywords.items():
        if name in options:
            chosen[name] = value
        elif fn is not None and (takes_any or name in arguments):
            passed[name] = value
        else:
            raise HlotuneError(_unknown(name, api, [*options, *_own(api), *arguments]))
    return chosen, passed


def _unknown(name: str, api: Callable, known: list[str]) -> str:
    import jax

    where = f"hlotune.{api.__name__}"
    if name in inspect.signature(jax.jit).parameters:
        return f"{where} does not take jax.jit's option {name!r}, only static_argnums and static_argnames"
    close = difflib.get_close_matches(name, known, n=1)
    return f"unknown option {name!r} for {where}" + (f": did you mean {close[0]!r}?" if close else "")


def _own(api: Callable) -> list[str]:
    """`api`'s named keyword parameters: typos of them are worth suggesting too."""
    return [p.name for p in inspect.signature(api).parameters.values()
            if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]


def _parameters(fn: Callable | None) -> list[inspect.Parameter]:
    if fn is None:
        return []
    try:
        return list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # a builtin or C callable: it takes what it is given
        return [inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD)]
