"""What a function's instructions imply about its descriptor and its module's state.

The writer derives register counts, block counts, requirement bits and global storage from
the instructions, and `jitvm dump` prints a descriptor value explicitly only where it differs
from what these rules derive; both use this module, so the two can never disagree.
"""

from __future__ import annotations

from . import isa
from .cconv import CallingConvention, argument_registers, parse_cconv
from .isa import IMPORT_BIT

_WIDE = ("i64", "f64")
_RETURN = isa.op("return")  # its value list is typed by the function's own results
_WIDTH_OF_CODE = {"i": 1, "f": 1, "I": 2, "F": 2}


def _value_end(bank: str, index: int) -> int:
    return index + (2 if bank in _WIDE else 1)


class Demand:
    """Running maximum of the i32 and ref registers a function touches."""

    __slots__ = ("i32", "ref")

    def __init__(self):
        self.i32 = 0
        self.ref = 0

    def reg(self, r, width: int | None = None) -> None:
        if r.bank == "ref":
            self.ref = max(self.ref, r.index + 1)
        else:
            self.i32 = max(self.i32, r.index + (width or (2 if r.bank in _WIDE else 1)))

    def typed(self, regs, codes) -> None:
        """A register list whose value widths come from a calling convention."""
        codes = list(codes)
        for i, r in enumerate(regs):
            code = codes[i] if i < len(codes) else None
            self.reg(r, _WIDTH_OF_CODE.get(code))


def _callee_codes(ins, cconv_of):
    """(argument codes, result codes) of the callee of a call instruction, if known."""
    cc: CallingConvention | None = cconv_of(ins["callee_ordinal"]) if cconv_of else None
    if cc is None:
        return (), ()
    if cc.is_variadic:
        try:
            return cc.flat_args(tuple(ins["segment_sizes"])), cc.results
        except (ValueError, KeyError):
            return (), cc.results
    return cc.args, cc.results


def register_demand(instructions, cconv: CallingConvention | None = None, cconv_of=None) -> tuple[int, int]:
    """(i32 registers, ref registers) a function needs: its arguments and every operand.

    i64/f64 registers count as the aligned pair they occupy, including values passed through
    untyped lists (call operands and results, `return`) whose width the callee's or the
    function's own calling convention gives. `cconv_of(func_ordinal)` looks callees up.
    """
    d = Demand()
    if cconv is not None and not cconv.is_variadic:
        for bank, index in argument_registers(cconv.args):
            if bank == "ref":
                d.ref = max(d.ref, index + 1)
            else:
                d.i32 = max(d.i32, _value_end(bank, index))
    results = cconv.results if cconv is not None else ()
    for ins in instructions:
        op = ins.op
        arg_codes = result_codes = ()
        if op.call is not None:
            arg_codes, result_codes = _callee_codes(ins, cconv_of)
        for f, value in zip(op.fields, ins.args):
            k = f.kind
            if k == isa.REG:
                d.reg(value)
            elif k == isa.REGS:
                if op is _RETURN:
                    d.typed(value, results)
                elif f.name == "operands":
                    d.typed(value, arg_codes)
                elif f.name == "results":
                    d.typed(value, result_codes)
                else:
                    for r in value:
                        d.reg(r)
            elif k == isa.REMAP:
                for src, dst in value:
                    d.reg(src)
                    d.reg(dst)
            elif k == isa.CASES:
                for _, pairs in value:
                    for src, dst in pairs:
                        d.reg(src)
                        d.reg(dst)
    return d.i32, d.ref


def block_count(instructions) -> int:
    return sum(1 for ins in instructions if ins.op.code == isa.BLOCK_MARKER and ins.op.opset == isa.CORE)


def op_features(instructions) -> int:
    """Requirement bits the instructions themselves imply (the ISA extensions they use)."""
    bits = 0
    for ins in instructions:
        bits |= ins.op.feature
    return bits


def global_usage(instructions) -> tuple[int, int]:
    """(bytes, refs) of global storage the direct global accesses reach.

    Indirect accesses name their offset in a register, so no static bound exists for them;
    a module using them declares its storage explicitly.
    """
    nbytes = nrefs = 0
    for ins in instructions:
        for f, value in zip(ins.op.fields, ins.args):
            if f.kind != isa.GLOBAL or not isinstance(value, int):
                continue
            if f.bank == "ref":
                nrefs = max(nrefs, value + 1)
            else:
                nbytes = max(nbytes, value + isa.BANK_WIDTH[f.bank])
    return nbytes, nrefs


def module_cconv_lookup(imports_cconv, functions_cconv):
    """`cconv_of(ordinal)` over a module's imports (high bit set) and internal functions."""
    def lookup(ordinal: int):
        table, index = (imports_cconv, ordinal & ~IMPORT_BIT) if ordinal & IMPORT_BIT else (functions_cconv, ordinal)
        if 0 <= index < len(table):
            cc = table[index]
            return parse_cconv(cc) if isinstance(cc, str) else cc
        return None
    return lookup
