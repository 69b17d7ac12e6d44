"""Does a config compute what the default computes? The check every measured config passes.

A config may reorder floating-point work (another vector width, XNNPACK, fusion), so floats
may differ from the default's by rounding, within a tolerance that suits their precision.
Anything else is exact: NaN and Inf positions (a config that turns a NaN into a number has
changed the program's meaning, whatever its size), and integer and boolean outputs.

A float leaf's error is max|difference| over its finite entries, relative to its scale: its own
max|reference|, but at least `SCALE_FLOOR` times the largest of all leaves' (a gradient that is
exactly zero in theory is rounding noise, and relative to itself differs by 100 % between two
correct compilations).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# Relative tolerance per float dtype: about a few hundred ulps of reordering, measured on the
# built-in dataset (float32: every healthy config within 3.1e-5, fast math included).
RTOL_BY_DTYPE = {"float64": 1e-10, "float32": 1e-4, "float16": 1e-2, "bfloat16": 3e-2}
SCALE_FLOOR = 1e-3


@dataclass(frozen=True)
class OutputCheck:
    """How far a config's outputs are from the default's, and whether that is allowed."""

    max_rel_error: float  # largest relative error of a float leaf (inf: a mismatch)
    ok: bool
    reason: str = ""


def rtol_for(dtype: np.dtype, rtol: float | None = None) -> float:
    """The float tolerance of `dtype` (a complex dtype's by its parts); `rtol` overrides it."""
    if rtol is not None:
        return rtol
    name = np.dtype(dtype).name
    parts = {"complex64": "float32", "complex128": "float64"}.get(name, name)
    return RTOL_BY_DTYPE.get(parts, RTOL_BY_DTYPE["float32"])


def check_outputs(
    outputs: Sequence[np.ndarray], reference: Sequence[np.ndarray], rtol: float | None = None
) -> OutputCheck:
    """Compare a config's output leaves with the default's (`rtol`: one float tolerance for
    every dtype instead of RTOL_BY_DTYPE)."""
    if len(outputs) != len(reference) or any(o.shape != r.shape for o, r in zip(outputs, reference)):
        return OutputCheck(float("inf"), False, "outputs differ in number or shape from the default's")
    peaks = [_peak(r) if _is_float(r) else 0.0 for r in reference]
    floor = SCALE_FLOOR * max(peaks, default=0.0)
    worst, failure = 0.0, ""
    for index, (out, ref, peak) in enumerate(zip(outputs, reference, peaks)):
        if not _is_float(ref):
            if not np.array_equal(out, ref):
                return OutputCheck(float("inf"), False, f"output {index} ({ref.dtype}) differs from the default's")
            continue
        if not _same_special_values(out, ref):
            return OutputCheck(float("inf"), False, f"output {index}: NaN or Inf where the default has none, or not where it has")
        error = _error(out, ref) / max(peak, floor, 1e-30)
        worst = max(worst, error)
        if error > rtol_for(ref.dtype, rtol) and not failure:
            failure = (f"output {index} ({ref.dtype}) differs from the default's by {error:.3g} "
                       f"(relative; allowed {rtol_for(ref.dtype, rtol):.3g})")
    return OutputCheck(worst, not failure, failure)


def _is_float(array: np.ndarray) -> bool:
    return array.dtype.kind in "fc" or array.dtype.name == "bfloat16"


def _wide(array: np.ndarray) -> np.ndarray:
    return array.astype(np.complex128 if array.dtype.kind == "c" else np.float64)


def _peak(reference: np.ndarray) -> float:
    wide = _wide(reference)
    return float(np.abs(wide[np.isfinite(wide)]).max(initial=0.0))


def _same_special_values(out: np.ndarray, ref: np.ndarray) -> bool:
    """NaN, +Inf and -Inf at exactly the default's positions (complex: its non-finite ones)."""
    a, b = _wide(out), _wide(ref)
    if a.dtype.kind == "c":
        return np.array_equal(np.isfinite(a), np.isfinite(b))
    return all(np.array_equal(test(a), test(b)) for test in (np.isnan, np.isposinf, np.isneginf))


def _error(out: np.ndarray, ref: np.ndarray) -> float:
    a, b = _wide(out), _wide(ref)
    finite = np.isfinite(b)
    return float(np.abs(a[finite] - b[finite]).max(initial=0.0))
