"""f32/f64 arithmetic, math functions, compares and conversions (EXT_F32, EXT_F64).

No fast-math flags anywhere; results must equal IREE's runtime bit for bit. IREE evaluates
with C and libm: exact ops map to LLVM instructions/intrinsics that compute the same
correctly rounded results; everything libm computes (exp, atan2, remainder, lround...) is a
call to the same libm symbol the interpreter uses. `vm.fma` is fused only where IREE's
runtime fuses it (runtime.vm.semantics.FUSED_FMA). Casts reproduce IREE's conversions,
including its routes through lroundf/llroundf and through float for f64 -> i32.
"""

from __future__ import annotations

from ...frontend.handlers import OpHandlers
from ...runtime.native import ir
from ...runtime.native.mathlib import POWI

from ...runtime.vm.abi import f64_from_slot
from ...runtime.vm.semantics import FUSED_FMA, HOST
from .types import BANK_TYPE, F32, F64, I32, I64, const

lowers = OpHandlers("lowering")  # this family's part of registry.LOWERINGS

FLOAT_TYPES = ("f32", "f64")
_SUFFIX = {"f32": "f", "f64": ""}  # libm name suffix
_LLVM = {"f32": "f32", "f64": "f64"}


def _llvm_unary(e, name: str, ty: str, x):
    t = BANK_TYPE[ty]
    return e.b.call(e.mod.intrinsic(f"llvm.{name}.{_LLVM[ty]}", t, [t]), [x])


def _libm(e, name: str, ty: str, *args):
    """A call of the host libm function (`nobuiltin`: LLVM must not fold it at compile time,
    where it would compute e.g. atan2f in double and round, 1 ulp away from glibc's), or of
    its wrapper with bit-identical vector forms (runtime.native.vecmath) where there is one."""
    fn, attrs = e.mod.math_call(name + _SUFFIX[ty])
    return e.b.call(fn, list(args), attrs=attrs)


_QUIET_BIT = {"f32": 1 << 22, "f64": 1 << 51}
_INT_OF = {"f32": I32, "f64": I64}


def _quiet(e, ty: str, x):
    """`x` with its quiet-NaN bit set, as the FPU returns a NaN operand."""
    t = _INT_OF[ty]
    bits = e.b.or_(e.b.bitcast(x, t), const(t, _QUIET_BIT[ty]))
    return e.b.bitcast(bits, BANK_TYPE[ty])


# The NaN this host's FPU makes from non-NaN operands (as a double: an f32 constant of it is
# the f32 default NaN): x86 negative, aarch64 positive (runtime.vm.semantics).
_DEFAULT_NAN = f64_from_slot(HOST.default_nan_f64)


def _is_signalling(e, ty: str, x):
    t = _INT_OF[ty]
    quiet = e.b.icmp_unsigned("!=", e.b.and_(e.b.bitcast(x, t), const(t, _QUIET_BIT[ty])), const(t, 0))
    return e.b.and_(e.b.fcmp_unordered("uno", x, x), e.b.not_(quiet))


def _nan_rule(e, ty: str, result, *operands, override=None):
    """`result` with the NaN IREE's C gets from the host FPU (runtime.vm.semantics.HOST): the
    first NaN operand (`operands` in the FPU's order of priority), quieted, where on aarch64
    a signalling one comes first; a NaN made from non-NaN operands (0/0, inf-inf, 0*inf,
    sqrt(-1)) is the default NaN. `override` (a condition) forces the default NaN over a quiet
    NaN operand (aarch64's 0 * inf + qNaN).

    LLVM does not keep NaN bits: it may swap the operands of a commutative fadd/fmul, folds
    `fdiv X, NaN` to the NaN whatever X is, `fmul X, 1.0` to an unquieted X, and its
    constant folder makes NaNs positive. Selecting the NaN here pins the bits whatever LLVM
    does to the operation itself.

    Not in the guarded fast copy of a loop nest: there the selects lengthen every reduction's
    dependency chain and block vectorisation (measured 2.4x on matmul 128, 4.4x on a 3x3
    conv), so when NaNs meet there (two with different payloads, or one LLVM folded) either
    payload or sign may come out.
    """
    if e.fast_copy:
        return result
    b = e.b
    default = const(BANK_TYPE[ty], _DEFAULT_NAN)
    ordered = b.fcmp_ordered("ord", operands[0], operands[0])
    for x in operands[1:]:
        ordered = b.and_(ordered, b.fcmp_ordered("ord", x, x))
    made = b.and_(b.fcmp_unordered("uno", result, result), ordered)
    r = b.select(made, default, result)
    for x in reversed(operands):
        r = b.select(b.fcmp_unordered("uno", x, x), _quiet(e, ty, x), r)
    if override is not None:
        r = b.select(override, default, r)
    if HOST.signalling_nan_first:
        for x in reversed(operands):
            r = b.select(_is_signalling(e, ty, x), _quiet(e, ty, x), r)
    return r


def _inf_times_zero_plus_qnan(e, ty: str, a, b, c):
    """0 * inf + qNaN (either order of the product): FMADD's default-NaN case."""
    t = BANK_TYPE[ty]
    bld = e.b
    mag_a, mag_b = _llvm_unary(e, "fabs", ty, a), _llvm_unary(e, "fabs", ty, b)
    inf, zero = const(t, float("inf")), const(t, 0.0)
    inf_zero = bld.or_(bld.and_(bld.fcmp_ordered("==", mag_a, inf), bld.fcmp_ordered("==", mag_b, zero)),
                       bld.and_(bld.fcmp_ordered("==", mag_a, zero), bld.fcmp_ordered("==", mag_b, inf)))
    quiet_c = bld.and_(bld.fcmp_unordered("uno", c, c), bld.not_(_is_signalling(e, ty, c)))
    return bld.and_(inf_zero, quiet_c)


def _round_even(e, ty: str, x):
    """IREE rounds ties away from zero and then steps back to even, so -0.5 gives +0.0."""
    t = BANK_TYPE[ty]
    r = _llvm_unary(e, "roundeven", ty, x)
    return e.b.select(e.b.fcmp_ordered("==", x, const(t, -0.5)), const(t, 0.0), r)


_BINARY = {
    "add": lambda e, ty, a, b: _nan_rule(e, ty, e.b.fadd(a, b), a, b),
    "sub": lambda e, ty, a, b: _nan_rule(e, ty, e.b.fsub(a, b), a, b),
    "mul": lambda e, ty, a, b: _nan_rule(e, ty, e.b.fmul(a, b), a, b),
    "div": lambda e, ty, a, b: _nan_rule(e, ty, e.b.fdiv(a, b), a, b),
    "rem": lambda e, ty, a, b: _libm(e, "remainder", ty, a, b),
    "atan2": lambda e, ty, a, b: _libm(e, "atan2", ty, a, b),
    "pow": lambda e, ty, a, b: _libm(e, "pow", ty, a, b),
    # IREE: min = rhs < lhs ? rhs : lhs; max = lhs < rhs ? rhs : lhs (NaN depends on order).
    "min": lambda e, ty, a, b: e.b.select(e.b.fcmp_ordered("<", b, a), b, a),
    "max": lambda e, ty, a, b: e.b.select(e.b.fcmp_ordered("<", a, b), b, a),
}

_UNARY = {
    "abs": lambda e, ty, x: _llvm_unary(e, "fabs", ty, x),
    "neg": lambda e, ty, x: e.b.fneg(x),
    "ceil": lambda e, ty, x: _llvm_unary(e, "ceil", ty, x),
    "floor": lambda e, ty, x: _llvm_unary(e, "floor", ty, x),
    "round": lambda e, ty, x: _llvm_unary(e, "round", ty, x),
    "round.{t}.even": _round_even,
    "sqrt": lambda e, ty, x: _nan_rule(e, ty, _llvm_unary(e, "sqrt", ty, x), x),
    "rsqrt": lambda e, ty, x: _nan_rule(e, ty, e.b.fdiv(const(BANK_TYPE[ty], 1.0), _llvm_unary(e, "sqrt", ty, x)), x),
}
for _fn in ("atan", "cos", "sin", "exp", "exp2", "expm1", "log", "log10", "log1p", "log2", "tanh", "erf"):
    _UNARY[_fn] = (lambda name: lambda e, ty, x: _libm(e, name, ty, x))(_fn)


def _name(pattern: str, ty: str) -> str:
    return pattern.format(t=ty) if "{t}" in pattern else f"{pattern}.{ty}"


for _ty in FLOAT_TYPES:
    for _pattern, _fn in _BINARY.items():
        def _bin(e, ins, fn=_fn):
            ty = ins.op.type
            e.set(ins["result"], fn(e, ty, e.get(ins["left"], ty), e.get(ins["right"], ty)), ty)
        lowers(_name(_pattern, _ty))(_bin)
    for _pattern, _fn in _UNARY.items():
        def _un(e, ins, fn=_fn):
            ty = ins.op.type
            e.set(ins["result"], fn(e, ty, e.get(ins["operand"], ty)), ty)
        lowers(_name(_pattern, _ty))(_un)


@lowers("fpowi.f32", "fpowi.f64")
def _fpowi(e, ins):
    """The compiler runtime's powi (as IREE computes it), the i64 exponent truncated to i32."""
    ty = ins.op.type
    n = e.b.trunc(e.get(ins["exponent"], "i64"), I32)
    fn = e.runtime(POWI[ty])
    e.set(ins["result"], e.b.call(fn, [e.get(ins["operand"], ty), n], attrs=("nobuiltin",)), ty)


@lowers("fma.f32", "fma.f64")
def _fma(e, ins):
    ty = ins.op.type
    t = BANK_TYPE[ty]
    a, b, c = (e.get(ins[n], ty) for n in ("first", "second", "third"))
    if FUSED_FMA:  # FMADD's NaN rules: operands in HOST.fma_nan_order, 0 * inf + qNaN
        r = e.b.call(e.mod.intrinsic(f"llvm.fma.{_LLVM[ty]}", t, [t, t, t]), [a, b, c])
        ops = (a, b, c)
        override = _inf_times_zero_plus_qnan(e, ty, a, b, c) if HOST.fma_inf_zero_default_nan else None
        r = _nan_rule(e, ty, r, *(ops[i] for i in HOST.fma_nan_order), override=override)
    else:
        r = _BINARY["add"](e, ty, _BINARY["mul"](e, ty, a, b), c)
    e.set(ins["result"], r, ty)


# --- compares: C's ==, != (true when unordered), isless, islessequal, isnan -----------------

_CMP = {"eq.{t}.o": "oeq", "eq.{t}.u": "ueq", "ne.{t}.o": "une", "ne.{t}.u": "une",
        "lt.{t}.o": "olt", "lt.{t}.u": "ult", "lte.{t}.o": "ole", "lte.{t}.u": "ule"}
_FCMP = {"oeq": ("==", True), "ueq": ("==", False), "une": ("!=", False), "olt": ("<", True),
         "ult": ("<", False), "ole": ("<=", True), "ule": ("<=", False)}

for _ty in FLOAT_TYPES:
    for _pattern, _pred in _CMP.items():
        def _cmp(e, ins, pred=_pred):
            ty = ins.op.type
            a, b = e.get(ins["left"], ty), e.get(ins["right"], ty)
            op, ordered = _FCMP[pred]
            c = e.b.fcmp_ordered(op, a, b) if ordered else e.b.fcmp_unordered(op, a, b)
            e.set(ins["result"], e.b.zext(c, I32), "i32")
        lowers("cmp." + _pattern.format(t=_ty))(_cmp)

    def _isnan(e, ins):
        ty = ins.op.type
        x = e.get(ins["operand"], ty)
        e.set(ins["result"], e.b.zext(e.b.fcmp_unordered("uno", x, x), I32), "i32")
    lowers(f"cmp.nan.{_ty}")(_isnan)


# --- conversions ----------------------------------------------------------------------------

def _lround32(e, x32):
    return e.b.trunc(e.b.call(e.runtime("lroundf"), [x32]), I32)


def _llround32(e, x32):
    return e.b.call(e.runtime("llroundf"), [x32])


_CONVERSIONS = {
    "cast.si32.f32": lambda e, x: e.b.sitofp(x, F32),
    "cast.ui32.f32": lambda e, x: e.b.uitofp(x, F32),
    "cast.si64.f32": lambda e, x: e.b.sitofp(x, F32),
    "cast.ui64.f32": lambda e, x: e.b.uitofp(x, F32),
    "cast.f32.si32": lambda e, x: _lround32(e, x),
    "cast.f32.ui32": lambda e, x: e.b.trunc(_llround32(e, x), I32),
    "cast.f32.si64": lambda e, x: _llround32(e, x),
    "cast.f32.ui64": lambda e, x: e.b.call(e.runtime("jv_cast_f32_ui64"), [x]),
    "bitcast.i32.f32": lambda e, x: e.b.bitcast(x, F32),
    "bitcast.f32.i32": lambda e, x: e.b.bitcast(x, I32),
    "trunc.f64.f32": lambda e, x: e.b.fptrunc(x, F32),
    "ext.f32.f64": lambda e, x: e.b.fpext(x, F64),
    "cast.si32.f64": lambda e, x: e.b.sitofp(x, F64),
    "cast.ui32.f64": lambda e, x: e.b.uitofp(x, F64),
    "cast.si64.f64": lambda e, x: e.b.sitofp(x, F64),
    "cast.ui64.f64": lambda e, x: e.b.uitofp(x, F64),
    # IREE rounds f64 -> i32 through float: (int32_t)lroundf(x), (uint32_t)llroundf(x).
    "cast.f64.si32": lambda e, x: _lround32(e, e.b.fptrunc(x, F32)),
    "cast.f64.ui32": lambda e, x: e.b.trunc(_llround32(e, e.b.fptrunc(x, F32)), I32),
    "cast.f64.si64": lambda e, x: e.b.call(e.runtime("lround"), [x]),
    "cast.f64.ui64": lambda e, x: e.b.call(e.runtime("llround"), [x]),
    "bitcast.i64.f64": lambda e, x: e.b.bitcast(x, F64),
    "bitcast.f64.i64": lambda e, x: e.b.bitcast(x, I64),
}

for _name_, _fn in _CONVERSIONS.items():
    def _conv(e, ins, fn=_fn):
        src, dst = ins.op.fields[0].bank, ins.op.fields[1].bank
        e.set(ins["result"], fn(e, e.get(ins["operand"], src)), dst)
    lowers(_name_)(_conv)
