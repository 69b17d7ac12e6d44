"""`hlotune.jit`: jax.jit that records what the process runs and applies stored decisions.

The AutoFDO loop of XTAT, for JAX: record what actually runs, tune it offline (`hlotune tune`
on the recorded program, from any process or machine that shares the database), apply the
decision at the next compile with no change to the code. `hlotune.jit(fn)` is called as
`jax.jit(fn)` is. The first call of each signature (static values, shapes and dtypes) exports
the program, records it in the tuning database with its fingerprint, name and argument shapes,
and looks for a decision made on this machine under this jax; with one (numerics-safe unless
`allow_numerics_change`), it compiles under the chosen config and says so once; without one,
it compiles exactly as jax.jit would. Calls are counted and some timed (recorder.py).

`hlotune.install()` routes `jax.jit` itself through hlotune.jit, for code the user does not
own; functions jitted before it ran, and jax's own, stay as they were. Options only jax.jit
understands (shardings, devices, backends) leave the function to plain jax.jit, unrecorded;
`HLOTUNE_DISABLE=1` turns both off. A database that cannot be used is warned about once and
the program compiles as jax.jit would (recorder.py).
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hlotune.programs.calls import BoundCall, jit_function
from hlotune.tuning.autotune import Autotuned
from hlotune.tuning.options import TuneOptions

DISABLE = "HLOTUNE_DISABLE"
_JAX_ONLY = frozenset({"in_shardings", "out_shardings", "device", "backend", "abstracted_axes",
                       "compiler_options"})  # what a decision's compile cannot honour
_original_jit: Callable | None = None  # jax.jit as it was before install()
_inside = threading.local()  # set while hlotune compiles: its own jax.jit calls go to jax


def jit(fun: Callable | None = None, *, static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Sequence[str] | None = None, db: str | Path | None = None,
        allow_numerics_change: bool = False, **jax_options: Any) -> Any:
    """`fun` jitted, recorded and tuned where a decision exists (see the module); as a
    decorator, `@hlotune.jit` or `@hlotune.jit(static_argnums=...)`. `db` is the tuning
    database (a file or a postgresql:// URL; default $HLOTUNE_DB or
    ~/.cache/hlotune/tuning.sqlite); `jax_options` are jax.jit's other arguments."""
    if fun is None:
        return functools.partial(jit, static_argnums=static_argnums, static_argnames=static_argnames,
                                 db=db, allow_numerics_change=allow_numerics_change, **jax_options)
    plain = _jax_jit()
    if os.environ.get(DISABLE) == "1" or _JAX_ONLY & jax_options.keys() or getattr(_inside, "active", False):
        return plain(fun, static_argnums=static_argnums, static_argnames=static_argnames, **jax_options)
    return Jitted(fun, static_argnums, static_argnames, db, allow_numerics_change, jax_options)


class Jitted(Autotuned):
    """A function under hlotune.jit. What jax.jit's wrapper offers beyond calling it (lower,
    trace, eval_shape) comes from jax.jit's own wrapper of the same function."""

    def __init__(self, fun: Callable, static_argnums, static_argnames, db, allow_numerics_change: bool,
                 jax_options: dict[str, Any]) -> None:
        super().__init__(jit_function(fun, static_argnums, static_argnames),
                         options=TuneOptions(allow_numerics_change=allow_numerics_change),
                         tune_on_first_call=False, db=db, progress=False, recording=True)
        self._jax = _jax_jit()(fun, static_argnums=static_argnums, static_argnames=static_argnames,
                               **jax_options)
        self._jax_options = jax_options

    def _plain(self, call: BoundCall) -> Callable:
        """jax.jit's compile of the call, with the user's donations and options."""
        options = {k: v for k, v in self._jax_options.items() if k not in ("donate_argnums", "donate_argnames")}
        donated = donated_positions(call, self._jax_options)
        return _jax_jit()(call.function, donate_argnums=donated, **options).lower(*call.traced).compile()

    def _dispatch(self, args: tuple, kwargs: dict):
        _inside.active = True  # hlotune's own jits while it exports, looks up and compiles
        try:
            return super()._dispatch(args, kwargs)
        finally:
            _inside.active = False

    def __getattr__(self, name: str) -> Any:
        jitted = self.__dict__.get("_jax")
        if jitted is None:
            raise AttributeError(name)
        return getattr(jitted, name)


def donated_positions(call: BoundCall, jax_options: dict[str, Any]) -> tuple[int, ...]:
    """The traced arguments' positions of what the user's `donate_argnums` and
    `donate_argnames` name (static arguments are never donated)."""
    numbers, names = jax_options.get("donate_argnums"), jax_options.get("donate_argnames")
    numbers = {numbers} if isinstance(numbers, int) else set(numbers or ())
    names = {names} if isinstance(names, str) else set(names or ())
    if not numbers and not names:
        return ()
    signature = call.jit.signature
    parameters = [] if signature is None else list(signature.parameters)
    names |= {parameters[n] for n in numbers if 0 <= n < len(parameters)}
    numbers |= {parameters.index(name) for name in names if name in parameters}
    static = sorted(key for key, _ in call.static if isinstance(key, int))
    positional = len(call.traced) - len(call.names)
    donated = {n - sum(s < n for s in static) for n in numbers if n not in static}
    donated = {i for i in donated if i < positional}
    donated |= {positional + i for i, name in enumerate(call.names) if name in names}
    return tuple(sorted(donated))


def install() -> None:
    """Route `jax.jit` through hlotune.jit from now on (HLOTUNE_DISABLE=1: do nothing)."""
    global _original_jit
    import jax

    if os.environ.get(DISABLE) == "1" or _original_jit is not None:
        return
    _original_jit = jax.jit
    jax.jit = jit


def uninstall() -> None:
    """Give `jax.jit` back."""
    global _original_jit
    import jax

    if _original_jit is not None:
        jax.jit, _original_jit = _original_jit, None


def _jax_jit() -> Callable:
    import jax

    return _original_jit or jax.jit
