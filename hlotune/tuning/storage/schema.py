"""The tuning database's tables, written once for SQLite and PostgreSQL.

`{real}`, `{blob}` and `{seq}` are the dialect's words: a double, bytes, and (PostgreSQL only)
a last column numbering rows as they were stored, which SQLite's rowid already does. Rows of a
table are inserted by position, so a new column goes last and old rows hold NULL in it.

- `measurements`: one row per (program, config, machine, compiler): status, reason, median,
  samples, whether early stopping cut its samples short (measure.py), and the default's median
  and noise floor of its batch (a runtime is compared with the default measured beside it:
  batches minutes apart drift);
- `compiles` and `thunk_modules`: what the kernel screen (tuning/models/kernel_screen.py)
  learnt of a config by compiling it, its thunks, and each thunk's module text once, so a
  resumed tune compiles nothing twice;
- `decisions`: what each finished tune chose after re-measuring its finalists against the
  default (final_check.py), with the speedup measured after choosing, the one the rounds that
  chose it saw, and the search's;
- `claims`: the configs a tuner is measuring now, so that another waits for their records;
- `recordings` and `calls`: the programs `hlotune.jit` saw compile (each exported, so another
  process can tune it) and, per process, how often each was called and how long sampled calls
  took (recordings.py);
- `tunes` and `verifications`: what `hlotune fleet tune` spent on each program, and each
  decision timed beside jax.jit where the program runs (fleet_log.py);
- `trials`: each process's trial of a decision beside jax.jit, the field's measurements (field.py).
"""

from __future__ import annotations

VERSION = 8  # 2: measurements.max_rel_error; 3: .kernel_costs; 4: decisions' final check;
# 5: compiles and thunk_modules (the kernel screen's cache); 6: measurements.stopped;
# 7: recordings and calls (hlotune.jit), tunes and verifications (hlotune fleet); 8: trials

TABLES = """
CREATE TABLE IF NOT EXISTS programs (
    fingerprint TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    first_seen {real} NOT NULL
);
CREATE TABLE IF NOT EXISTS measurements (
    program TEXT NOT NULL,
    config TEXT NOT NULL,
    machine TEXT NOT NULL,
    jax TEXT NOT NULL,
    jaxlib TEXT NOT NULL,
    status TEXT NOT NULL,
    reason TEXT NOT NULL,
    median_ns {real},
    default_ns {real} NOT NULL,
    noise_floor {real},
    samples TEXT NOT NULL,
    compile_s {real} NOT NULL,
    timestamp {real} NOT NULL,
    max_rel_error {real},
    kernel_costs TEXT,
    stopped INTEGER{seq},
    UNIQUE (program, config, machine, jax, jaxlib)
);
CREATE TABLE IF NOT EXISTS decisions (
    program TEXT NOT NULL,
    machine TEXT NOT NULL,
    jax TEXT NOT NULL,
    jaxlib TEXT NOT NULL,
    candidate TEXT NOT NULL,
    chosen TEXT NOT NULL,
    default_ns {real} NOT NULL,
    candidate_ns {real},
    noise_floor {real},
    strategy TEXT NOT NULL,
    space TEXT NOT NULL,
    timestamp {real} NOT NULL,
    found_speedup {real},
    confirmed_speedup {real},
    rounds INTEGER{seq}
);
CREATE INDEX IF NOT EXISTS decisions_by_program ON decisions (program, machine, jax, jaxlib);
CREATE TABLE IF NOT EXISTS compiles (
    program TEXT NOT NULL,
    config TEXT NOT NULL,
    machine TEXT NOT NULL,
    jax TEXT NOT NULL,
    jaxlib TEXT NOT NULL,
    thunks TEXT,
    UNIQUE (program, config, machine, jax, jaxlib)
);
CREATE TABLE IF NOT EXISTS thunk_modules (
    fingerprint TEXT PRIMARY KEY,
    module {blob} NOT NULL
);
CREATE TABLE IF NOT EXISTS claims (
    program TEXT NOT NULL,
    config TEXT NOT NULL,
    machine TEXT NOT NULL,
    jax TEXT NOT NULL,
    jaxlib TEXT NOT NULL,
    owner TEXT NOT NULL,
    expires {real} NOT NULL,
    UNIQUE (program, config, machine, jax, jaxlib)
);
CREATE TABLE IF NOT EXISTS recordings (
    program TEXT NOT NULL,
    machine TEXT NOT NULL,
    jax TEXT NOT NULL,
    jaxlib TEXT NOT NULL,
    name TEXT NOT NULL,
    shapes TEXT NOT NULL,
    exported {blob},
    reason TEXT NOT NULL,
    first_seen {real} NOT NULL{seq},
    UNIQUE (program, machine, jax, jaxlib)
);
CREATE TABLE IF NOT EXISTS calls (
    program TEXT NOT NULL,
    machine TEXT NOT NULL,
    jax TEXT NOT NULL,
    jaxlib TEXT NOT NULL,
    process TEXT NOT NULL,
    calls INTEGER NOT NULL,
    sampled INTEGER NOT NULL,
    sampled_s {real} NOT NULL,
    since {real} NOT NULL,
    updated {real} NOT NULL,
    UNIQUE (program, machine, jax, jaxlib, process)
);
CREATE TABLE IF NOT EXISTS tunes (
    program TEXT NOT NULL,
    machine TEXT NOT NULL,
    jax TEXT NOT NULL,
    jaxlib TEXT NOT NULL,
    budget INTEGER NOT NULL,
    measured INTEGER NOT NULL,
    seconds {real} NOT NULL,
    timestamp {real} NOT NULL{seq}
);
CREATE TABLE IF NOT EXISTS verifications (
    program TEXT NOT NULL,
    machine TEXT NOT NULL,
    jax TEXT NOT NULL,
    jaxlib TEXT NOT NULL,
    config TEXT NOT NULL,
    jit_ns {real} NOT NULL,
    tuned_ns {real} NOT NULL,
    rounds INTEGER NOT NULL,
    timestamp {real} NOT NULL{seq}
);
CREATE TABLE IF NOT EXISTS trials (
    program TEXT NOT NULL,
    machine TEXT NOT NULL,
    jax TEXT NOT NULL,
    jaxlib TEXT NOT NULL,
    process TEXT NOT NULL,
    config TEXT NOT NULL,
    pairs INTEGER NOT NULL,
    wins INTEGER NOT NULL,
    speedup {real} NOT NULL,
    jit_ns {real},
    tuned_ns {real},
    verdict TEXT NOT NULL,
    compile_s {real} NOT NULL,
    updated {real} NOT NULL{seq},
    UNIQUE (program, machine, jax, jaxlib, process, config)
);
"""


def statements(real: str, blob: str, seq: str) -> list[str]:
    """The schema's statements in a dialect's words."""
    text = TABLES.format(real=real, blob=blob, seq=seq)
    return [statement.strip() for statement in text.split(";") if statement.strip()]
