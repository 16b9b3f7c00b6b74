"""Integer ops, constants, select and switch: IREE's C semantics (runtime/src/iree/vm/ops.h).

Results are stored through the unsigned views masked to the width: two's-complement
wraparound. Shift amounts are masked to the operand width (IREE: `amount &= 0x1F/0x3F`),
ctlz(0) is the width, abs(INT_MIN) is INT_MIN, division truncates toward zero and the
remainder takes the dividend's sign. Division by zero and the signed INT_MIN / -1 overflow
(and INT_MIN % -1) kill IREE's runtime with SIGFPE on x86; jitvm traps instead, with
INVALID_ARGUMENT (runtime.vm.traps DIVIDE_BY_ZERO / DIVIDE_OVERFLOW, as the JIT does).

`vm.switch.i64` reads the chosen case through the i32 view of its register, sign-extended:
that is what IREE 3.13 does (a bug the corpus records as ORACLE-QUIRK), and the JIT too.
"""

from __future__ import annotations

import struct

from ..frontend.handlers import OpHandlers
from ..frontend.floatbits import f32_to_bits

handles = OpHandlers("interpreter")  # this family's part of registry.HANDLERS

INT_TYPES = ("i32", "i64")
MASK = {"i32": "0xFFFFFFFF", "i64": "0xFFFFFFFFFFFFFFFF"}
INT_MIN = {"i32": -(1 << 31), "i64": -(1 << 63)}
BITS = {"i32": 32, "i64": 64}


def signed(e, reg, ty: str) -> str:
    return e.i32(reg) if ty == "i32" else e.i64(reg)


def unsigned(e, reg, ty: str) -> str:
    return e.u32(reg) if ty == "i32" else e.u64(reg)


def _name(pattern: str, ty: str) -> str:
    return pattern.format(t=ty) if "{t}" in pattern else f"{pattern}.{ty}"


# --- arithmetic and bit ops ---------------------------------------------------------------------

_WRAPPING = {"add": "+", "sub": "-", "mul": "*"}
_BITWISE = {"and": "&", "or": "|", "xor": "^"}


def _wrapping(op: str):
    def emit(e, ins):
        ty = ins.op.type
        a, b = unsigned(e, ins["left"], ty), unsigned(e, ins["right"], ty)
        e.line(f"{unsigned(e, ins['result'], ty)} = ({a} {op} {b}) & {MASK[ty]}")
    return emit


def _bitwise(op: str):
    def emit(e, ins):
        ty = ins.op.type
        a, b = unsigned(e, ins["left"], ty), unsigned(e, ins["right"], ty)
        e.line(f"{unsigned(e, ins['result'], ty)} = {a} {op} {b}")
    return emit


def _minmax(pick_right_when: str, is_signed: bool):
    """IREE: min = rhs < lhs ? rhs : lhs; max = lhs < rhs ? rhs : lhs."""
    def emit(e, ins):
        ty = ins.op.type
        view = signed if is_signed else unsigned
        e.line(f"x = {view(e, ins['left'], ty)}")
        e.line(f"y = {view(e, ins['right'], ty)}")
        e.line(f"{view(e, ins['result'], ty)} = y if {pick_right_when} else x")
    return emit


def _div_checks(e, ty: str, is_signed: bool) -> None:
    with e.indented("if not y:"):
        e.raise_("TRAP(K_DIVIDE_BY_ZERO)")
    if is_signed:
        with e.indented(f"if y == -1 and x == {INT_MIN[ty]}:"):
            e.raise_("TRAP(K_DIVIDE_OVERFLOW)")


def _division(is_signed: bool, remainder: bool):
    def emit(e, ins):
        ty = ins.op.type
        view = signed if is_signed else unsigned
        e.line(f"x = {view(e, ins['left'], ty)}")
        e.line(f"y = {view(e, ins['right'], ty)}")
        _div_checks(e, ty, is_signed)
        out = unsigned(e, ins["result"], ty)
        if not is_signed:
            e.line(f"{out} = x {'%' if remainder else '//'} y")
        elif remainder:  # C: the remainder has the dividend's sign
            e.line("t = abs(x) % abs(y)")
            e.line(f"{out} = (-t if x < 0 else t) & {MASK[ty]}")
        else:  # C: the quotient truncates toward zero
            e.line(f"{out} = (x // y if (x ^ y) >= 0 else -(-x // y)) & {MASK[ty]}")
    return emit


for _ty in INT_TYPES:
    for _n, _op in _WRAPPING.items():
        handles(f"{_n}.{_ty}")(_wrapping(_op))
    for _n, _op in _BITWISE.items():
        handles(f"{_n}.{_ty}")(_bitwise(_op))
    handles(f"min.{_ty}.s")(_minmax("y < x", True))
    handles(f"min.{_ty}.u")(_minmax("y < x", False))
    handles(f"max.{_ty}.s")(_minmax("x < y", True))
    handles(f"max.{_ty}.u")(_minmax("x < y", False))
    for _s in (True, False):
        for _r in (False, True):
            handles(f"{'rem' if _r else 'div'}.{_ty}.{'s' if _s else 'u'}")(_division(_s, _r))


@handles("fma.i32", "fma.i64")
def _fma(e, ins):
    ty = ins.op.type
    a, b, c = (unsigned(e, ins[n], ty) for n in ("first", "second", "third"))
    e.line(f"{unsigned(e, ins['result'], ty)} = ({a} * {b} + {c}) & {MASK[ty]}")


@handles("not.i32", "not.i64")
def _not(e, ins):
    ty = ins.op.type
    e.line(f"{unsigned(e, ins['result'], ty)} = {unsigned(e, ins['operand'], ty)} ^ {MASK[ty]}")


@handles("abs.i32", "abs.i64")
def _abs(e, ins):
    ty = ins.op.type
    e.line(f"{unsigned(e, ins['result'], ty)} = abs({signed(e, ins['operand'], ty)}) & {MASK[ty]}")


@handles("ctlz.i32", "ctlz.i64")
def _ctlz(e, ins):
    ty = ins.op.type
    e.line(f"{unsigned(e, ins['result'], ty)} = {BITS[ty]} - {unsigned(e, ins['operand'], ty)}.bit_length()")


@handles("shl.i32", "shl.i64", "shr.i32.s", "shr.i64.s", "shr.i32.u", "shr.i64.u")
def _shift(e, ins):
    ty = ins.op.type
    amount = f"({e.u32(ins['amount'])} & {BITS[ty] - 1})"
    out = unsigned(e, ins["result"], ty)
    name = ins.op.name
    if name.startswith("shl"):
        e.line(f"{out} = ({unsigned(e, ins['operand'], ty)} << {amount}) & {MASK[ty]}")
    elif name.endswith(".s"):
        e.line(f"{out} = ({signed(e, ins['operand'], ty)} >> {amount}) & {MASK[ty]}")
    else:
        e.line(f"{out} = {unsigned(e, ins['operand'], ty)} >> {amount}")


# --- width changes ------------------------------------------------------------------------------

@handles("trunc.i32.i8", "trunc.i32.i16", "ext.i8.i32.u", "ext.i16.i32.u")
def _zero_extend(e, ins):
    mask = "0xFF" if ".i8" in ins.op.name else "0xFFFF"
    e.line(f"{e.u32(ins['result'])} = {e.u32(ins['operand'])} & {mask}")


@handles("ext.i8.i32.s", "ext.i16.i32.s")
def _sign_extend(e, ins):
    bits = 8 if ".i8." in ins.op.name else 16
    mask, sign = (1 << bits) - 1, 1 << (bits - 1)
    e.line(f"{e.i32(ins['result'])} = (({e.u32(ins['operand'])} & {mask:#x}) ^ {sign:#x}) - {sign:#x}")


@handles("trunc.i64.i32")
def _trunc64(e, ins):
    e.line(f"{e.u32(ins['result'])} = {e.u64(ins['operand'])} & 0xFFFFFFFF")


@handles("ext.i32.i64.s")
def _ext64s(e, ins):
    e.line(f"{e.i64(ins['result'])} = {e.i32(ins['operand'])}")


@handles("ext.i32.i64.u")
def _ext64u(e, ins):
    e.line(f"{e.u64(ins['result'])} = {e.u32(ins['operand'])}")


# --- compares -----------------------------------------------------------------------------------

_CMP = {"eq": ("==", False), "ne": ("!=", False), "lt.{t}.s": ("<", True), "lt.{t}.u": ("<", False)}


def _compare(pred: str, is_signed: bool):
    def emit(e, ins):
        ty = ins.op.type
        view = signed if is_signed else unsigned
        e.line(f"{e.u32(ins['result'])} = {view(e, ins['left'], ty)} {pred} {view(e, ins['right'], ty)}")
    return emit


for _ty in INT_TYPES:
    for _pattern, (_pred, _signed_cmp) in _CMP.items():
        handles("cmp." + _name(_pattern, _ty))(_compare(_pred, _signed_cmp))


@handles("cmp.nz.i32", "cmp.nz.i64")
def _nz(e, ins):
    e.line(f"{e.u32(ins['result'])} = {unsigned(e, ins['operand'], ins.op.type)} != 0")


# --- constants, select, switch (every value type; floats move as bits) ---------------------------

_F64 = struct.Struct("<d")
_U64 = struct.Struct("<Q")


def constant_bits(ty: str, value) -> int:
    """The register bits of an immediate of type `ty`."""
    if ty == "i32":
        return value & 0xFFFFFFFF
    if ty == "i64":
        return value & 0xFFFFFFFFFFFFFFFF
    if ty == "f32":
        return f32_to_bits(value)
    return _U64.unpack(_F64.pack(value))[0]


@handles("const.i32", "const.i64", "const.f32", "const.f64")
def _const(e, ins):
    ty = ins.op.type
    e.line(f"{e.bits(ins['result'], ty)} = {constant_bits(ty, ins['value']):#x}")


@handles("const.i32.zero", "const.i64.zero", "const.f32.zero", "const.f64.zero")
def _zero(e, ins):
    e.line(f"{e.bits(ins['result'], ins.op.type)} = 0")


@handles("select.i32", "select.i64", "select.f32", "select.f64")
def _select(e, ins):
    ty = ins.op.type
    t, f = e.bits(ins["true_value"], ty), e.bits(ins["false_value"], ty)
    e.line(f"{e.bits(ins['result'], ty)} = {t} if {e.u32(ins['condition'])} else {f}")


@handles("switch.i32", "switch.i64", "switch.f32", "switch.f64")
def _switch(e, ins):
    ty = ins.op.type
    regs = ins["values"]
    out = e.bits(ins["result"], ty)
    default = e.bits(ins["default_value"], ty)
    if not regs:
        e.line(f"{out} = {default}")
        return
    e.line(f"x = {e.i32(ins['index'])}")
    if ty == "i64":  # IREE 3.13 reads i64 cases as i32 registers, sign-extended
        cases = e.const(tuple(r.index for r in regs), "cases")
        e.line(f"{e.i64(ins['result'])} = {e.view('I')}[{cases}[x]] if 0 <= x < {len(regs)} "
               f"else {e.i64(ins['default_value'])}")
        return
    view = e.view("K" if ty == "f64" else "U")
    cases = e.const(tuple(r.index >> 1 if ty == "f64" else r.index for r in regs), "cases")
    e.line(f"{out} = {view}[{cases}[x]] if 0 <= x < {len(regs)} else {default}")
