"""The ISA table, grouped for the generators: which ops each kind of program emits.

Nothing here lists opcodes: groups are computed from `jitvm.frontend.isa.OPS` by family and
operand banks. `PURE` are the register-to-register ops (arithmetic, bit ops, shifts,
compares, conversions, selects, switches, constants) on value banks, emitted generically
from their fields; the other groups are emitted by the statement generators (control.py,
memory.py, kernel.py). `COVERED_BY` says which generator emits each op, and
tests/test_fuzz_backends.py checks that every op of the ISA is either generated or in
`NOT_GENERATED` with a reason.
"""

from __future__ import annotations

from collections import defaultdict

from jitvm.frontend import isa

VALUE_BANKS = ("i32", "i64", "f32", "f64")

# Families of the ISA's pure ops (register results from register operands and immediates).
PURE_FAMILIES = tuple(dict.fromkeys(op.family for op in isa.OPS.values() if op.pure))


def _value_only(op: isa.Op) -> bool:
    for f in op.fields:
        if f.kind in (isa.REG, isa.REGS):
            if f.bank not in VALUE_BANKS:
                return False
        elif f.kind != isa.IMM:
            return False
    return True


PURE: list[isa.Op] = [op for op in isa.OPS.values() if op.pure and _value_only(op)]

# Integer division and remainder trap (division by zero; INT_MIN / -1 for the signed ones).
TRAPPING = frozenset(op.name for op in PURE if op.traps)

# Ops whose result shows a float's exact bits, so a NaN payload (see oracles/differential.py) becomes visible.
PAYLOAD_VISIBLE = frozenset(op.name for op in PURE if op.name.startswith("bitcast.f"))


def result_bank(op: isa.Op) -> str:
    return next(f.bank for f in op.fields if f.kind == isa.REG and f.out)


def input_banks(op: isa.Op) -> set[str]:
    return {f.bank for f in op.fields if f.kind in (isa.REG, isa.REGS) and not f.out}


def by_family(ops) -> dict[str, list[isa.Op]]:
    out = defaultdict(list)
    for op in ops:
        out[op.family].append(op)
    return dict(out)


PURE_BY_FAMILY = by_family(op for op in PURE if op.kind != isa.CONST)
PURE_BY_RESULT: dict[str, list[isa.Op]] = defaultdict(list)
for _op in PURE:
    if _op.kind != isa.CONST:
        PURE_BY_RESULT[result_bank(_op)].append(_op)


def ops_of(bank: str, families=None, exclude=frozenset()) -> list[isa.Op]:
    """Pure ops whose inputs and result are all in `bank` (shift amounts and select
    conditions, always i32, allowed), optionally of some families."""
    out = []
    for op in PURE:
        if op.kind == isa.CONST or op.name in exclude:
            continue
        if families is not None and op.family not in families:
            continue
        ins = input_banks(op) - ({"i32"} if op.family in ("shift", "select", "switch") else set())
        if result_bank(op) == bank and ins <= {bank}:
            out.append(op)
    return out


def family_ops(*families: str) -> list[isa.Op]:
    return [op for op in isa.OPS.values() if op.family in families]


# Which generator emits what (by family); the coverage test checks these against real output.
COVERED_BY = {
    "scalar": PURE_FAMILIES,
    "control": ("branch", "cond_branch", "branch_table", "call", "call_yieldable", "return", "fail", "yield",
                "break", "cond_break", "trace", "import_resolved"),
    "memory": ("buffer_load", "buffer_store", "buffer_alloc", "buffer_clone", "buffer_length", "buffer_copy",
               "buffer_compare", "buffer_fill", "buffer_hash", "list_alloc", "list_reserve", "list_size",
               "list_resize", "list_get", "list_set", "global_load", "global_store", "global_load_indirect",
               "global_store_indirect", "const_rodata", "cast_ref", "assign_ref", "discard_refs"),
}

NOT_GENERATED = {
    "call.variadic": "only imports may be variadic, and the fuzzed module imports nothing that resolves",
    "call.variadic.yieldable": "only imports may be variadic",
    "block": "block markers are written by the assembler for every label",
}
