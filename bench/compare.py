"""Output checks against IREE's interpreter (local-sync) from the same run.

Interpreters of the same VMVX bytecode (IREE local-task, jitvm) must agree bit for bit
when the model promises it (`ModelSpec.exact`); otherwise, and for llvm-cpu (different
code, reduction order and math approximations), differences are reported as the largest
absolute difference and that difference relative to the largest reference magnitude.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SAME_BYTECODE_RTOL = 1e-5  # interpreters of the same bytecode, transcendental calls may differ
NATIVE_RTOL = 1e-3  # llvm-cpu: another compiler's code for the same model


@dataclass(frozen=True)
class Check:
    bitwise: bool
    max_abs: float
    max_rel: float
    ok: bool

    def text(self) -> str:
        if self.bitwise:
            return "bit-exact"
        detail = f"max abs {self.max_abs:.2g}, rel {self.max_rel:.2g}"
        return detail if self.ok else f"MISMATCH ({detail})"


def _bitwise(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def check(reference: list[np.ndarray], outputs: list[np.ndarray], exact: bool, rtol: float) -> Check:
    """`exact`: any bit difference is a mismatch; else relative error must stay under `rtol`."""
    if len(reference) != len(outputs) or any(r.shape != o.shape for r, o in zip(reference, outputs)):
        return Check(False, float("inf"), float("inf"), False)
    bitwise = all(_bitwise(r, o) for r, o in zip(reference, outputs))
    max_abs = max_rel = 0.0
    for r, o in zip(reference, outputs):
        r64, o64 = r.astype(np.float64), o.astype(np.float64)
        if not np.array_equal(np.isnan(r64), np.isnan(o64)):
            return Check(False, float("nan"), float("nan"), False)
        with np.errstate(invalid="ignore"):
            diff = np.where((r64 == o64) | np.isnan(r64), 0.0, np.abs(r64 - o64))  # inf == inf counts as equal
        diff = np.nan_to_num(diff, nan=np.inf)
        largest = float(diff.max()) if diff.size else 0.0
        finite = np.isfinite(r64)
        scale = float(np.max(np.abs(r64[finite]))) if finite.any() else 0.0
        max_abs = max(max_abs, largest)
        max_rel = max(max_rel, largest / scale if scale else (0.0 if largest == 0 else np.inf))
    ok = bitwise or (not exact and max_rel <= rtol)
    return Check(bitwise, max_abs, max_rel, ok)
