"""What VM instructions do to registers, as the lowering performs it: writes and remaps.

The per-op lowering (branch remaps, which refs a function must release) and the loop
optimiser (which registers a region defines, what jammed copies rename) both need these
facts; they are read off the ISA table's operand kinds.
"""

from __future__ import annotations

from ...frontend import isa
from ...verify.model import VerifiedFunction


def remap_moves(pairs):
    """A branch's remap list as the lowering performs it, in order: ("ref", src, dst) for a
    pair involving a ref, ("i64", src, dst) for an aligned (lo, hi) pair of register copies
    (one i64 move), else ("i32", src, dst)."""
    i = 0
    while i < len(pairs):
        src, dst = pairs[i]
        if src.is_ref or dst.is_ref:
            yield "ref", src, dst
            i += 1
        elif (i + 1 < len(pairs) and src.index % 2 == 0 and dst.index % 2 == 0
              and pairs[i + 1][0].index == src.index + 1 and pairs[i + 1][1].index == dst.index + 1
              and not pairs[i + 1][0].is_ref and not pairs[i + 1][1].is_ref):
            yield "i64", src, dst
            i += 2
        else:
            yield "i32", src, dst
            i += 1


def written_slots(vf: VerifiedFunction, blocks) -> tuple[set[int], set[int]]:
    """(i32 slots, ref registers) written anywhere in `blocks`, branch remaps included."""
    i32: set[int] = set()
    refs: set[int] = set()
    for bi in blocks:
        block = vf.blocks[bi]
        for idx in range(block.first, block.last + 1):
            instruction_writes(vf, idx, i32, refs)
    return i32, refs


def instruction_writes(vf: VerifiedFunction, idx: int, i32: set[int], refs: set[int]) -> None:
    """Adds the i32 slots and ref registers instruction `idx` can write, on any edge."""
    ins = vf.instructions[idx]
    for f, value in zip(ins.op.fields, ins.args):
        regs = []
        if f.kind == isa.REG and f.out:
            regs = [value]
        elif f.kind == isa.REGS and f.out:
            regs = list(value)
        elif f.kind == isa.REMAP:
            regs = [d for _, d in value]
        elif f.kind == isa.CASES:
            regs = [d for _, pairs in value for _, d in pairs]
        elif f.kind == isa.REG and f.bank == "ref" and f.move and value.move:
            regs = [value]  # a moved-from register is cleared
        elif f.kind == isa.REGS and f.bank in ("any", "ref"):
            regs = [r for r in value if r.is_ref and r.move]
        for r in regs:
            if r.is_ref:
                refs.add(r.index)
            else:
                i32.add(r.index)
                if r.bank in ("i64", "f64") or f.kind == isa.REGS and f.out:
                    i32.add(r.index + 1)  # call results may be 64-bit
    site = vf.calls.get(idx)
    if site is not None:
        for code, r in zip(site.result_codes, ins["results"]):
            if code in "IF":
                i32.add(r.index + 1)
