"""f32/f64 arithmetic, math functions, compares and conversions (EXT_F32, EXT_F64).

How exactness is kept is described in floats.py. Per op, following IREE's ops.h:
  * add/sub/mul/div/sqrt: computed in double, rounded once to the register type;
  * fma: a multiply and an add, each rounded, unless runtime.vm.semantics.FUSED_FMA (IREE's
    x86_64 build does not fuse: FP_FAST_FMAF is not defined there; aarch64's FMADD has NaN
    rules of its own, semantics.FloatRules);
  * rem, ceil, floor, round, transcendental functions, lround/llround: libm;
  * abs/neg flip bits; min/max pick an operand by `<` (NaN handling depends on order) and
    copy its bits; rsqrt is 1 / sqrt(x) rounded at each step;
  * compares are C's: `!=` is true when unordered (so cmp.ne.o is true for NaN);
  * f32 -> i32 is (int32_t)lroundf, -> u32 (uint32_t)llroundf, -> i64 llroundf, -> u64
    (uint64_t)roundf as IREE's compiler converts it; f64 -> i32/u32 round through float
    first (IREE calls lroundf/llroundf on the double); f64 -> i64/u64 are lround/llround.
"""

from __future__ import annotations

from ..frontend.handlers import OpHandlers
from ..runtime.native.mathlib import POWI
from ..runtime.vm.semantics import FUSED_FMA, HOST
from . import floats

handles = OpHandlers("interpreter")  # this family's part of registry.HANDLERS

FLOAT_TYPES = ("f32", "f64")
_SUFFIX = {"f32": "f", "f64": ""}


def value(e, reg, ty: str) -> str:
    return e.f32(reg) if ty == "f32" else e.f64(reg)


def bits(e, reg, ty: str) -> str:
    return e.bits(reg, ty)


def libm(e, name: str, ty: str) -> str:
    return e.const(floats.libm(name + _SUFFIX[ty]), name + _SUFFIX[ty] + "_")


def _name(pattern: str, ty: str) -> str:
    return pattern.format(t=ty) if "{t}" in pattern else f"{pattern}.{ty}"


# --- arithmetic ---------------------------------------------------------------------------------

def binary(op: str, a: str, b: str, operand_bits: tuple[str, str] | None = None) -> str:
    """An expression for `a op b` on Python floats with C's NaN propagation (floats.first_nan).

    `r` holds the raw Python result; the operand expressions are re-read only for NaNs.
    `operand_bits` (expressions of the f32 operands' register bits) tell signalling NaNs
    apart where the host's rule needs it.
    """
    if operand_bits is not None and HOST.signalling_nan_first:
        return f"r if (r := {a} {op} {b}) == r else NAN1B32({operand_bits[0]}, {operand_bits[1]}, r)"
    return f"r if (r := {a} {op} {b}) == r else NAN1({a}, {b}, r)"


def _f32_bits(e, ins, ty: str, *names: str) -> tuple[str, ...] | None:
    return tuple(bits(e, ins[n], ty) for n in names) if ty == "f32" else None


def _arith(op: str):
    def emit(e, ins):
        ty = ins.op.type
        expr = binary(op, value(e, ins["left"], ty), value(e, ins["right"], ty),
                      _f32_bits(e, ins, ty, "left", "right"))
        e.line(f"{value(e, ins['result'], ty)} = {expr}")
    return emit


def _div(e, ins):
    ty = ins.op.type
    e.line(f"x = {value(e, ins['left'], ty)}")
    e.line(f"y = {value(e, ins['right'], ty)}")
    e.line(f"{value(e, ins['result'], ty)} = ({binary('/', 'x', 'y', _f32_bits(e, ins, ty, 'left', 'right'))}) "
           f"if y else FDIV0(x, y)")


def _libm_binary(name: str):
    def emit(e, ins):
        ty = ins.op.type
        fn = libm(e, name, ty)
        e.line(f"{value(e, ins['result'], ty)} = {fn}({value(e, ins['left'], ty)}, {value(e, ins['right'], ty)})")
    return emit


def _powi(e, ins):
    """vm.fpowi: the compiler runtime's __powisf2/__powidf2 with the exponent as an int32
    (IREE truncates the i64 register), the same function the JIT calls."""
    ty = ins.op.type
    fn = e.const(floats.libm(POWI[ty]), POWI[ty] + "_")
    n = e.i64(ins["exponent"])
    e.line(f"{value(e, ins['result'], ty)} = {fn}({value(e, ins['operand'], ty)}, "
           f"(({n} & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000)")


def _libm_unary(name: str):
    def emit(e, ins):
        ty = ins.op.type
        e.line(f"{value(e, ins['result'], ty)} = {libm(e, name, ty)}({value(e, ins['operand'], ty)})")
    return emit


def _minmax(pick_right_when: str):
    """IREE: min = rhs < lhs ? rhs : lhs; max = lhs < rhs ? rhs : lhs (bits of the pick)."""
    def emit(e, ins):
        ty = ins.op.type
        e.line(f"x = {value(e, ins['left'], ty)}")
        e.line(f"y = {value(e, ins['right'], ty)}")
        e.line(f"{bits(e, ins['result'], ty)} = {bits(e, ins['right'], ty)} if {pick_right_when} "
               f"else {bits(e, ins['left'], ty)}")
    return emit


_SIGN = {"f32": "0x80000000", "f64": "0x8000000000000000"}
_MAGNITUDE = {"f32": "0x7FFFFFFF", "f64": "0x7FFFFFFFFFFFFFFF"}


def _abs(e, ins):
    ty = ins.op.type
    e.line(f"{bits(e, ins['result'], ty)} = {bits(e, ins['operand'], ty)} & {_MAGNITUDE[ty]}")


def _neg(e, ins):
    ty = ins.op.type
    e.line(f"{bits(e, ins['result'], ty)} = {bits(e, ins['operand'], ty)} ^ {_SIGN[ty]}")


def _rsqrt(e, ins):
    ty = ins.op.type
    sqrt = libm(e, "sqrt", ty)
    if ty == "f32":  # 1.0f / sqrtf(x): the square root is rounded to float first
        e.line(f"{e.scratch_f32()} = {sqrt}({value(e, ins['operand'], ty)})")
        e.line(f"y = {e.scratch_f32()}")
    else:
        e.line(f"y = {sqrt}({value(e, ins['operand'], ty)})")
    e.line(f"{value(e, ins['result'], ty)} = 1.0 / y if y else FDIV0(1.0, y)")


def _round_even(e, ins):
    ty = ins.op.type
    fn = "REVEN32" if ty == "f32" else "REVEN64"
    e.line(f"{value(e, ins['result'], ty)} = {fn}({value(e, ins['operand'], ty)})")


def _fma(e, ins):
    ty = ins.op.type
    a, b, c = (value(e, ins[n], ty) for n in ("first", "second", "third"))
    out = value(e, ins["result"], ty)
    if FUSED_FMA:  # the hardware's NaN rules, from the operands' bits (floats.fma_nan)
        ab, bb, cb = (bits(e, ins[n], ty) for n in ("first", "second", "third"))
        fix = "FMANAN32" if ty == "f32" else "FMANAN64"
        e.line(f"{out} = r if (r := {libm(e, 'fma', ty)}({a}, {b}, {c})) == r else {fix}({ab}, {bb}, {cb}, r)")
    elif ty == "f32":  # the product is rounded to float before the add
        e.line(f"{e.scratch_f32()} = {binary('*', a, b)}")
        e.line(f"{out} = {binary('+', e.scratch_f32(), c)}")
    else:  # the product as a local, so a NaN check of the sum sees both operands
        e.line(f"p = {binary('*', a, b)}")
        e.line(f"{out} = {binary('+', 'p', c)}")


for _ty in FLOAT_TYPES:
    for _n, _op in (("add", "+"), ("sub", "-"), ("mul", "*")):
        handles(f"{_n}.{_ty}")(_arith(_op))
    handles(f"div.{_ty}")(_div)
    handles(f"fma.{_ty}")(_fma)
    for _n, _f in (("rem", "remainder"), ("atan2", "atan2"), ("pow", "pow")):
        handles(f"{_n}.{_ty}")(_libm_binary(_f))
    for _n in ("atan", "cos", "sin", "exp", "exp2", "expm1", "log", "log10", "log1p", "log2", "tanh", "erf",
               "ceil", "floor", "round", "sqrt"):
        handles(f"{_n}.{_ty}")(_libm_unary(_n))
    handles(f"min.{_ty}")(_minmax("y < x"))
    handles(f"max.{_ty}")(_minmax("x < y"))
    handles(f"abs.{_ty}")(_abs)
    handles(f"neg.{_ty}")(_neg)
    handles(f"rsqrt.{_ty}")(_rsqrt)
    handles(f"round.{_ty}.even")(_round_even)
    handles(f"fpowi.{_ty}")(_powi)


# --- compares -----------------------------------------------------------------------------------

_CMP = {  # C's comparisons; x and y are the operands as Python floats
    "eq.{t}.o": "x == y",
    "eq.{t}.u": "x == y or x != x or y != y",
    "ne.{t}.o": "x != y",
    "ne.{t}.u": "x != y",
    "lt.{t}.o": "x < y",
    "lt.{t}.u": "not x >= y",
    "lte.{t}.o": "x <= y",
    "lte.{t}.u": "not x > y",
}


def _compare(expr: str):
    def emit(e, ins):
        ty = ins.op.type
        e.line(f"x = {value(e, ins['left'], ty)}")
        e.line(f"y = {value(e, ins['right'], ty)}")
        e.line(f"{e.u32(ins['result'])} = {expr}")
    return emit


def _isnan(e, ins):
    e.line(f"x = {value(e, ins['operand'], ins.op.type)}")
    e.line(f"{e.u32(ins['result'])} = x != x")


for _ty in FLOAT_TYPES:
    for _pattern, _expr in _CMP.items():
        handles("cmp." + _name(_pattern, _ty))(_compare(_expr))
    handles(f"cmp.nan.{_ty}")(_isnan)


# --- conversions --------------------------------------------------------------------------------

def _conversion(fn):
    def emit(e, ins):
        fn(e, ins["operand"], ins["result"])
    return emit


def _lround32(name: str):
    """(int32_t)lroundf / (uint32_t)llroundf: the C library's result, truncated to 32 bits."""
    def fn(e, src, dst, ty="f32"):
        e.line(f"{e.u32(dst)} = {e.const(floats.libm(name), name + '_')}({value(e, src, ty)}) & 0xFFFFFFFF")
    return fn


def _with(ty: str, fn):
    return lambda e, src, dst: fn(e, src, dst, ty)


def _libm_to_i64(name: str):
    def fn(e, src, dst, ty):
        e.line(f"{e.u64(dst)} = {e.const(floats.libm(name), name + '_')}({value(e, src, ty)}) "
               f"& 0xFFFFFFFFFFFFFFFF")
    return fn


_CONVERSIONS = {
    "cast.si32.f32": lambda e, s, d: e.line(f"{e.f32(d)} = {e.i32(s)}"),
    "cast.ui32.f32": lambda e, s, d: e.line(f"{e.f32(d)} = {e.u32(s)}"),
    "cast.si64.f32": lambda e, s, d: e.line(f"{e.f32(d)} = I2F32({e.i64(s)})"),
    "cast.ui64.f32": lambda e, s, d: e.line(f"{e.f32(d)} = I2F32({e.u64(s)})"),
    "cast.f32.si32": _lround32("lroundf"),
    "cast.f32.ui32": _lround32("llroundf"),
    "cast.f32.si64": _with("f32", _libm_to_i64("llroundf")),
    "cast.f32.ui64": lambda e, s, d: e.line(f"{e.u64(d)} = CASTF32U64({e.f32(s)})"),
    "bitcast.i32.f32": lambda e, s, d: e.line(f"{e.u32(d)} = {e.u32(s)}"),
    "bitcast.f32.i32": lambda e, s, d: e.line(f"{e.u32(d)} = {e.u32(s)}"),
    "trunc.f64.f32": lambda e, s, d: e.line(f"{e.f32(d)} = {e.f64(s)}"),
    "ext.f32.f64": lambda e, s, d: e.line(f"{e.f64(d)} = {e.f32(s)}"),
    "cast.si32.f64": lambda e, s, d: e.line(f"{e.f64(d)} = {e.i32(s)}"),
    "cast.ui32.f64": lambda e, s, d: e.line(f"{e.f64(d)} = {e.u32(s)}"),
    "cast.si64.f64": lambda e, s, d: e.line(f"{e.f64(d)} = {e.i64(s)}"),
    "cast.ui64.f64": lambda e, s, d: e.line(f"{e.f64(d)} = {e.u64(s)}"),
    # IREE passes the double to lroundf/llroundf: it is rounded to float first.
    "cast.f64.si32": _with("f64", _lround32("lroundf")),
    "cast.f64.ui32": _with("f64", _lround32("llroundf")),
    "cast.f64.si64": _with("f64", _libm_to_i64("lround")),
    "cast.f64.ui64": _with("f64", _libm_to_i64("llround")),
    "bitcast.i64.f64": lambda e, s, d: e.line(f"{e.u64(d)} = {e.u64(s)}"),
    "bitcast.f64.i64": lambda e, s, d: e.line(f"{e.u64(d)} = {e.u64(s)}"),
}

for _n, _fn in _CONVERSIONS.items():
    handles(_n)(_conversion(_fn))
