"""Atomic file writes: readers (and a crash) see the old file or the new one, never half.

The temporary file starts with a dot and ends in `.tmp`, so folder scans for `*.npz` or model
files never pick up a file in the middle of being written.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from hlotune.errors import HlotuneError


def write_atomic(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Create `path` with `write(stream)`, via a synced temporary file and a rename."""
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(temp, "xb") as stream:
            write(stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temp, path)
    except OSError as err:
        raise HlotuneError(f"{path}: cannot write ({err.strerror or err})") from err
    finally:
        temp.unlink(missing_ok=True)


def write_bytes_atomic(path: Path, data: bytes) -> None:
    write_atomic(path, lambda stream: stream.write(data))
