"""Which of the flag space's options and passes the installed XLA takes: checked once per jaxlib
release, then cached.

XLA adds, renames and removes DebugOptions between releases, and a compile given one it lacks
fails; a pass name it lacks it ignores. So at first use hlotune asks the installed XLA:
- each option value of flags.py declared for this release goes to XLA's own option parser, in
  a compile whose options end with one XLA lacks: the parser stops at the first it cannot set,
  before compiling anything, so the error names the value checked or, if XLA took it, the one
  after it (a few ms a value);
- each pass is looked for in the dumps of one small compile (`xla_dump_hlo_pass_re` names
  them; XLA dumps before and after each that runs).
The answers are kept by jaxlib version in ~/.cache/hlotune/xla_options.json ($XDG_CACHE_HOME),
where a later run reads them; a value hlotune declares later is asked about then.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hlotune.compiler.configs.flags import FLAG_OPTIONS, INERT_PASSES, KNOWN_PASSES
from hlotune.compiler.xla.persistent_cache import persistent_cache_off
from hlotune.data.schema import DISABLE_PASSES

_LAST = "xla_hlotune_no_such_option"  # an option no XLA has: it ends every checked set
_NO_PASS = "XLA:CPU runs no such pass"
_DECLARED = "declared"


@dataclass(frozen=True)
class XlaSupport:
    """What the installed XLA lacks of flags.py: `left_out` maps `name=value` (a disabled pass:
    `xla_disable_hlo_passes=NAME`) to why: XLA's error, or the release bounds declared."""

    jaxlib: str
    left_out: dict[str, str]

    def takes(self, name: str, value: Any) -> bool:
        return key(name, value) not in self.left_out

    def runs(self, name: str) -> bool:
        return key(DISABLE_PASSES, name) not in self.left_out

    def note(self) -> str | None:
        """One line naming what is left out, or None."""
        if not self.left_out:
            return None
        return f"hlotune: the flag space leaves out what jaxlib {self.jaxlib}'s XLA lacks: {', '.join(self._items())}"

    def _items(self) -> list[str]:
        """An option's name where all its values are out (with the bounds declared, if that is
        why), else each `name=value`; passes by name."""
        items = []
        for option in FLAG_OPTIONS:
            out = [v for v in option.values[1:] if not self.takes(option.name, v)]
            if len(out) < len(option.values) - 1:
                items += [f"{option.name}={v}" for v in out]
                continue
            why = self.left_out[key(option.name, out[0])]
            items.append(f"{option.name} ({why})" if why.startswith(_DECLARED) else option.name)
        return items + [f"pass {p}" for p in KNOWN_PASSES if not self.runs(p)]


def key(name: str, value: Any) -> str:
    return f"{name}={value}" if name == DISABLE_PASSES else f"{name}={json.dumps(value)}"


@functools.cache
def xla_support() -> XlaSupport:
    """The installed XLA's answers, asked once per jaxlib (and per value hlotune adds); the
    first call in a process prints the note, if any, on stderr."""
    import jaxlib

    version = jaxlib.__version__
    support = XlaSupport(version, _declared_out(version) | _checked(version))
    if note := support.note():
        print(note, file=sys.stderr, flush=True)
    return support


def _declared_out(version: str) -> dict[str, str]:
    """The values of the options flags.py declares absent from this release."""
    out = {}
    for option in FLAG_OPTIONS:
        if not option.in_release(version):
            bounds = ", ".join(filter(None, (option.since and f"from {option.since}",
                                             option.until and f"until {option.until}")))
            out |= {key(option.name, v): f"{_DECLARED} {bounds}" for v in option.values[1:]}
    return out


def _checked(version: str) -> dict[str, str]:
    """What XLA rejects of the rest: cached answers, XLA asked about those not cached."""
    path = cache_path()
    cache = _read(path)
    answers = cache.get(version, {})
    options = {key(o.name, v): (o.name, v) for o in FLAG_OPTIONS if o.in_release(version) for v in o.values[1:]}
    passes = {key(DISABLE_PASSES, p): p for p in KNOWN_PASSES if p not in INERT_PASSES}
    if any(k not in answers for k in options | passes):
        with persistent_cache_off():  # a compile served from it runs no option parser and no pass
            lowered = _probe()
            unasked = {k: nv for k, nv in options.items() if k not in answers}
            answers |= {k: _option_rejected(lowered, *nv) for k, nv in unasked.items()}
            if any(k not in answers for k in passes):
                answers |= _passes_missing(lowered, list(passes.values()))
        _write(path, cache | {version: answers})
    return {k: answers[k] for k in options | passes if answers[k] is not None}


def cache_path() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hlotune" / "xla_options.json"


def _probe() -> Any:
    import jax
    import jax.numpy as jnp

    return jax.jit(lambda x: x + 1).lower(jnp.float32(0))


def _option_rejected(lowered: Any, name: str, value: Any) -> str | None:
    """XLA's reason for rejecting `name=value`, or None where its parser takes it."""
    try:
        lowered.compile(compiler_options={name: value, _LAST: 0})
    except Exception as error:  # noqa: BLE001 - XLA's status errors
        reason = str(error).strip().splitlines()[0]
        return None if repr(_LAST) in reason else reason.removeprefix("INVALID_ARGUMENT: ")
    return None


def _passes_missing(lowered: Any, passes: list[str]) -> dict[str, str | None]:
    """Which of `passes` XLA:CPU does not run; none where nothing was dumped (should a cache
    still serve the compile), since a pass left in costs only a gene that changes nothing."""
    with tempfile.TemporaryDirectory() as folder:
        pattern = "^(" + "|".join(map(re.escape, passes)) + ")$"
        lowered.compile(compiler_options={"xla_dump_to": folder, "xla_dump_hlo_pass_re": pattern})
        ran = set(re.findall(r"(?:after|before)_([^.]+)", " ".join(os.listdir(folder))))
    return {key(DISABLE_PASSES, p): None if p in ran or not ran else _NO_PASS for p in passes}


def _read(path: Path) -> dict[str, dict[str, str | None]]:
    try:
        cache = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return cache if isinstance(cache, dict) else {}


def _write(path: Path, cache: dict) -> None:
    """Atomically, and silently not where the cache folder cannot be written (asked again)."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temp.write_text(json.dumps(cache, indent=1, sort_keys=True))
        os.replace(temp, path)
    except OSError:
        temp.unlink(missing_ok=True)
