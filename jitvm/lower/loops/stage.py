"""Rows read far apart by a jammed loop's copies, read from a transposed copy instead.

A reduction along rows (a softmax's max and sum of exp, a layer norm's mean) keeps each
row's additions in order, so the jam (lower.loops.jam) runs rows side by side: copy k of P
works on row p + k. Its load x[.. + c*p + r] then reads c elements apart from one copy to the
next, and SLP vectorises the copies with gathers (MiniLM's softmax: 64 rows of 128, 512
bytes apart). When such a load moves with P and with one loop R inside P, contiguously (and
otherwise only with loops around P), the fast copy first copies
what P's loop reads, T_P x T_R elements laid out [r][p], into a stack buffer each time P's
loop is entered, and the jammed copies read S[r*T_P + p]: consecutive rows, consecutive
elements. The copy runs
16 x 16 elements at a time through lower.loops.pack's transposing copy.

The same values are read (a copy of bits, made where the jammed copies run: the buffers
apart, as the guard proved, and no store of the nest outside P, so nothing the nest stores
changes them before they are read), in the same order of operations, so results stay
bit-identical. P's remainder loop reads the buffer itself. Taken for P and R starting at 0
(the root's register: checked where the copy is made) with step 1 and known trip counts,
at most pack.PACK_BYTES of copy per nest.

Register-blocked nests read their far-apart loads through lower.loops.pack instead.
"""

from __future__ import annotations

from dataclasses import replace

from ...frontend.decode import Reg
from ...runtime.native import ir
from ..emit.types import I8, I64, const
from . import pack
from .analysis import ONE, ZERO, Access, Affine, Loop, Nest, constant_value, static_trips
from .guard import InvariantEval


def plan(vf, nest: Nest, jam_plan) -> tuple[pack.PackPlan, ...]:
    """The loads of the jammed loop P (a plain jam: jam_plan.outer is None) worth staging,
    all of them or none (they share one budget)."""
    p = jam_plan.loop
    if any(a.store and p.id not in a.loops for a in nest.accesses):
        return ()  # a store outside P could change what the copy holds before it is read
    stages = []
    for a in nest.accesses:
        if not a.store and p.id in a.loops and a.buffer not in jam_plan.stored:
            s = _stage(vf, nest, a, p)
            if s is not None:
                stages.append(s)
    if sum(s.bytes for s in stages) > pack.PACK_BYTES:
        return ()
    return tuple(stages)


def _stage(vf, nest: Nest, access: Access, p: Loop) -> pack.PackPlan | None:
    # every iv at the access holds its iteration's value, as at P's entry (where the copy is made)
    if access.stepped or len(access.loops) < 2 or access.loops[-2] != p.id:
        return None
    r = nest.loops[access.loops[-1]]
    if r.parent != p.id:
        return None
    terms = dict(access.element.terms)
    if constant_value(vf, terms.get(r.id, ZERO)) != 1:
        return None
    c = constant_value(vf, terms.get(p.id, ZERO))
    if c is None or abs(c) <= 1:
        return None  # consecutive (or the same) across P's copies already
    # the root loop's start is a register: 0 is checked where the copy is made (emit)
    if any(constant_value(vf, lp.start or ("const", 0)) != 0 or constant_value(vf, lp.step) != 1 for lp in (p, r)):
        return None
    p_trips, r_trips = static_trips(vf, p), static_trips(vf, r)
    if not p_trips or not r_trips:
        return None
    staged = replace(access, element=Affine(tuple(sorted(((p.id, ONE), (r.id, ("const", p_trips))))), ZERO))
    return pack.PackPlan(access, staged, p, r, p_trips, r_trips)


def emit(e, stages, p: Loop, apart):
    """At the builder's position, where P's loop is entered (once per iteration of the loops
    around it): when the buffers are `apart`, each load's P x R footprint of this entry copied
    to its place in the stack buffer (small enough to stay in the first-level cache while the
    jammed copies read it). Returns the i1 under which the copies were made (the jammed
    copies run only then) and, per staged load's instruction index, (buffer pointer, staged
    Access) for the lowering (e.repacked)."""
    b = e.b
    done = apart
    if p.start is None:  # P is the root: the layout counts its iterations from 0
        start = e.get(Reg("i64", p.iv, False, p.iv), "i64")
        done = b.and_(done, b.icmp_signed("==", start, const(I64, 0)))
    buffer, offset, staged = pack.stack_buffer(e, sum(s.bytes for s in stages)), 0, {}
    for s in stages:
        staged[s.access.index] = (b.gep(buffer, [const(I64, offset)], source_etype=I8, inbounds=True), s.packed)
        offset += s.bytes
    copy = e.fn.append_basic_block(f"bb{p.header}_stage")
    after = e.fn.append_basic_block(f"bb{p.header}_staged")
    b.cbranch(done, copy, after)
    b.position_at_end(copy)
    ev = InvariantEval(e, proven=True)
    for s in stages:
        _copy(e, ev, s, staged[s.access.index][0])
    b.branch(after)
    b.position_at_end(after)
    return done, staged


def _copy(e, ev, s: pack.PackPlan, scratch) -> None:
    """The P x R footprint of `s` at the current ivs of the loops around P: element
    b + sum(coeff * iv) over those loops, plus c * p + r, for every p and r."""
    b = e.b
    elem = ir.IntType(8 * s.access.width)
    source = e.buffer_field(Reg("ref", s.access.buffer, False, s.access.buffer), "data")
    base = ev.expr(s.access.element.b)
    for loop_id in s.access.loops[:-2]:
        coeff = s.access.element.coeff(loop_id)
        if coeff != ZERO:
            loop = e.nest_loops[loop_id]
            base = ev.add(base, ev.mul(ev.expr(coeff), e.get(Reg("i64", loop.iv, False, loop.iv), "i64")))
    stride = ev.expr(s.access.element.coeff(s.p.id))
    tiled = s.p_trips % pack.TILE == 0 and s.r_trips % pack.TILE == 0
    copy = pack.copy_tiles if tiled else pack.copy_transposed
    copy(e, source, base, stride, scratch, elem, s)
