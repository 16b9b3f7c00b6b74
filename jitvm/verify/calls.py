"""Call and return rules: operands and results checked against the callee's signature.

A call's register lists carry no types of their own; the callee's calling convention gives
one value code per register (a variadic span repeated by its segment size), and each
register must be in that code's bank: i32/f32 in the i32 bank, i64/f64 as an even-aligned
pair, refs in the ref bank. The resolved callee becomes a `CallSite` the backends use
without looking at the module's tables again.
"""

from __future__ import annotations

from ..frontend import isa
from ..frontend.cconv import CallingConvention, Span
from ..frontend.isa import IMPORT_BIT
from .model import CallSite
from .registers import BANK_OF_CODE, check_register


def _field_index(op: isa.Op, name: str) -> int | None:
    return next((i for i, f in enumerate(op.fields) if f.name == name), None)


class _Layout:
    """Where a call op keeps its callee, segment sizes, operands and results."""

    __slots__ = ("callee", "segments", "operands", "results")

    def __init__(self, op: isa.Op):
        self.callee = _field_index(op, "callee_ordinal")
        self.segments = _field_index(op, "segment_sizes")
        self.operands = _field_index(op, "operands")
        self.results = _field_index(op, "results")


def _resolve(fv, ins, ordinal: int, variadic: bool) -> tuple[bool, int, str, CallingConvention]:
    if ordinal & IMPORT_BIT:
        index = ordinal & ~IMPORT_BIT
        if index >= fv.import_count:
            raise fv.fail(ins, f"import ordinal {index} is out of range ({fv.import_count} imports)")
        imp = fv.module.imports[index]
        return True, index, imp.name, imp.signature.cconv
    if variadic:
        raise fv.fail(ins, f"{ins.op.mnemonic} can only call imports, not internal function {ordinal}")
    if ordinal >= fv.function_count:
        raise fv.fail(ins, f"function ordinal {ordinal} is out of range ({fv.function_count} functions)")
    return False, ordinal, fv.internal_name(ordinal), fv.module.signatures[ordinal].cconv


def _argument_codes(fv, ins, name: str, cconv: CallingConvention, segments, passed: int) -> tuple:
    if segments is None:
        if cconv.is_variadic:
            raise fv.fail(ins, f"{name} is variadic ({cconv}) and must be called with a segment list")
        return cconv.args
    if len(segments) != len(cconv.args):
        raise fv.fail(ins, f"{len(segments)} segment sizes for the {len(cconv.args)} argument "
                           f"positions of {name} ({cconv})")
    # Count before expanding: a span of 65535 repeats must not cost 65535 steps to refuse.
    expected = sum(len(a.codes) * n if isinstance(a, Span) else 1 for a, n in zip(cconv.args, segments))
    if expected != passed:
        raise fv.fail(ins, f"{name} takes {_count(expected, 'argument register')} ({cconv} with segment sizes "
                           f"[{', '.join(map(str, segments))}]) but the call passes {passed}")
    return cconv.flat_args(tuple(segments))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def check_values(fv, ins, codes, regs, role: str, owner: str, move_ok: bool) -> None:
    """Each register of `regs` in the bank of the value code at the same position."""
    for k, (code, reg) in enumerate(zip(codes, regs)):
        check_register(fv, ins, BANK_OF_CODE[code], reg.raw, f"{role} {k} of {owner}", move_ok)


def _call_rule(variadic: bool):
    def rule(fv, index: int, ins) -> None:
        layout = LAYOUTS[ins.op]
        args = ins.args
        is_import, callee, name, cconv = _resolve(fv, ins, args[layout.callee], variadic)
        operands, results = args[layout.operands], args[layout.results]
        segments = args[layout.segments] if layout.segments is not None else None
        arg_codes = _argument_codes(fv, ins, name, cconv, segments, len(operands))
        if len(arg_codes) != len(operands):
            raise fv.fail(ins, f"{name} takes {_count(len(arg_codes), 'argument register')} ({cconv}) but the "
                               f"call passes {len(operands)}")
        if len(cconv.results) != len(results):
            raise fv.fail(ins, f"{name} returns {_count(len(cconv.results), 'value')} ({cconv}) but the call "
                               f"receives {len(results)}")
        check_values(fv, ins, arg_codes, operands, "argument", name, True)
        check_values(fv, ins, cconv.results, results, "result", name, False)
        fv.calls[index] = CallSite(is_import, callee, name, cconv, tuple(arg_codes), cconv.results)
    return rule


def _return_rule(fv, index: int, ins) -> None:
    operands = ins.args[LAYOUTS[ins.op].operands]
    codes = fv.cconv.results
    if len(codes) != len(operands):
        raise fv.fail(ins, f"the function returns {_count(len(codes), 'value')} ({fv.cconv}) but "
                           f"{ins.op.mnemonic} passes {len(operands)}")
    check_values(fv, ins, codes, operands, "return value", "the function", True)


RETURN = isa.op("return")


def _rule(op: isa.Op):
    if op.call is not None:
        return _call_rule(op.call.variadic)
    return _return_rule if op is RETURN else None


RULES = {op: rule for op in isa.OPS.values() if (rule := _rule(op)) is not None}
"""op -> rule(verifier, instruction index, instruction), for the calls and return"""

OWNED_FIELDS = {op: frozenset(f.name for f in op.fields if f.kind in (isa.FUNC, isa.SEGMENTS, isa.REGS))
                for op in RULES}
"""op -> the operands its rule checks against a signature (the operand plans skip them): the
callee, segment sizes and register lists of calls, the value list of return"""

LAYOUTS = {op: _Layout(op) for op in RULES}
