"""Integer arithmetic, bit ops, shifts, compares, int conversions, constants, select, switch.

Semantics follow IREE's C runtime: two's-complement wraparound, shift amounts masked to
the operand width, ctlz(0) = width, abs(INT_MIN) = INT_MIN; division by zero and the
signed INT_MIN / -1 overflow (which crash IREE's runtime with SIGFPE) trap instead.
"""

from __future__ import annotations

from ...frontend.handlers import OpHandlers
from ...runtime.native import ir

from ...runtime.vm import traps
from .types import BANK_TYPE, I1, I32, I64, const

lowers = OpHandlers("lowering")  # this family's part of registry.LOWERINGS

INT_TYPES = ("i32", "i64")


def _bits(ty: str) -> int:
    return 32 if ty == "i32" else 64


def _intrinsic(e, name: str, ty, nargs: int, extra=()):
    return e.mod.intrinsic(name, ty, [ty] * nargs + [x.type for x in extra])


def _binary(fn):
    def lower(e, ins):
        ty = ins.op.type
        a, b = e.get(ins["left"], ty), e.get(ins["right"], ty)
        e.set(ins["result"], fn(e, a, b, ty), ty)
    return lower


def _minmax(pred):
    def fn(e, a, b, ty):
        return e.b.select(e.b.icmp_signed(pred, a, b) if pred[0] != "u" else
                          e.b.icmp_unsigned(pred[1:], a, b), a, b)
    return fn


def _shift_amount(e, amount, ty):
    masked = e.b.and_(amount, const(I32, _bits(ty) - 1))
    return masked if ty == "i32" else e.b.zext(masked, I64)


def _division(signed: bool, remainder: bool):
    def lower(e, ins):
        ty = ins.op.type
        t = BANK_TYPE[ty]
        a, b = e.get(ins["left"], ty), e.get(ins["right"], ty)
        e.check(e.b.icmp_unsigned("!=", b, const(t, 0)), traps.DIVIDE_BY_ZERO)
        if signed:
            overflow = e.b.and_(e.b.icmp_signed("==", a, const(t, -(1 << (_bits(ty) - 1)))),
                                e.b.icmp_signed("==", b, const(t, -1)))
            e.check(e.b.not_(overflow), traps.DIVIDE_OVERFLOW)
            r = e.b.srem(a, b) if remainder else e.b.sdiv(a, b)
        else:
            r = e.b.urem(a, b) if remainder else e.b.udiv(a, b)
        e.set(ins["result"], r, ty)
    return lower


_BINARY = {
    "add": lambda e, a, b, ty: e.b.add(a, b),
    "sub": lambda e, a, b, ty: e.b.sub(a, b),
    "mul": lambda e, a, b, ty: e.b.mul(a, b),
    "and": lambda e, a, b, ty: e.b.and_(a, b),
    "or": lambda e, a, b, ty: e.b.or_(a, b),
    "xor": lambda e, a, b, ty: e.b.xor(a, b),
    "min.{t}.s": _minmax("<"),
    "min.{t}.u": _minmax("u<"),
    "max.{t}.s": _minmax(">"),
    "max.{t}.u": _minmax("u>"),
}

_UNARY = {
    "not": lambda e, a, ty: e.b.not_(a),
    "abs": lambda e, a, ty: e.b.call(_intrinsic(e, f"llvm.abs.{ty}", BANK_TYPE[ty], 1, [const(I1, 0)]),
                                     [a, const(I1, 0)]),
    "ctlz": lambda e, a, ty: e.b.call(_intrinsic(e, f"llvm.ctlz.{ty}", BANK_TYPE[ty], 1, [const(I1, 0)]),
                                      [a, const(I1, 0)]),
}


def _name(pattern: str, ty: str) -> str:
    return pattern.format(t=ty) if "{t}" in pattern else f"{pattern}.{ty}"


for _ty in INT_TYPES:
    for _pattern, _fn in _BINARY.items():
        lowers(_name(_pattern, _ty))(_binary(_fn))
    for _pattern, _fn in _UNARY.items():
        def _unary_lower(e, ins, fn=_fn):
            ty = ins.op.type
            e.set(ins["result"], fn(e, e.get(ins["operand"], ty), ty), ty)
        lowers(_name(_pattern, _ty))(_unary_lower)
    for _signed in (True, False):
        for _rem in (False, True):
            lowers(f"{'rem' if _rem else 'div'}.{_ty}.{'s' if _signed else 'u'}")(_division(_signed, _rem))


@lowers("fma.i32", "fma.i64")
def _fma_int(e, ins):
    ty = ins.op.type
    a, b, c = (e.get(ins[n], ty) for n in ("first", "second", "third"))
    e.set(ins["result"], e.b.add(e.b.mul(a, b), c), ty)


@lowers("shl.i32", "shl.i64", "shr.i32.s", "shr.i64.s", "shr.i32.u", "shr.i64.u")
def _shift(e, ins):
    ty = ins.op.type
    a = e.get(ins["operand"], ty)
    n = _shift_amount(e, e.i32(ins["amount"]), ty)
    kind = ins.op.name.split(".")[0] + ("" if ins.op.name.startswith("shl") else ins.op.name[-2:])
    r = {"shl": e.b.shl, "shr.s": e.b.ashr, "shr.u": e.b.lshr}[kind](a, n)
    e.set(ins["result"], r, ty)


# --- narrowing/widening within and between i32 and i64 ----------------------------------------

_CONVERSIONS = {
    "trunc.i32.i8": lambda e, a: e.b.zext(e.b.trunc(a, ir.IntType(8)), I32),
    "trunc.i32.i16": lambda e, a: e.b.zext(e.b.trunc(a, ir.IntType(16)), I32),
    "ext.i8.i32.s": lambda e, a: e.b.sext(e.b.trunc(a, ir.IntType(8)), I32),
    "ext.i8.i32.u": lambda e, a: e.b.zext(e.b.trunc(a, ir.IntType(8)), I32),
    "ext.i16.i32.s": lambda e, a: e.b.sext(e.b.trunc(a, ir.IntType(16)), I32),
    "ext.i16.i32.u": lambda e, a: e.b.zext(e.b.trunc(a, ir.IntType(16)), I32),
    "trunc.i64.i32": lambda e, a: e.b.trunc(a, I32),
    "ext.i32.i64.s": lambda e, a: e.b.sext(a, I64),
    "ext.i32.i64.u": lambda e, a: e.b.zext(a, I64),
}


def _conversion(fn):
    def lower(e, ins):
        src = ins.op.fields[0].bank
        e.set(ins["result"], fn(e, e.get(ins["operand"], src)), ins.op.fields[1].bank)
    return lower


for _name_, _fn in _CONVERSIONS.items():
    lowers(_name_)(_conversion(_fn))


# --- compares ----------------------------------------------------------------------------------

_CMP = {"eq": ("==", False), "ne": ("!=", False), "lt.{t}.s": ("<", True), "lt.{t}.u": ("<", False)}

for _ty in INT_TYPES:
    for _pattern, (_pred, _signed) in _CMP.items():
        def _cmp_lower(e, ins, pred=_pred, signed=_signed):
            ty = ins.op.type
            a, b = e.get(ins["left"], ty), e.get(ins["right"], ty)
            c = e.b.icmp_signed(pred, a, b) if signed else e.b.icmp_unsigned(pred, a, b)
            e.set(ins["result"], e.b.zext(c, I32), "i32")
        lowers("cmp." + _name(_pattern, _ty))(_cmp_lower)

    def _nz_lower(e, ins):
        ty = ins.op.type
        c = e.b.icmp_unsigned("!=", e.get(ins["operand"], ty), const(BANK_TYPE[ty], 0))
        e.set(ins["result"], e.b.zext(c, I32), "i32")
    lowers(f"cmp.nz.{_ty}")(_nz_lower)


# --- constants, select, switch (all value types) ------------------------------------------------

@lowers("const.i32", "const.i64", "const.f32", "const.f64")
def _const(e, ins):
    ty = ins.op.type
    e.set(ins["result"], const(BANK_TYPE[ty], ins["value"]), ty)


@lowers("const.i32.zero", "const.i64.zero", "const.f32.zero", "const.f64.zero")
def _const_zero(e, ins):
    ty = ins.op.type
    e.set(ins["result"], const(BANK_TYPE[ty], 0), ty)


@lowers("select.i32", "select.i64", "select.f32", "select.f64")
def _select(e, ins):
    ty = ins.op.type
    c = e.b.icmp_unsigned("!=", e.i32(ins["condition"]), const(I32, 0))
    e.set(ins["result"], e.b.select(c, e.get(ins["true_value"], ty), e.get(ins["false_value"], ty)), ty)


@lowers("switch.i32", "switch.i64", "switch.f32", "switch.f64")
def _switch(e, ins):
    ty = ins.op.type
    index = e.i32(ins["index"])
    value = e.get(ins["default_value"], ty)
    for i, reg in enumerate(ins["values"]):
        # IREE reads every case through the list's register as the op's type, except that
        # i64 cases go through the i32 view (a 3.13 quirk the oracle reproduces).
        case = e.get(reg, "i32") if ty == "i64" else e.get(reg, ty)
        if ty == "i64":
            case = e.b.sext(case, I64)
        value = e.b.select(e.b.icmp_unsigned("==", index, const(I32, i)), case, value)
    e.set(ins["result"], value, ty)
