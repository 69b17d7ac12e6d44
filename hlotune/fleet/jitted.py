"""`hlotune.jit`: jax.jit that records what the process runs and applies stored decisions
once this process has shown them faster.

The AutoFDO loop of XTAT, for JAX: record what actually runs, tune it offline (`hlotune tune`
on the recorded program, from any process or machine that shares the database), apply the
decision at the next compile with no change to the code. `hlotune.jit(fn)` is called as
`jax.jit(fn)` is. The first call of each signature (static values, shapes and dtypes) exports
the program, records it in the tuning database with its fingerprint, name and argument shapes,
and asks the rule (storage/field.py) for a decision made on this machine under this jax
(numerics-safe unless `allow_numerics_change`). With one, the program's first calls are a trial
(trial.py): the decision's executable against jax.jit's, alternating, until one is shown faster;
the winner then runs every later call, the trial goes to the database's field, and stderr says
once what was kept and why. Without one, it compiles exactly as jax.jit would. Calls are
counted and some timed (recorder.py). `trial=False`, or HLOTUNE_TRIAL=0, applies a decision the
rule lets apply without a trial.

`hlotune.install()` routes `jax.jit` itself through hlotune.jit, for code the user does not
own; functions jitted before it ran, and jax's own, stay as they were. Options only jax.jit
understands (shardings, devices, backends) leave the function to plain jax.jit, unrecorded;
`HLOTUNE_DISABLE=1` turns both off. A database that cannot be used is warned about once and
the program compiles as jax.jit would (recorder.py); one that breaks mid-trial ends the trial
with jax.jit's executable.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hlotune.fleet.recorder import ProgramCalls, recorder_for, timed_call
from hlotune.fleet.trial import JIT_ARM, RECHECK_S, ProcessTrial
from hlotune.programs.calls import BoundCall, jit_function
from hlotune.programs.function_program import FunctionProgram
from hlotune.programs.keys import KeyedFunction
from hlotune.compiler.configs.config import DEFAULT_CONFIG
from hlotune.errors import HlotuneError
from hlotune.tuning.autotune import DATABASE, JIT, Autotuned, Choice, Entry, _compiled, _direct
from hlotune.tuning.options import TuneOptions
from hlotune.tuning.storage.field import (APPLIED, CARRIED, KEPT, RETIRE_AFTER, TIED, Decision,
                                          shown_faster)

DISABLE = "HLOTUNE_DISABLE"
NO_TRIAL = "HLOTUNE_TRIAL"  # "0": apply decisions without a trial
TRIAL = "trial"  # a Choice's source while its decision is on trial in this process
_JAX_ONLY = frozenset({"in_shardings", "out_shardings", "device", "backend", "abstracted_axes",
                       "compiler_options"})  # what a decision's compile cannot honour
_original_jit: Callable | None = None  # jax.jit as it was before install()
_inside = threading.local()  # set while hlotune compiles: its own jax.jit calls go to jax


def jit(fun: Callable | None = None, *, static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Sequence[str] | None = None, db: str | Path | None = None,
        allow_numerics_change: bool = False, trial: bool | None = None, **jax_options: Any) -> Any:
    """`fun` jitted, recorded and tuned where a decision exists and wins its trial (see the
    module); as a decorator, `@hlotune.jit` or `@hlotune.jit(static_argnums=...)`. `db` is the
    tuning database (a file or a postgresql:// URL; default $HLOTUNE_DB or
    ~/.cache/hlotune/tuning.sqlite); `trial` (default: on unless HLOTUNE_TRIAL=0) runs each
    decision's trial in this process; `jax_options` are jax.jit's other arguments."""
    if fun is None:
        return functools.partial(jit, static_argnums=static_argnums, static_argnames=static_argnames,
                                 db=db, allow_numerics_change=allow_numerics_change, trial=trial,
                                 **jax_options)
    plain = _jax_jit()
    if os.environ.get(DISABLE) == "1" or _JAX_ONLY & jax_options.keys() or getattr(_inside, "active", False):
        return plain(fun, static_argnums=static_argnums, static_argnames=static_argnames, **jax_options)
    if trial is None:
        trial = os.environ.get(NO_TRIAL) != "0"
    return Jitted(fun, static_argnums, static_argnames, db, allow_numerics_change, trial, jax_options)


@dataclass(frozen=True)
class Recorded(Entry):
    """An entry whose calls are counted; on trial, `call` is the decision's executable."""

    calls: ProgramCalls | None = None
    trial: ProcessTrial | None = None
    recheck_at: float | None = None  # time.monotonic() from which a kept near-tie is tried again


class Jitted(Autotuned):
    """A function under hlotune.jit. A program without a decision runs through jax.jit's own
    wrapper of the function (what it offers beyond calling, lower, trace and eval_shape, too):
    while every program seen runs so, a call costs that wrapper's C++ dispatch and a counter,
    and a call that makes jax compile another signature is recorded after it ran. With one
    signature the counts are exact; with several, a call is counted to the program the last
    looked-up call was, and each program's sampled calls (recorder.py) look up again, so the
    counts are split as a sampling profiler splits time. jax's private `_cache_size` is probed
    once: without it, every call is looked up."""

    def __init__(self, fun: Callable, static_argnums, static_argnames, db, allow_numerics_change: bool,
                 trial: bool, jax_options: dict[str, Any]) -> None:
        super().__init__(jit_function(fun, static_argnums, static_argnames),
                         options=TuneOptions(allow_numerics_change=allow_numerics_change),
                         tune_on_first_call=False, db=db, progress=False)
        self._recorder = recorder_for(self._db)
        self._trial, self._jax_options = trial, jax_options
        self._jax = _jax_jit()(fun, static_argnums=static_argnums, static_argnames=static_argnames,
                               **jax_options)
        self._only: ProgramCalls | None = None  # the calls counted to, while jax.jit runs them all
        self._cache_size: Callable[[], int] | None = getattr(self._jax, "_cache_size", None)
        self._cached = 0  # jax.jit's executables when that was last checked
        self._checked_calls: ProgramCalls | None = None  # the calls of `_checked`'s program

    def __call__(self, *args, **kwargs):
        calls = self._only
        if calls is not None and calls.calls + 1 != calls.next_sample:
            out = self._jax(*args, **kwargs)
            if self._cache_size() == self._cached:
                calls.calls += 1
            else:  # jax compiled another signature: record it too
                self._only = None
                self._record_run(args, kwargs)
            return out
        checked, calls = self._checked, self._checked_calls
        if checked is not None and not kwargs and calls.calls + 1 != calls.next_sample:
            try:
                out = checked(*args)  # counted inline: every call's path
            except TypeError:  # not the arguments it was compiled for, or tracers: dispatched below
                return self._dispatch(args, kwargs)
            calls.calls += 1
            return out
        return self._dispatch(args, kwargs)

    def _record_run(self, args: tuple, kwargs: dict) -> None:
        found = self._lookup(args, kwargs)
        if found is not None:
            found[1].calls.calls += 1
            self._follow(found[1])

    def _lookup(self, args: tuple, kwargs: dict):
        _inside.active = True  # hlotune's own jits while it exports, looks up and compiles
        try:
            return super()._lookup(args, kwargs)
        finally:
            _inside.active = False

    def _run(self, call: BoundCall, entry: Recorded, args: tuple, kwargs: dict):
        self._checked = self._checked_calls = None
        if entry.recheck_at is not None and time.monotonic() >= entry.recheck_at:
            entry = self._reopen(entry)
        if entry.trial is not None:
            return self._trial_call(call, entry, args, kwargs)
        if entry.choice.source == JIT:
            out = self._counted(entry.calls, functools.partial(self._jax, **kwargs), args)
            self._follow(entry)
            return out
        if _direct(call, entry, kwargs):
            self._checked, self._checked_calls = entry.call, entry.calls
        return self._counted(entry.calls, entry.call, call.traced)

    def _counted(self, calls: ProgramCalls, run: Callable, args: tuple):
        """`run(*args)`, counted, and timed where it is the next sampled call (recorder.py)."""
        if calls.calls + 1 == calls.next_sample:
            return self._recorder.timed(calls, lambda: run(*args), args)
        out = run(*args)
        calls.calls += 1  # a TypeError above counts nothing
        return out

    def _trial_call(self, call: BoundCall, entry: Recorded, args: tuple, kwargs: dict):
        """One call of the trial, timed, under the executable whose turn it is; the entry gives
        way to the winner once the trial decides, or at once if the database broke."""
        trial, arm = entry.trial, entry.trial.next_arm()
        if arm == JIT_ARM:
            cached = self._cache_size and self._cache_size()
            out, seconds = timed_call(lambda: self._jax(*args, **kwargs), args)
            trial.add(arm, seconds, compiled=self._cache_size is not None and self._cache_size() != cached)
        else:
            out, seconds = timed_call(lambda: entry.call(*call.traced), call.traced)
            trial.add(arm, seconds)
        entry.calls.timed(seconds)
        if trial.verdict is not None or self._recorder.broken:
            self._settle(entry)
        else:
            self._recorder.flush_if_due()
        return out

    def _reopen(self, entry: Recorded) -> Recorded:
        """The decision's second trial in this process, in the entry's place (trial.py)."""
        fingerprint = entry.choice.fingerprint
        trial = ProcessTrial(entry.choice.config.key, 0.0, recheck=True)
        self._recorder.trials[fingerprint] = trial
        reopened = Recorded(Choice(entry.choice.config, TRIAL, fingerprint), entry.call, entry.calls, trial)
        self._replace(entry, reopened)
        return reopened

    def _replace(self, entry: Recorded, new: Recorded) -> None:
        key = next(k for k, e in self._entries.items() if e is entry)
        self._entries[key] = new

    def _settle(self, entry: Recorded) -> None:
        """Put the trial's winner in the entry's place and say once what was kept and why (a
        second trial, only where it puts jax.jit's executable back)."""
        trial, fingerprint = entry.trial, entry.choice.fingerprint
        kept, why = self._verdict(trial, fingerprint)
        if kept:
            again = time.monotonic() + RECHECK_S if trial.rechecks else None
            winner = Recorded(Choice(entry.choice.config, DATABASE, fingerprint), entry.call, entry.calls,
                              recheck_at=again)
            what = "the config tuned for it" + (f", to be tried again in {RECHECK_S:.0f} s" if again else "")
        else:
            winner = Recorded(Choice(DEFAULT_CONFIG, JIT, fingerprint), self._jax, entry.calls)
            what = "jax.jit's executable"
        self._replace(entry, winner)
        if not trial.recheck:
            self._recorder.announce(fingerprint, _kept(self._fn, what, trial, "trial", why,
                                                       f", {trial.compile_s:.2f} s to compile it"))
        elif not kept:
            self._recorder.announce(f"{fingerprint} second trial", _kept(
                self._fn, what, trial, f"second trial, {RECHECK_S:.0f} s after its first kept it", why, ""))
        self._recorder.flush()  # the verdict, batched with the counts so far

    def _verdict(self, trial: ProcessTrial, fingerprint: str) -> tuple[bool, str]:
        """Whether the process keeps the decision, and why: its trial's verdict, or at a tie the
        field's pairs with its own (storage/field.py)."""
        if self._recorder.broken:
            return False, "the database broke mid-trial"
        if trial.verdict == KEPT and trial.on_field_evidence:
            return True, (f"each of its first {trial.pairs} pairs faster than {trial.bar:.2f}x, halfway to the "
                          f"field's {trial.bar ** 2:.2f}x")
        if trial.verdict == KEPT:
            return True, "faster beyond the trial's noise"
        if trial.verdict == TIED:
            field = self._recorder.field(fingerprint, trial.config_key)
            if field is not None and shown_faster(field.wins + trial.wins, field.pairs + trial.pairs):
                return True, (f"a tie here, and faster in the field's {field.pairs + trial.pairs} pairs "
                              f"over {len(field.trials) + 1} processes")
            return False, "a tie by the trial's bound"
        return False, "not faster beyond a tie"

    def _follow(self, entry: Recorded) -> None:
        """Let calls take jax.jit's dispatch directly, counted to `entry`'s program, while every
        program seen runs jax.jit's executable."""
        if self._cache_size is None:
            return
        self._cached = self._cache_size()
        plain = all(e.choice.source == JIT for e in self._entries.values())
        self._only = entry.calls if plain else None

    def _choose(self, call: BoundCall, keyed: KeyedFunction, program: FunctionProgram,
                fingerprint: str) -> Recorded:
        """Record the program; the decision the rule lets apply, on trial unless trials are
        off; else jax.jit's own wrapper (`_run` calls it with the user's arguments)."""
        exported = None if program.exported is None else program.exported.to_bytes
        calls = self._record(fingerprint, call, exported, program.in_process)
        state = self._recorder.state(fingerprint, self._options.allow_numerics_change)
        decision = None if state is None else state.candidate
        if decision is None:
            return Recorded(Choice(DEFAULT_CONFIG, JIT, fingerprint), self._jax, calls)
        started = time.perf_counter()
        donated = call.donated(_as_tuple(self._jax_options.get("donate_argnums")),
                               _as_tuple(self._jax_options.get("donate_argnames")))
        tuned = _compiled(program.user, keyed, Choice(decision.chosen, DATABASE, fingerprint), donated).call
        if not self._trial and state.state != CARRIED:  # another release's: never untested
            self._recorder.announce(fingerprint, _applied(_qualified_name(self._fn), decision))
            return Recorded(Choice(decision.chosen, DATABASE, fingerprint), tuned, calls)
        field = state.field
        confirmed = state.state == APPLIED and field.kept >= RETIRE_AFTER
        trial = ProcessTrial(decision.chosen.key, time.perf_counter() - started, field.median if confirmed else None)
        self._recorder.trials[fingerprint] = trial
        return Recorded(Choice(decision.chosen, TRIAL, fingerprint), tuned, calls, trial)

    def _unexported(self, call: BoundCall, keyed: KeyedFunction, error: HlotuneError) -> Recorded:
        """A program jax.export cannot serialize: recorded as tunable only in this process,
        compiled as jax.jit would (its fingerprint is the plain lowering's)."""
        from hlotune.programs import Program
        from hlotune.tuning.fingerprint import program_fingerprint

        fingerprint = program_fingerprint(Program(keyed.__name__, keyed, call.data))
        calls = self._record(fingerprint, call, None, str(error))
        return Recorded(Choice(DEFAULT_CONFIG, JIT, fingerprint), self._jax, calls)

    def _record(self, fingerprint: str, call: BoundCall, exported: Callable[[], bytes] | None,
                reason: str) -> ProgramCalls:
        return self._recorder.record(fingerprint, _qualified_name(self._fn), _shapes(call.data), exported, reason)

    @property
    def jax_jit(self) -> Callable:
        """jax.jit's wrapper of the function, which runs what no decision replaces: the
        executable the user would run without hlotune, compiled once in this process."""
        return self._jax

    def __getattr__(self, name: str) -> Any:
        jitted = self.__dict__.get("_jax")
        if jitted is None:
            raise AttributeError(name)
        return getattr(jitted, name)


def _as_tuple(value: int | str | Sequence | None) -> tuple:
    return () if value is None else (value,) if isinstance(value, (int, str)) else tuple(value)


def _kept(fn: Callable, what: str, trial: ProcessTrial, which: str, why: str, cost: str) -> str:
    return (f"{_qualified_name(fn)} keeps {what}: the tuned config ran {trial.speedup:.3f}x over jax.jit in this "
            f"process's {which} ({trial.pairs} pairs of calls{cost}; {why}; "
            f"HLOTUNE_TRIAL=0 skips the trial, HLOTUNE_DISABLE=1 turns hlotune off)")


def _applied(name: str, decision: Decision) -> str:
    return (f"{name} runs the config tuned for it, without a trial ({decision.speedup:.3f}x over XLA's "
            f"default when tuned, {decision.strategy} search; HLOTUNE_DISABLE=1 turns it off)")


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


def _qualified_name(fn: Callable) -> str:
    """The function as the user's code names it: module.qualname."""
    module = getattr(fn, "__module__", None) or ""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", type(fn).__name__)
    return f"{module}.{name}" if module and module != "__main__" else name


def _shapes(data: tuple) -> str:
    """The flat arguments' dtypes and shapes, e.g. "float32[8,128] int32[]"."""
    import jax
    import numpy as np

    leaves = jax.tree_util.tree_leaves(data)
    return " ".join(f"{np.dtype(leaf.dtype).name}[{','.join(map(str, np.shape(leaf)))}]" for leaf in leaves)
