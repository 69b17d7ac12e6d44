"""XLA's HLO text parser, run in a child process.

XLA's parser aborts the whole process on some malformed text (a failed CHECK, seen under
fuzzing), so hlotune never runs it in the caller's process. The child imports only
`jaxlib._hlo` (about 0.1 s) and hands back a serialized HloModuleProto.
"""

from __future__ import annotations

import signal
import subprocess
import sys

from hlotune.errors import HlotuneError

_TIMEOUT_S = 120


def text_to_proto(text: str) -> bytes:
    try:
        child = subprocess.run(
            [sys.executable, "-m", __name__],
            input=text.encode("utf-8"),
            capture_output=True,
            timeout=_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise HlotuneError(f"XLA's HLO parser did not finish within {_TIMEOUT_S} s") from None
    if child.returncode == 0:
        return child.stdout
    if child.returncode < 0:
        name = signal.Signals(-child.returncode).name
        raise HlotuneError(f"not valid HLO text: XLA's parser crashed on it ({name})")
    reason = child.stderr.decode("utf-8", "replace").strip().splitlines()
    raise HlotuneError(f"not valid HLO text: {reason[-1] if reason else 'parser failed'}")


def _main() -> int:
    from jaxlib import _hlo

    text = sys.stdin.buffer.read().decode("utf-8")
    try:
        module = _hlo.hlo_module_from_text(text)
    except Exception as error:  # XLA's status errors: report the first line
        lines = str(error).strip().splitlines()
        print(lines[0] if lines else type(error).__name__, file=sys.stderr)
        return 1
    sys.stdout.buffer.write(module.as_serialized_hlo_module_proto())
    return 0


if __name__ == "__main__":
    sys.exit(_main())
