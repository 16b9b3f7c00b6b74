"""The entry guard of a versioned loop: are all of its buffer accesses in range?

Evaluated once where the loop is entered, with the registers' values at that point. The
loop runs iv = start, start + step, ... while iv < bound. Every access's element index is
a * iv + b; being affine, it takes its extreme values at the first and the last
iteration. The guard computes those exactly (every intermediate must fit in i64, or the
guard fails), and holds when the loop runs no iteration at all, or when each access's
buffer is a buffer (mutable for stores) and both extremes lie inside it. When it fails,
the checked copy runs and traps exactly where the interpreter would.
"""

from __future__ import annotations

from ..frontend.decode import Reg
from .emitter import I1, I64, const
from .loops import CountedLoop


class _Eval:
    def __init__(self, e):
        self.e = e
        self.b = e.b
        self.ok = const(I1, 1)

    def _checked(self, fn, x, y):
        r = fn(x, y)
        value = self.b.extract_value(r, 0)
        self.ok = self.b.and_(self.ok, self.b.not_(self.b.extract_value(r, 1)))
        return value

    def add(self, x, y):
        return self._checked(self.b.sadd_with_overflow, x, y)

    def sub(self, x, y):
        return self._checked(self.b.ssub_with_overflow, x, y)

    def mul(self, x, y):
        return self._checked(self.b.smul_with_overflow, x, y)

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
        x, y = self.expr(node[1]), self.expr(node[2])
        return {"add": self.add, "sub": self.sub, "mul": self.mul}[kind](x, y)


def all_iterations_in_range(e, loop: CountedLoop):
    """Emits the guard at the builder's position; returns its i1 value."""
    b = e.b
    ev = _Eval(e)
    start = e.get(Reg("i64", loop.iv, False, loop.iv), "i64")
    bound = ev.expr(loop.bound)
    step = ev.expr(loop.step)
    empty = b.icmp_signed(">=", start, bound)
    ok = b.icmp_signed(">", step, const(I64, 0))
    # last = start + ((bound - 1 - start) / step) * step, all unsigned-safe when start < bound.
    span = b.sub(b.sub(bound, const(I64, 1)), start)
    last = b.add(start, b.mul(b.udiv(span, b.select(ok, step, const(I64, 1))), step))
    ev.add(last, step)  # the iv itself must not wrap
    for access in loop.accesses:
        shadow = e.buffer_shadow(Reg("ref", access.buffer, False, access.buffer))
        a, c = ev.expr(access.element.a), ev.expr(access.element.b)
        first_index = ev.add(ev.mul(a, start), c)
        last_index = ev.add(ev.mul(a, last), c)
        lo = b.select(b.icmp_signed("<", first_index, last_index), first_index, last_index)
        hi = b.select(b.icmp_signed("<", first_index, last_index), last_index, first_index)
        limit = b.lshr(shadow["length"], const(I64, access.width.bit_length() - 1)) \
            if access.width > 1 else shadow["length"]
        inside = b.and_(b.icmp_signed(">=", lo, const(I64, 0)), b.icmp_unsigned("<", hi, limit))
        ok = b.and_(ok, b.and_(shadow["ok"], inside))
        if access.store:
            mutable = b.icmp_unsigned("!=", b.and_(shadow["access"], const(shadow["access"].type, 1)),
                                      const(shadow["access"].type, 0))
            ok = b.and_(ok, mutable)
    return b.or_(empty, b.and_(ok, ev.ok))


