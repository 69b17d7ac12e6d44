"""`@hlotune.autotune`: a JAX function that runs under the config tuned for its argument shapes.

A tuned config only holds for one computation on one machine, so the wrapper works per
signature (the static values, the other arguments' tree, shapes and dtypes): the first call
with a new signature exports the function (hlotune.programs.exported), computes the program
fingerprint and asks the tuning database for a decision made on this machine under this jax.
With one, calls run the program compiled under the chosen config; without one,
`tune_on_first_call` tunes it there and then (measuring in a worker process, or in this one for
a function with host callbacks, which takes a while) and later calls reuse the result,
otherwise calls run plain `jax.jit(fn)`.
Each signature is resolved once per wrapper; `choice(*args)` says
what calls with such arguments run. A call goes first to the last call's executable where that
is a decision's (a jax Compiled, no argument layout to put), which checks the arguments in C++:
a Python lookup before every call costs some 4 µs, and 20-40 µs more in a tight loop, where
XLA:CPU's threads fall asleep waiting for the late call. Other arguments are refused there (a
TypeError: some 20-40 µs) and looked up; calls without a decision run behind the lookup.

The function is called as a jitted one is (programs/calls.py): pytrees of arrays, typed PRNG
keys included, by position or keyword, and static values where `static_argnums` and
`static_argnames` say, each value its own program, as jax.jit compiles one for each; only a
positional call with nothing static reaches the executable directly. Called under a JAX
transformation (inside jit, grad, vmap), the function is traced as it is: a config applies to a
whole executable, the caller's. The decorator tunes for
the machine it runs on, so it takes no runner.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hlotune.compiler.configs.config import DEFAULT_CONFIG, CompileConfig
from hlotune.errors import HlotuneError
from hlotune.programs import Program
from hlotune.programs.calls import BoundCall, JitFunction, jit_function
from hlotune.programs.keys import KeyedFunction
from hlotune.tuning.storage import Decision, TuningDatabase, default_db_location, exists, local_folder
from hlotune.tuning.storage.field import DEFAULT_KEPT
from hlotune.tuning.keywords import OPTION_NAMES, split_keywords
from hlotune.tuning.options import TuneOptions

if TYPE_CHECKING:
    from hlotune.programs.function_program import FunctionProgram

DATABASE, TUNED, JIT = "database", "tuned", "jit"


@dataclass(frozen=True)
class Choice:
    """What calls with one argument signature run."""

    config: CompileConfig  # DEFAULT_CONFIG under JIT: plain jax.jit
    source: str  # DATABASE (a stored decision), TUNED (by this wrapper) or JIT (none found)
    fingerprint: str  # the program fingerprint of the function at these shapes


@dataclass(frozen=True)
class Entry:
    choice: Choice
    call: Callable  # takes the call's traced arguments


class Autotuned:
    """`fn` with a config per argument signature, resolved on first use (see the module).
    hlotune.jit's Jitted overrides the hooks `_choose` (what a new signature runs) and
    `_unexported` (a program jax.export cannot serialize)."""

    def __init__(self, jit: JitFunction, *, options: TuneOptions, tune_on_first_call: bool,
                 db: str | Path | None, progress: bool) -> None:
        functools.update_wrapper(self, jit.fn)
        self._fn, self._jit = jit.fn, jit
        self._db = db or default_db_location()
        self._tune_on_first_call, self._options, self._progress = tune_on_first_call, options, progress
        self._entries: dict[Any, Entry] = {}
        # The last call's executable, where it is jax's Compiled: that checks the arguments
        # itself, in C++, so a call like the last one costs what the raw executable does.
        self._checked: Callable | None = None

    def __call__(self, *args, **kwargs):
        checked = self._checked
        if checked is not None and not kwargs:
            try:
                return checked(*args)
            except TypeError:  # not the arguments it was compiled for, or tracers: dispatched below
                pass
        return self._dispatch(args, kwargs)

    def _dispatch(self, args: tuple, kwargs: dict):
        found = self._lookup(args, kwargs)
        if found is None:  # inside jit, grad, vmap...: the enclosing computation is compiled
            return self._fn(*args, **kwargs)
        return self._run(*found, args, kwargs)

    def _lookup(self, args: tuple, kwargs: dict) -> tuple[BoundCall, Entry] | None:
        """The call and its signature's entry (resolved now if new); None under a trace."""
        import jax

        call = self._jit.bind(args, kwargs)
        leaves, tree = jax.tree_util.tree_flatten(call.traced)
        if any(isinstance(leaf, jax.core.Tracer) for leaf in leaves):
            return None
        return call, self._entry(call, _signature(call, leaves, tree))

    def _run(self, call: BoundCall, entry: Entry, args: tuple, kwargs: dict):
        """Run the entry's executable on the call, making it the next call's first try where the
        call can reach it directly."""
        self._checked = entry.call if _direct(call, entry, kwargs) else None
        return entry.call(*call.traced)

    def choice(self, *args, **kwargs) -> Choice:
        """The config calls like `fn(*args, **kwargs)` run (resolving it if needed)."""
        import jax

        call = self._jit.bind(args, kwargs)
        return self._entry(call, _signature(call, *jax.tree_util.tree_flatten(call.traced))).choice

    def _entry(self, call: BoundCall, key: tuple) -> Entry:
        if key not in self._entries:
            self._entries[key] = self._resolve(call)
        return self._entries[key]

    def _resolve(self, call: BoundCall) -> Entry:
        """The entry of `call`'s signature, whose `call` takes its traced arguments."""
        from hlotune.programs.function_program import function_program
        from hlotune.tuning.fingerprint import program_fingerprint

        keyed = call.keyed()
        try:  # exported, or live where host callbacks keep it in this process
            program = function_program(keyed, call.data, local_folder(self._db) / "programs")
        except HlotuneError as error:
            return self._unexported(call, keyed, error)
        return self._choose(call, keyed, program, program_fingerprint(program.measured))

    def _choose(self, call: BoundCall, keyed: KeyedFunction, program: FunctionProgram,
                fingerprint: str) -> Entry:
        """The stored decision the rule lets apply (storage/field.py), else a tune where asked,
        else the default, compiled as the tuner measured it."""
        from hlotune.tuning.tuner import tune

        decision = self._stored(fingerprint)
        if decision is not None:
            return _compiled(program.user, keyed, Choice(decision.chosen, DATABASE, fingerprint))
        if self._tune_on_first_call:
            result = tune(program, options=self._options, db=self._db, progress=self._progress)
            return _compiled(program.user, keyed, Choice(result.best_config, TUNED, fingerprint))
        return Entry(Choice(DEFAULT_CONFIG, JIT, fingerprint), _plain(call))

    def _stored(self, fingerprint: str) -> Decision | None:
        """The decision to apply, the default where a tune kept it (a database file that does
        not exist holds none, and is not made by looking)."""
        if not exists(self._db):
            return None
        with TuningDatabase(self._db) as db:
            state = db.state(fingerprint, allow_numerics_change=self._options.allow_numerics_change)
        return state.candidate or (state.decision if state.state == DEFAULT_KEPT else None)

    def _unexported(self, call: BoundCall, keyed: KeyedFunction, error: HlotuneError) -> Entry:
        raise error


def _direct(call: BoundCall, entry: Entry, kwargs: dict) -> bool:
    """Whether calls like `call` reach the entry's executable directly: a jax Compiled, called
    positionally with nothing static, takes the arguments as the executable does."""
    import jax

    return isinstance(entry.call, jax.stages.Compiled) and not kwargs and not call.static


def _plain(call: BoundCall) -> Callable:
    """What jax.jit compiles for the call: a Compiled, which later calls reach directly."""
    import jax

    return jax.jit(call.function).lower(*call.traced).compile()


def _compiled(program: Program, keyed: KeyedFunction, choice: Choice, donate_argnums: tuple[int, ...] = ()) -> Entry:
    """The program as the tuner measured it, the default config too (kept where no candidate
    beat it): a Compiled, which the next calls reach with no Python lookup, unless keys cross;
    the arguments at `donate_argnums` (of the traced ones) donated."""
    from hlotune.tuning.compiled import compile_program

    return Entry(choice, keyed.caller(compile_program(program, choice.config, donate_argnums)))


def autotune(
    fn: Callable | None = None,
    *,
    space: str = "flags",
    budget: int = 16,
    tune_on_first_call: bool = False,
    db: str | Path | None = None,
    progress: bool = True,
    static_argnums: int | Sequence[int] | None = None,
    static_argnames: str | Sequence[str] | None = None,
    **options: Any,
) -> Autotuned | Callable[[Callable], Autotuned]:
    """Decorate `fn` as `@autotune` or `@autotune(space=..., tune_on_first_call=True, ...)`.

    `db` is the tuning database ($HLOTUNE_DB or ~/.cache/hlotune/tuning.sqlite by default);
    `space`, `budget` and `options` (TuneOptions' other fields: strategy, model, settings,
    time_s, batch, seed, allow_numerics_change, ...) are the search `hlotune.tune` runs when a
    signature is tuned, checked here; a config that changes numerics is used only when
    `allow_numerics_change=True` was given. `static_argnums` and `static_argnames` are jax.jit's.
    """
    if "runner" in options:
        raise HlotuneError("@autotune tunes for the machine it runs on: it takes no runner")
    chosen, _ = split_keywords(options, autotune, OPTION_NAMES)
    search = TuneOptions(space=space, budget=budget, **chosen)

    def decorate(function: Callable) -> Autotuned:
        return Autotuned(jit_function(function, static_argnums, static_argnames), options=search,
                         tune_on_first_call=tune_on_first_call, db=db, progress=progress)

    return decorate if fn is None else decorate(fn)


def _signature(call: BoundCall, leaves: list, tree: Any) -> tuple:
    """The static values, the traced arguments' keywords and tree and each leaf's shape and dtype
    (a Python scalar's type): built on every call, so it reads attributes only (`str(dtype)`
    costs 5 µs a leaf)."""
    shapes = tuple((getattr(leaf, "shape", ()), getattr(leaf, "dtype", type(leaf))) for leaf in leaves)
    return call.static, call.names, tree, shapes
