"""Host-dependent facts of IREE's VM semantics that both backends must share.

IREE's C runtime computes floats with the host's FPU and C library, so some results depend on
the machine it was built for. Each row of FLOAT_RULES was measured against iree-base-runtime
3.13 (x86_64 natively; aarch64 under qemu-aarch64 7.2, bench/aarch64.sh; tests/test_nan_rules
holds the measured cases):

* default NaN (what 0/0, inf-inf, sqrt(-1) give): x86 0xFFC00000 / 0xFFF8000000000000 (negative),
  aarch64 0x7FC00000 / 0x7FF8000000000000 (positive, FPCR.DN's value);
* NaN operands: x86 SSE returns the first NaN operand, quieted; aarch64 the first signalling
  NaN operand, quieted, if there is one, else the first NaN operand;
* vm.fma: fused only where the C library defines FP_FAST_FMA(F) (aarch64: FMADD); on x86_64 it
  is a multiply and an add, each rounded (fma(1+2^-23, 1-2^-23, -1) == 0.0, not -2^-46).
  FMADD looks at NaNs in the order addend, multiplicand, multiplier (sNaN first, as above),
  and 0 * inf + qNaN is the default NaN;
* float -> int conversions: x86 gives INT64_MIN for NaN, inf and out-of-range values (clang's
  pair of cvttss2si for unsigned: exact below 2^64, vm.cast.f32.ui64(2e19) == INT64_MIN);
  aarch64 saturates (NaN -> 0, 2^64 -> INT64_MAX, -1.0 -> 0 unsigned).
* min/max copy the bits of the operand `<` picks, the same everywhere (not in the table).
* integer division by zero and INT_MIN / -1: IREE's x86 build dies of SIGFPE, its aarch64 build
  returns what sdiv/udiv give (x / 0 == 0). jitvm traps on both hosts (its VM semantics).
"""

from __future__ import annotations

import platform
from dataclasses import dataclass


@dataclass(frozen=True)
class FloatRules:
    """How one host's IREE build computes floats (see the module docstring)."""

    arch: str
    default_nan_f32: int
    default_nan_f64: int
    signalling_nan_first: bool  # a signalling NaN operand wins over an earlier quiet one
    fused_fma: bool
    fma_nan_order: tuple[int, ...]  # operand indices (a, b, c of a*b+c) in NaN priority
    fma_inf_zero_default_nan: bool  # 0 * inf + qNaN -> the default NaN
    float_to_int_saturates: bool

    def default_nan(self, ty: str) -> int:
        return self.default_nan_f32 if ty == "f32" else self.default_nan_f64


FLOAT_RULES = {
    "x86_64": FloatRules("x86_64", 0xFFC00000, 0xFFF8000000000000, signalling_nan_first=False,
                         fused_fma=False, fma_nan_order=(0, 1, 2), fma_inf_zero_default_nan=False,
                         float_to_int_saturates=False),
    "aarch64": FloatRules("aarch64", 0x7FC00000, 0x7FF8000000000000, signalling_nan_first=True,
                          fused_fma=True, fma_nan_order=(2, 0, 1), fma_inf_zero_default_nan=True,
                          float_to_int_saturates=True),
}

_MACHINE_ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}

#: This host's rules (x86_64's on machines IREE's table does not name).
HOST = FLOAT_RULES[_MACHINE_ARCH.get(platform.machine().lower(), "x86_64")]

FUSED_FMA = HOST.fused_fma
FLOAT_TO_INT_SATURATES = HOST.float_to_int_saturates

#: Whether IREE's own build dies (SIGFPE) on integer division by zero and INT_MIN / -1 here
#: (x86's idiv faults; aarch64's sdiv/udiv return 0 and INT_MIN). jitvm traps everywhere;
#: this only says what the oracle does (the corpus's ORACLE-CRASH calls).
IREE_DIVISION_FAULTS = HOST.arch == "x86_64"

# Deepest chain of VM calls before a call fails with RESOURCE_EXHAUSTED (IREE bounds its
# stack by bytes; jitvm by frames, the same in both backends).
MAX_CALL_DEPTH = 512
