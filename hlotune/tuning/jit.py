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
from hlotune.tuning.autotune import JIT, Autotuned, Entry
from hlotune.tuning.recorder import ProgramCalls
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
    """A function under hlotune.jit. A program without a decision runs through jax.jit's own
    wrapper of the function (what it offers beyond calling, lower, trace and eval_shape, too):
    while it is the only program seen, a call costs that wrapper's C++ dispatch and a counter,
    and a call that makes jax compile another signature is recorded after it ran."""

    def __init__(self, fun: Callable, static_argnums, static_argnames, db, allow_numerics_change: bool,
                 jax_options: dict[str, Any]) -> None:
        super().__init__(jit_function(fun, static_argnums, static_argnames),
                         options=TuneOptions(allow_numerics_change=allow_numerics_change),
                         tune_on_first_call=False, db=db, progress=False, recording=True)
        self._jax = _jax_jit()(fun, static_argnums=static_argnums, static_argnames=static_argnames,
                               **jax_options)
        self._only: ProgramCalls | None = None  # the one program's calls, while jax.jit runs it
        self._cached = 0  # jax.jit's executables when that was last checked

    def __call__(self, *args, **kwargs):
        calls = self._only
        if calls is None or calls.calls + 1 == calls.next_sample:
            return super().__call__(*args, **kwargs)
        out = self._jax(*args, **kwargs)
        if self._jax._cache_size() == self._cached:
            calls.calls += 1
        else:  # jax compiled another signature: record it too
            self._only = None
            self._record_run(args, kwargs)
        return out

    def _record_run(self, args: tuple, kwargs: dict) -> None:
        found = self._lookup(args, kwargs)
        if found is not None:
            found[1].calls.calls += 1
            self._follow(found[1])

    def _plain(self, call: BoundCall) -> Callable:
        """jax.jit's own wrapper: `_run` calls it with the user's arguments (no compile here)."""
        return self._jax

    def _lookup(self, args: tuple, kwargs: dict):
        _inside.active = True  # hlotune's own jits while it exports, looks up and compiles
        try:
            return super()._lookup(args, kwargs)
        finally:
            _inside.active = False

    def _run(self, call: BoundCall, entry: Entry, args: tuple, kwargs: dict):
        if entry.choice.source != JIT:
            return super()._run(call, entry, args, kwargs)
        self._checked = self._checked_calls = None
        out = self._counted(entry.calls, functools.partial(self._jax, **kwargs), args)
        self._follow(entry)
        return out

    def _follow(self, entry: Entry) -> None:
        """Let calls take jax.jit's dispatch directly while `entry` is the only program seen."""
        self._cached = self._jax._cache_size()
        single = len(self._entries) == 1 and entry.choice.source == JIT
        self._only = entry.calls if single else None

    def __getattr__(self, name: str) -> Any:
        jitted = self.__dict__.get("_jax")
        if jitted is None:
            raise AttributeError(name)
        return getattr(jitted, name)


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
