"""How much a kernel's workgroup does, estimated from its loop nests: which code is worth
the full tier before its first call (lower.lazy).

The estimate counts buffer element accesses: each access in a nest (lower.loops.analysis)
times the trip counts of the loops around it. A trip count is the loop analysis's static
one, or else one read from the code before the loop: a bound, start or step register whose
last write before the loop's header, in program order, is an integer constant (IREE's
kernels set a loop's bound just before it, in a register other code reuses, which the
analysis's "written once" rule cannot take). A loop still unknown counts once, so the
estimate errs low: code stays on the quick baseline tier. It only chooses a tier, never
what code computes.
"""

from __future__ import annotations

import math
import weakref

_known: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # VerifiedFunction -> its estimate
_writes: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # VerifiedFunction -> slots each instruction writes
_FOLLOW_COPIES = 8  # register-to-register moves followed back to a constant


def accesses_per_workgroup(vf) -> int:
    """Buffer element accesses one run of `vf` makes, as far as its trip counts are known."""
    total = _known.get(vf)
    if total is None:
        from .loops.analysis import find_nests  # the loop analysis only when something compiles

        total = 0
        for nest in find_nests(vf):
            trips = {loop.id: trip_count(vf, loop) for loop in nest.loops}
            total += sum(math.prod(trips[i] or 1 for i in access.loops) for access in nest.accesses)
        _known[vf] = total
    return total


def trip_count(vf, loop) -> int | None:
    """The loop's static trip count (lower.loops.analysis), else the one its start, bound and
    step registers hold when last written before its header as constants; None if unknown."""
    from .loops.analysis import static_trips

    trips = static_trips(vf, loop)
    if trips is not None:
        return trips
    at = vf.blocks[loop.header].first
    start, bound, step = (_value_before(vf, at, x) for x in (loop.start or ("const", 0), loop.bound, loop.step))
    if start is None or bound is None or step is None or step <= 0:
        return None
    return max(0, -(-(bound - start) // step))


def _value_before(vf, at: int, expr) -> int | None:
    """The integer an invariant loop expression (a constant or an i64 register) holds on
    reaching instruction index `at`, if the last write to it before `at` is a constant."""
    if expr[0] == "const":
        return expr[1]
    if expr[0] != "reg" or expr[1] != "i64":
        return None
    from ..frontend import isa

    slot = expr[2]
    writes = _slot_writes(vf)
    for _ in range(_FOLLOW_COPIES):
        for idx in range(at - 1, -1, -1):
            if slot in writes[idx]:
                break
        else:
            return None
        ins = vf.instructions[idx]
        if ins.op.kind == isa.CONST and ins.op.type == "i64" and ins["result"].index == slot:
            return ins["value"] if ins.op.fields[0].kind == isa.IMM else 0
        moved = [src.index for f, value in zip(ins.op.fields, ins.args) if f.kind == isa.REMAP
                 for src, dst in value if dst.index == slot]
        if len(moved) != 1:
            return None
        slot, at = moved[0], idx  # a branch's register move: the source's value before the branch
    return None


def _slot_writes(vf) -> list[frozenset]:
    """Per instruction, the i32 slots it can write (lower.emit.effects), cached per function."""
    out = _writes.get(vf)
    if out is None:
        from .emit.effects import instruction_writes

        out = []
        for idx in range(len(vf.instructions)):
            slots: set[int] = set()
            instruction_writes(vf, idx, slots, set())
            out.append(frozenset(slots))
        _writes[vf] = out
    return out
