"""The LLVM side of VM values: register-bank types, the uniform native ABI, constants.

Every stage of the JIT that builds IR (the per-op lowering, the loop optimiser, module
lowering) takes its types from here, so a VM bank has one LLVM type and a struct field
one offset (from `runtime.native.layout`).
"""

from __future__ import annotations

from ...runtime.native import ir, layout

I1, I8, I16, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64)
F32, F64 = ir.FloatType(), ir.DoubleType()
PTR = ir.PointerType()
VOID = ir.VoidType()
FN_TYPE = ir.FunctionType(I32, [PTR, PTR, PTR, PTR])  # (state, args, results, trap)
BANK_TYPE = {"i32": I32, "i64": I64, "f32": F32, "f64": F64}
CODE_BANK = {"i": "i32", "I": "i64", "f": "f32", "F": "f64", "r": "ref"}


def const(ty, value) -> ir.Constant:
    return ir.Constant(ty, value)


def offset_of(struct: str, name: str) -> int:
    return layout.field(struct, name).offset


def function_symbol(module_key: str, ordinal: int) -> str:
    return f"jv_{module_key}_f{ordinal}"


def opaque_alloca(builder: ir.IRBuilder, ty, name: str, align: int = 8):
    """An aligned alloca; its value is an opaque `ptr` the register file accesses with any type."""
    a = builder.alloca(ty, name=name)
    a.align = align
    a.type = PTR
    return a


class LoweringError(Exception):
    """An instruction the lowering cannot handle; the function falls back to the interpreter."""

    def __init__(self, op: str, why: str):
        super().__init__(f"{op}: {why}")
        self.op = op
