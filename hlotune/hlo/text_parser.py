"""XLA's HLO text parser, run in a child process.

XLA's parser aborts the whole process on some malformed text (a failed CHECK, seen under
fuzzing), so hlotune never runs it in the caller's process. The child imports only
`jaxlib._hlo` (about 0.1 s; `jaxlib._jax` before jaxlib 0.10.2) and hands back a serialized
HloModuleProto.
"""

from __future__ import annotations

import json
import signal
import struct
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


def texts_to_protos(texts: list[str]) -> list[bytes | HlotuneError]:
    """Many texts parsed in one child (one start-up, not one per text: thousands of kernels);
    where the child dies on one, each text is parsed alone, so only the bad ones fail."""
    if len(texts) < 2:
        return [_or_error(text) for text in texts]
    try:
        child = subprocess.run([sys.executable, "-m", __name__, "--many"], input=json.dumps(texts).encode(),
                               capture_output=True, timeout=_TIMEOUT_S * len(texts))
    except subprocess.TimeoutExpired:
        child = None
    if child is None or child.returncode != 0:
        return [_or_error(text) for text in texts]
    results: list[bytes | HlotuneError] = []
    data, at = child.stdout, 0
    for _ in texts:
        ok, size = struct.unpack_from("<?I", data, at)
        payload, at = data[at + 5:at + 5 + size], at + 5 + size
        results.append(payload if ok else HlotuneError(f"not valid HLO text: {payload.decode()}"))
    return results


def _or_error(text: str) -> bytes | HlotuneError:
    try:
        return text_to_proto(text)
    except HlotuneError as error:
        return error


def _parse(text: str) -> tuple[bool, bytes]:
    try:
        from jaxlib import _hlo
    except ImportError:  # jaxlib before 0.10.2 kept the HLO bindings in _jax
        from jaxlib import _jax as _hlo

    try:
        return True, _hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto()
    except Exception as error:  # XLA's status errors: report the first line
        lines = str(error).strip().splitlines()
        return False, (lines[0] if lines else type(error).__name__).encode()


def _main() -> int:
    data = sys.stdin.buffer.read().decode("utf-8")
    if sys.argv[1:] == ["--many"]:
        for text in json.loads(data):
            ok, payload = _parse(text)
            sys.stdout.buffer.write(struct.pack("<?I", ok, len(payload)) + payload)
        return 0
    ok, payload = _parse(data)
    if not ok:
        print(payload.decode(), file=sys.stderr)
        return 1
    sys.stdout.buffer.write(payload)
    return 0


if __name__ == "__main__":
    sys.exit(_main())
