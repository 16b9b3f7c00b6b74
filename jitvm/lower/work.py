"""How much a kernel's workgroup does, estimated from its loops: which tier its code starts
on (lower.lazy).

The estimate counts buffer element accesses: each load or store times the trip counts of
the loops around it (every loop with one latch, not only the nests lower.loops.analysis
can version: IREE's flat loops over delinearised indices hold those nests, and counting
them once left EfficientNet-Lite0's convolutions at a few hundred accesses a workgroup). A
trip count is the loop analysis's static one, or else one read from the code before the
loop: its start, bound and step as the values last written to their registers before the
loop's header, in program order, folded through constants, register moves and i64
add/sub/mul/fma/min (IREE's kernels set a loop's bound just before it, in a register other
code reuses, which the analysis's "written once" rule cannot take; a workgroup's tile is
min(rest, TILE), whose rest depends on the workgroup's id: TILE counts, the tile of every
workgroup but the last). A loop still unknown counts once, so the estimate errs low: code
stays on a quicker tier. It only chooses a tier, never what code computes.
"""

from __future__ import annotations

import math
import weakref

_known: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # VerifiedFunction -> (accesses, flat loops)
_writes: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # VerifiedFunction -> slots each instruction writes
_DEPTH = 12  # register moves and arithmetic followed back to constants


def accesses_per_workgroup(vf) -> int:
    """Buffer element accesses one run of `vf` makes, as far as its trip counts are known."""
    return _estimate(vf)[0]


def flat_loops(vf) -> int:
    """How many of `vf`'s loops the nest analysis declines (IREE's flat loops over
    delinearised indices, lowered chunk by chunk: lower.loops.delinearise). Jammed full width
    (the middle tier), each brings copies at several widths: what compiling it costs more."""
    return _estimate(vf)[1]


def _estimate(vf) -> tuple[int, int]:
    known = _known.get(vf)
    if known is None:
        from .loops.analysis import back_edges_of, element_access, find_nests, loop_headers

        back_edges = back_edges_of(vf)
        loops = [(h, back_edges[h]) for h in loop_headers(back_edges)]
        trips = {loop.header: trip_count(vf, loop) for nest in find_nests(vf) for loop in nest.loops}
        flat = 0
        for header, latch in loops:
            if header not in trips:
                trips[header] = _plain_trips(vf, header, latch)
                flat += 1
        total = 0
        for block in vf.blocks:
            n = sum(element_access(vf.instructions[i].op) is not None for i in range(block.first, block.last + 1))
            if n:
                total += n * math.prod(trips[h] or 1 for h, latch in loops if h <= block.index <= latch)
        known = _known[vf] = (total, flat)
    return known


def trip_count(vf, loop) -> int | None:
    """The loop's static trip count (lower.loops.analysis), else the one its start, bound and
    step registers hold when last written before its header; None if unknown."""
    from .loops.analysis import static_trips, trips_of

    trips = static_trips(vf, loop)
    if trips is not None:
        return trips
    at = vf.blocks[loop.header].first
    return trips_of(*(_value_before(vf, at, x) for x in (loop.start or ("const", 0), loop.bound, loop.step)))


def _plain_trips(vf, header: int, latch: int) -> int | None:
    """The trip count of a loop the nest analysis declined: its header compares `iv < bound`
    (entering the body next), one add in the loop steps iv, and iv, the bound and the step
    are known before the header."""
    from .loops.analysis import COND_BR, LOOP_TEST, STEP, trips_of

    h = vf.blocks[header]
    term = vf.instructions[h.last]
    if term.op is not COND_BR or vf.block_of_pc.get(term["true_dest_pc"]) != header + 1:
        return None
    compare = next((vf.instructions[i] for i in range(h.first, h.last) if vf.instructions[i].op is LOOP_TEST and
                    vf.instructions[i]["result"].index == term["condition"].index), None)
    if compare is None:
        return None
    iv, bound = compare["left"].index, compare["right"].index
    writes = _slot_writes(vf)
    region = range(h.first, vf.blocks[latch].last + 1)
    if any(bound in writes[i] or bound + 1 in writes[i] for i in region):
        return None
    steps = [vf.instructions[i] for i in region if iv in writes[i] or iv + 1 in writes[i]]
    if len(steps) != 1 or steps[0].op is not STEP or steps[0]["result"].index != iv:
        return None
    left, right = steps[0]["left"].index, steps[0]["right"].index
    if iv not in (left, right):
        return None
    step = right if left == iv else left
    if any(step in writes[i] or step + 1 in writes[i] for i in region):
        return None
    at = h.first
    return trips_of(*(_value_before(vf, at, ("reg", "i64", r)) for r in (iv, bound, step)))


def _value_before(vf, at: int, expr) -> int | None:
    """The integer an invariant loop expression (a constant or an i64 register) holds on
    reaching instruction index `at`, as far as the code before it says (`_value`)."""
    if expr[0] == "const":
        return expr[1]
    if expr[0] != "reg" or expr[1] != "i64":
        return None
    return _value(vf, at, expr[2], 0)


def _fold_min(a, b):
    """min, or the known operand: an upper bound (a tile's min(rest, TILE) counts TILE)."""
    return b if a is None else a if b is None else min(a, b)


def _strict(fn):
    return lambda *xs: None if any(x is None for x in xs) else fn(*xs)


_FOLDS = {  # i64 op -> (its register fields, the fold of their values)
    "add.i64": (("left", "right"), _strict(lambda a, b: a + b)),
    "sub.i64": (("left", "right"), _strict(lambda a, b: a - b)),
    "mul.i64": (("left", "right"), _strict(lambda a, b: a * b)),
    "fma.i64": (("first", "second", "third"), _strict(lambda a, b, c: a * b + c)),
    "min.i64.s": (("left", "right"), _fold_min),
}


def _value(vf, at: int, slot: int, depth: int) -> int | None:
    """What i64 register `slot` holds on reaching instruction `at`: its last write before
    `at` in program order, a constant, a branch's register move or an arithmetic fold."""
    from ..frontend import isa

    if depth > _DEPTH:
        return None
    writes = _slot_writes(vf)
    for idx in range(at - 1, -1, -1):
        if slot in writes[idx]:
            break
    else:
        return None
    ins = vf.instructions[idx]
    if ins.op.kind == isa.CONST and ins.op.type == "i64" and ins["result"].index == slot:
        return ins["value"] if ins.op.fields[0].kind == isa.IMM else 0
    fold = _FOLDS.get(ins.op.name)
    if fold is not None and ins["result"].index == slot:
        names, fn = fold
        return fn(*(_value(vf, idx, ins[n].index, depth + 1) for n in names))
    moved = [src.index for f, value in zip(ins.op.fields, ins.args) if f.kind == isa.REMAP
             for src, dst in value if dst.index == slot]
    if len(moved) != 1:
        return None
    return _value(vf, idx, moved[0], depth + 1)  # a branch's register move: the source's value before the branch


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
