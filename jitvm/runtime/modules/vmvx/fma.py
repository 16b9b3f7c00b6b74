"""Correctly rounded float32 fused multiply-add over numpy arrays.

a*b is exact in float64; the float64 sum may round, and rounding that again to float32 is
wrong only when the float64 sum lands exactly halfway between two float32 values while the
float64 rounding error is nonzero. That case is detected and fixed with the exact error.
"""

from __future__ import annotations

import numpy as np

_HALF = np.uint64(1 << 28)  # the half-ulp bit of a float32 mantissa inside a float64
_LOW = np.uint64((1 << 29) - 1)


def fma_f32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """round_to_float32(a * b + c) computed exactly, elementwise (broadcasting)."""
    p = np.asarray(a, dtype=np.float64) * np.asarray(b, dtype=np.float64)
    c64 = np.asarray(c, dtype=np.float64)
    with np.errstate(all="ignore"):
        s = np.asarray(p + c64)
        bb = s - p
        err = (p - (s - bb)) + (c64 - bb)  # TwoSum: s + err == p + c exactly
        r = s.astype(np.float32)
        tie = ((s.view(np.uint64) & _LOW) == _HALF) & (err != 0) & np.isfinite(s)
        if tie.any():
            # The true value is off the midpoint s on the side of err: take that neighbour.
            r64 = r.astype(np.float64)
            below = np.where(r64 < s, r, np.nextafter(r, np.float32(-np.inf)))
            above = np.where(r64 > s, r, np.nextafter(r, np.float32(np.inf)))
            r = np.where(tie, np.where(err > 0, above, below), r).astype(np.float32)
    return r
