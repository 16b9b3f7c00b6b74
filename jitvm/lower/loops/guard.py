"""The entry guard of a versioned loop nest: are all of its buffer accesses in range?

Evaluated once where the nest is entered, with the registers' values at that point. Each
loop runs iv = start, start + step, ... while iv < bound, with start, bound and step the
same for every iteration of the loops around it (the analysis checked that). An access's
element index is affine in the induction variables around it, so over the iteration box
it takes its extremes at the corners: per loop, the smaller and the larger of a * start
and a * last. The guard computes those exactly (every intermediate must fit in i64, or
the access counts as failing), and holds when every access either never runs (a loop
around it runs zero times) or has its buffer (mutable for stores) and both extremes inside
it. When it fails, the checked copy runs and traps exactly where the interpreter would.
"""

from __future__ import annotations

from ...frontend.decode import Reg
from ..emit.types import I1, I64, const
from .analysis import Nest, constant_value


class InvariantEval:
    """Evaluation of invariant expressions: exact, with an overflow flag (the guard), or as
    `nsw` arithmetic where a guard already proved there is no overflow (`proven=True`)."""

    def __init__(self, e, proven: bool = False):
        self.e = e
        self.b = e.b
        self.ok = const(I1, 1)
        self.proven = proven

    def _checked(self, fn, plain, x, y):
        if self.proven:
            return plain(x, y, flags=["nsw"])
        r = fn(x, y)
        self.ok = self.b.and_(self.ok, self.b.not_(self.b.extract_value(r, 1)))
        return self.b.extract_value(r, 0)

    def add(self, x, y):
        return self._checked(self.b.sadd_with_overflow, self.b.add, x, y)

    def sub(self, x, y):
        return self._checked(self.b.ssub_with_overflow, self.b.sub, x, y)

    def mul(self, x, y):
        return self._checked(self.b.smul_with_overflow, self.b.mul, x, y)

    def expr(self, node):
        kind = node[0]
        if kind == "const":
            value = node[1]
            if not -(1 << 63) <= value < (1 << 63):
                self.ok = const(I1, 0)
                return const(I64, 0)
            return const(I64, value)
        if kind == "reg":
            return self.e.get(Reg("i64", node[2], False, node[2]), "i64")
        if kind == "value":
            return self.e.nest_values[node[1]]
        x, y = self.expr(node[1]), self.expr(node[2])
        return {"add": self.add, "sub": self.sub, "mul": self.mul}[kind](x, y)


def _min_max(b, x, y):
    less = b.icmp_signed("<", x, y)
    return b.select(less, x, y), b.select(less, y, x)


def all_iterations_in_range(e, nest: Nest):
    """Emits the guard at the builder's position; returns its i1 value; per access index,
    (runs, lo, hi): whether it runs at all and its extreme element indices (exact when the
    guard holds); and per access index (lo, hi, exact) of the index without the root
    loop's term: what one iteration of the root loop touches, relative to it."""
    b = e.b
    boxes = {}  # loop id -> (runs, start, last, sound) as IR values
    ranges = {}  # access index -> (runs, lo, hi)
    for loop in nest.loops:
        ev = InvariantEval(e)
        start = e.get(Reg("i64", loop.iv, False, loop.iv), "i64") if loop.start is None else ev.expr(loop.start)
        bound, step = ev.expr(loop.bound), ev.expr(loop.step)
        runs = b.icmp_signed("<", start, bound)
        positive = b.icmp_signed(">", step, const(I64, 0))
        # last = start + ((bound - 1 - start) / step) * step, exact when start < bound.
        span = b.sub(b.sub(bound, const(I64, 1)), start)
        last = b.add(start, b.mul(b.udiv(span, b.select(positive, step, const(I64, 1))), step))
        ev.add(last, step)  # the iv itself must not wrap
        sound = b.and_(ev.ok, positive)
        if loop.parent is not None:
            parent_runs = boxes[loop.parent][0]
            runs = b.and_(runs, parent_runs)
        boxes[loop.id] = (runs, start, b.select(runs, last, start), sound)
    ok = const(I1, 1)
    for loop in nest.loops:  # a loop that runs must have a positive step and no overflow
        runs, _, _, sound = boxes[loop.id]
        ok = b.and_(ok, b.or_(b.not_(runs), sound))
    rest = {}  # access index -> (lo, hi, exact) without the root loop's term
    for access in nest.accesses:
        ev, rev = InvariantEval(e), InvariantEval(e)
        base = ev.expr(access.element.b)
        lo = hi = rlo = rhi = base
        runs = const(I1, 1)
        for loop_id in access.loops:
            loop_runs, start, last, _ = boxes[loop_id]
            runs = b.and_(runs, loop_runs)
            coeff = access.element.coeff(loop_id)
            if coeff == ("const", 0):
                continue
            a = ev.expr(coeff)
            x, y = _min_max(b, ev.mul(a, start), ev.mul(a, last))
            lo, hi = ev.add(lo, x), ev.add(hi, y)
            if loop_id != nest.root.id:
                rlo, rhi = rev.add(rlo, x), rev.add(rhi, y)
        rest[access.index] = (rlo, rhi, b.and_(ev.ok, rev.ok))
        shadow = e.buffer_shadow(Reg("ref", access.buffer, False, access.buffer))
        limit = b.lshr(shadow["length"], const(I64, access.width.bit_length() - 1)) \
            if access.width > 1 else shadow["length"]
        inside = b.and_(b.icmp_signed(">=", lo, const(I64, 0)), b.icmp_unsigned("<", hi, limit))
        good = b.and_(b.and_(shadow["ok"], inside), ev.ok)
        if access.store:
            access_bits = shadow["access"]
            good = b.and_(good, b.icmp_unsigned("!=", b.and_(access_bits, const(access_bits.type, 1)),
                                                const(access_bits.type, 0)))
        ok = b.and_(ok, b.or_(b.not_(runs), good))
        ranges[access.index] = (runs, lo, hi)
    return ok, ranges, rest, boxes


def proven_index(e, access):
    """The element index of a guarded access, rebuilt from its affine form.

    Same value as the bytecode's own index arithmetic, but as a sum LLVM can see through
    (scalar evolution finds the stride; the jammed copies' accesses become consecutive and
    vectorise). The terms are added in the guard's order, where it checked that every
    partial sum fits in i64 over the whole iteration box, so the arithmetic is `nsw`.
    """
    ev = InvariantEval(e, proven=True)
    derived = _derived_from_first_copy(e, ev, access)
    if derived is not None:
        return derived
    index = ev.expr(access.element.b)
    stepped = dict(access.stepped)
    for loop_id in access.loops:
        coeff = access.element.coeff(loop_id)
        if coeff == ("const", 0):
            continue
        iv = e.get(Reg("i64", e.nest_loops[loop_id].iv, False, e.nest_loops[loop_id].iv), "i64")
        if loop_id in stepped:  # the register already holds iv + step (the guard bounded it)
            iv = ev.sub(iv, ev.expr(stepped[loop_id]))
        index = ev.add(index, ev.mul(ev.expr(coeff), iv))
    if e.jam_copy is not None:  # the first copy of this instruction: the others derive from it
        e.jam_index = (e.index, e.b.block, e.jam_copy, index)
    return index


def _derived_from_first_copy(e, ev, access):
    """In a jammed region, copy k's index from the first copy j that lowered the same
    instruction in the same block: j's index plus coeff * (lane(k) - lane(j)) * step for
    each jammed loop. The copies are points of the iteration box the guard checked, so every
    term is a difference of two in-range indices and the arithmetic is `nsw`. It leaves
    LLVM one add per copy instead of the whole sum (a ResNet conv has 64 copies)."""
    first = e.jam_index
    if not e.mod.steps.derive_indices or e.jam_copy is None or first is None:
        return None
    instruction, block, j, index = first
    if instruction != e.index or block is not e.b.block:
        return None
    k = e.jam_copy
    for loop_id in access.loops:
        if loop_id not in e.jam_lanes:
            continue
        coeff = access.element.coeff(loop_id)
        lane, step = e.jam_lanes[loop_id]
        lanes = lane(k) - lane(j)
        if coeff == ("const", 0) or lanes == 0:
            continue
        c, s = constant_value(e.vf, coeff), constant_value(e.vf, e.nest_loops[loop_id].step)
        if c is not None and s is not None:
            if not -(1 << 63) <= c * lanes * s < (1 << 63):
                return None
            delta = const(I64, c * lanes * s)
        else:
            delta = ev.mul(ev.expr(coeff), ev.mul(step, const(I64, lanes)))
        index = ev.add(index, delta)
    return index
