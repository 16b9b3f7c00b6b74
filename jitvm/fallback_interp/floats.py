"""f32/f64 semantics for interpreted code: IREE's C evaluation, reproduced with Python floats.

Registers hold float bits; generated code reads an f32 register as a Python float through
a memoryview (C's float -> double conversion) and stores by C's double -> float conversion,
so an f32 add/sub/mul/div/sqrt computed in double and rounded once to float is exactly
IEEE f32 arithmetic (double has more than 2 * 24 + 2 significand bits, so the double rounding
is innocuous). Which NaN an op with NaN operands returns is the host's rule
(runtime.vm.semantics.HOST: x86 the first NaN, aarch64 the first signalling one, else the
first), and CPython may give either (its generic and specialized float ops differ), so a
NaN result is corrected by `first_nan` (or, where an f32's signalling bit was lost in the
conversion to double, `first_nan_f32` from the registers' bits). Moves, selects, loads/stores, abs and neg copy bits and never
quiet a signalling NaN, as IREE's C does. Under the flush-to-zero/denormals-are-zero mode
the HAL sets around dispatches, the hardware conversions flush exactly where IREE's f32
ops do.

Everything libm computes goes through the same libm functions as IREE and the JIT
(runtime.native.mathlib). What Python floats would get wrong is handled here:
  * division by zero raises in Python: `divide_by_zero` gives the IEEE results (0/0: the
    host's default NaN);
  * int -> f32 must round once (Python's int -> float rounds to double first);
  * vm.round.f32.even is IREE's fallback implementation (its C23 branch tests the misspelled
    `__STC_VERSION__` and never compiles), which returns +0.0 for -0.5 (roundevenf: -0.0);
    measured against iree-base-runtime 3.13.
"""

from __future__ import annotations

import math

from ..runtime.vm import abi
from ..runtime.vm.semantics import HOST, FloatRules
from ..runtime.native import mathlib


DEFAULT_NAN = abi.f64_from_slot(HOST.default_nan_f64)  # as a double: the f32 one when stored
_QUIET = 0x0008000000000000  # the quiet bit of an f64 NaN
QUIET_BIT = {"f32": 1 << 22, "f64": 1 << 51}
_EXPONENT = {"f32": 0x7F800000, "f64": 0x7FF0000000000000}
_MAGNITUDE = {"f32": 0x7FFFFFFF, "f64": 0x7FFFFFFFFFFFFFFF}


def libm(name: str):
    """A libm function as a ctypes callable (float arguments are rounded to C's types)."""
    return mathlib.function(name)


# Float <-> bits conversions are the runtime ABI's (C's (float)x: beyond f32 rounds to inf).
f32_bits = abi.f32_slot
bits_f32 = abi.f32_from_slot
f64_bits = abi.f64_slot
bits_f64 = abi.f64_from_slot


def divide_by_zero(x: float, y: float) -> float:
    """x / y for y == +-0.0 with IEEE results (0/0: the host's default NaN), where Python raises."""
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



def is_nan(bits: int, ty: str) -> bool:
    return bits & _MAGNITUDE[ty] > _EXPONENT[ty]


def nan_operand(rules: FloatRules, ty: str, operands) -> int | None:
    """The bits of the NaN an op returns whose operands (bits, in the FPU's order of priority)
    include a NaN, by `rules`; None when none is a NaN (a NaN result is then the default one)."""
    quiet = QUIET_BIT[ty]
    nans = [b for b in operands if is_nan(b, ty)]
    if not nans:
        return None
    if rules.signalling_nan_first:
        for b in nans:
            if not b & quiet:
                return b | quiet
    return nans[0] | quiet


def fma_nan(rules: FloatRules, ty: str, a: int, b: int, c: int) -> int | None:
    """The bits of the NaN a fused a * b + c returns by `rules` (None: not a NaN-operand case)."""
    if rules.fma_inf_zero_default_nan and is_nan(c, ty) and c & QUIET_BIT[ty]:
        mag_a, mag_b = a & _MAGNITUDE[ty], b & _MAGNITUDE[ty]
        if (mag_a, mag_b) in ((0, _EXPONENT[ty]), (_EXPONENT[ty], 0)):
            return rules.default_nan(ty)
    ops = (a, b, c)
    return nan_operand(rules, ty, [ops[i] for i in rules.fma_nan_order])


def first_nan(x: float, y: float, r: float) -> float:
    """The result of a two-operand op whose Python result `r` is NaN, as IREE's C gives it
    (f64 operands, or f32 ones where signalling NaNs need no telling apart).

    NaN inputs may come through any order of operands, or CPython's specialized float ops
    propagate the other one; a NaN produced from non-NaN operands (inf - inf, 0 * inf) is
    the host's default NaN in `r`.
    """
    nan = nan_operand(HOST, "f64", (f64_bits(x), f64_bits(y)))
    return r if nan is None else bits_f64(nan)


def first_nan_f32(x: int, y: int, r: float) -> float:
    """`first_nan` from the f32 operands' bits (their signalling bit does not survive the
    conversion to double)."""
    nan = nan_operand(HOST, "f32", (x, y))
    return r if nan is None else bits_f32(nan)


def fused_fma_nan(ty: str):
    """For a fused vm.fma whose libm result is NaN: (a, b, c bits, r) -> the host's NaN (the
    f32 operands reached libm as doubles, with their signalling bits lost)."""
    to_float = bits_f32 if ty == "f32" else bits_f64

    def fix(a: int, b: int, c: int, r: float) -> float:
        nan = fma_nan(HOST, ty, a, b, c)
        return r if nan is None else to_float(nan)
    return fix
