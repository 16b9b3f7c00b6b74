"""f32/f64 semantics for interpreted code: IREE's C evaluation, reproduced with Python floats.

Registers hold float bits; generated code reads an f32 register as a Python float through
a memoryview (C's float -> double conversion) and stores by C's double -> float conversion,
so an f32 add/sub/mul/div/sqrt computed in double and rounded once to float is exactly
IEEE f32 arithmetic (double has more than 2 * 24 + 2 significand bits, so the double rounding
is innocuous). When both operands are NaN, IREE gets the first one, quieted (x86 SSE);
CPython may give either (its generic and specialized float ops differ), so a NaN result
is corrected by `first_nan`. Moves, selects, loads/stores, abs and neg copy bits and never
quiet a signalling NaN, as IREE's C does. Under the flush-to-zero/denormals-are-zero mode
the HAL sets around dispatches, the hardware conversions flush exactly where IREE's f32
ops do.

Everything libm computes goes through the same libm functions as IREE and the JIT
(runtime.native.mathlib). What Python floats would get wrong is handled here:
  * division by zero raises in Python: `divide_by_zero` gives x86's IEEE results;
  * int -> f32 must round once (Python's int -> float rounds to double first);
  * vm.round.f32.even is IREE's fallback implementation (its C23 branch tests the misspelled
    `__STC_VERSION__` and never compiles), which returns +0.0 for -0.5 (roundevenf: -0.0);
    measured against iree-base-runtime 3.13.
"""

from __future__ import annotations

import math

from ..runtime.vm import abi
from ..runtime.native import mathlib


DEFAULT_NAN = abi.f64_from_slot(0xFFF8000000000000)  # x86's "real indefinite" NaN
_QUIET = 0x0008000000000000  # the quiet bit of an f64 NaN


def libm(name: str):
    """A libm function as a ctypes callable (float arguments are rounded to C's types)."""
    return mathlib.function(name)


# Float <-> bits conversions are the runtime ABI's (C's (float)x: beyond f32 rounds to inf).
f32_bits = abi.f32_slot
bits_f32 = abi.f32_from_slot
f64_bits = abi.f64_slot
bits_f64 = abi.f64_from_slot


def divide_by_zero(x: float, y: float) -> float:
    """x / y for y == +-0.0 with IEEE (x86) results, where Python raises."""
    if x != x:
        return bits_f64(f64_bits(x) | _QUIET)
    if x == 0.0:
        return DEFAULT_NAN
    return math.copysign(math.inf, x) * math.copysign(1.0, y)


def int_to_f32(x: int) -> float:
    """An integer rounded once, to nearest even, to an f32 value (returned as a float)."""
    if -(1 << 53) <= x <= (1 << 53):
        return float(x)  # exact in double; storing it as f32 rounds once
    m = -x if x < 0 else x
    shift = m.bit_length() - 24
    q, r = m >> shift, m & ((1 << shift) - 1)
    half = 1 << (shift - 1)
    if r > half or (r == half and q & 1):
        q += 1
    v = float(q << shift)
    return -v if x < 0 else v


_roundf = mathlib.function("roundf")
_fmodf = mathlib.function("fmodf")
_round = mathlib.function("round")
_fmod = mathlib.function("fmod")


def round_even_f32(x: float) -> float:
    """IREE's vm_round_f32_even: roundf, then ties moved to the even neighbour."""
    r = _roundf(x)
    if abs(x - r) == 0.5 and _fmodf(r, 2.0) != 0:
        r = r - 1.0 if r > 0.0 else r + 1.0
    return r


def round_even_f64(x: float) -> float:
    """IREE's vm_round_f64_even (the same fallback in double)."""
    r = _round(x)
    if abs(x - r) == 0.5 and _fmod(r, 2.0) != 0:
        r = r - 1.0 if r > 0.0 else r + 1.0
    return r



def first_nan(x: float, y: float, r: float) -> float:
    """The result of a two-operand op whose Python result `r` is NaN, as IREE's C gives it.

    x86 SSE returns the first NaN operand, quieted (NaN inputs may come through any
    order of operands, or CPython's specialized float ops propagate the other one); a NaN
    produced from non-NaN operands (inf - inf, 0 * inf) is the default NaN in `r`.
    """
    if x != x:
        return bits_f64(f64_bits(x) | _QUIET)
    if y != y:
        return bits_f64(f64_bits(y) | _QUIET)
    return r
