"""Flat loops whose indices are delinearised with i64 div/rem: lowered chunk by chunk.

IREE's VMVX code walks a tile d0 x d1 x d2 as one loop, i < d0*d1*d2, and recovers the
indices of every element with floordiv/floormod by d1*d2 and d2 (sdiv/srem, and compares
and selects correcting for negative operands). Over a run of consecutive iterations in
which no quotient changes and no such compare flips (a chunk: up to d2 iterations) every
quotient is a constant and every remainder moves with i. So the loop runs chunk by chunk.
At a chunk's head the chain is evaluated once for its first iteration, without trapping,
and the chunk ends before the first iteration where a fact the chain relies on would stop
holding (a quotient changes, a compare flips, a value wraps). The chunk then runs as an
ordinary counted loop, the root of a nest versioned and jammed like any other
(lower.loops.versioning), in which the chain's divisions, remainders and selects are the
chunk's constants or affine in its induction variable: element indices become affine and
the inner dimension a contiguous loop. Where the head's facts fail for the first iteration
(a divisor zero or negative, a negative dividend), that iteration runs the original code,
checked, and traps where the interpreter would.

Sound because every iteration of a chunk computes the values the original code computes
(the head proved the chain's values for all of them), in the original order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...frontend import isa
from ...frontend.decode import Reg
from ..emit.effects import instruction_writes, remap_moves, written_slots
from ..emit.ops_control import branch_to
from ..emit.types import I32, I64, const
from . import jam
from .analysis import BR, COND_BR, LOOP_TEST, ZERO, Affine, Nest, build_nest, constant_value, entry_constants

INF = (1 << 63) - 1  # a chunk length bound meaning "no bound"
_MIN = -(1 << 63)
_MAX_COEFF = 1 << 32  # larger per-iteration changes are left alone
# A chunk's loop is jammed at most this wide: chunks are a tile's rows (64 or the rest of
# 112, 48), and a wider group alone leaves the short rows to the scalar remainder. NCHW 1x1
# conv 16 -> 96 at 112x112 with the next layer's padding fused (EfficientNet-Lite0's hottest
# dispatch), one thread, load 7.5: 3.5 ms at 16, 11.8 ms at 32, 11.0 ms at 64; 45 ms unchunked.
CHUNK_JAM = 16
# ... unless every access moves by at most one element per iteration (vector loads): then
# 64 at once, and the rest of a row in groups of 32 and 16 (a row of 48: 32 + 16). One thread,
# CPU time, against 16: the matmul-like 1x1 convs with padding fused 1.10-1.57x (ResNet-50
# zoo's 512x784x128 6.43 -> 3.58 ms, EfficientNet-Lite0's 112x196x672 2.23 -> 1.46 ms and
# 96x112x112x16 4.49 -> 4.01 ms, load 6-7); chunks over channels (strided) ran 0.67-0.84x.
CHUNK_JAM_CONTIGUOUS, CHUNK_JAM_THEN = 64, (32, 16)


@dataclass(frozen=True)
class Sym:
    """A register's value in a chunk: its first iteration's value (the head's step `key`)
    plus `c` per iteration (i64 only; i32 values are the same in the whole chunk)."""

    key: int
    c: int = 0
    known: int | None = None  # the value, when known at compile time


@dataclass(frozen=True)
class Step:
    """What the chunk head computes: `rule` applied to `args` (Syms, or an int for the
    register reads and constants), for instruction `index` (None: not an instruction)."""

    rule: str
    index: int | None
    args: tuple
    c: int = 0


@dataclass
class ChunkPlan:
    """A flat loop lowered chunk by chunk: `nest` is the original loop (its blocks are the
    checked one-iteration path), `chunk` the nest each chunk runs (its root loop bounded by
    the chunk's end), `overridden` the chain's instructions lowered as chunk values."""

    nest: Nest
    chunk: Nest
    steps: list[Step]
    overridden: dict[int, Sym]  # instruction index -> its result
    iv_key: int

    @property
    def root(self):
        return self.nest.root

    @property
    def blocks(self) -> range:
        return self.nest.blocks


def _wrap(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >> 63 else v


_INV32 = {  # i32 ops on chunk constants: op -> (builder, operand fields)
    "cmp.eq.i32": (lambda b, x, y: b.zext(b.icmp_unsigned("==", x, y), I32), ("left", "right")),
    "cmp.ne.i32": (lambda b, x, y: b.zext(b.icmp_unsigned("!=", x, y), I32), ("left", "right")),
    "cmp.lt.i32.s": (lambda b, x, y: b.zext(b.icmp_signed("<", x, y), I32), ("left", "right")),
    "cmp.lt.i32.u": (lambda b, x, y: b.zext(b.icmp_unsigned("<", x, y), I32), ("left", "right")),
    "cmp.nz.i32": (lambda b, x: b.zext(b.icmp_unsigned("!=", x, const(I32, 0)), I32), ("operand",)),
    "or.i32": (lambda b, x, y: b.or_(x, y), ("left", "right")),
    "xor.i32": (lambda b, x, y: b.xor(x, y), ("left", "right")),
    "cmp.lt.i64.u": (lambda b, x, y: b.zext(b.icmp_unsigned("<", x, y), I32), ("left", "right")),
}
_INV64 = {  # i64 results of chunk constants
    "min.i64.s": (lambda b, x, y: b.select(b.icmp_signed("<", x, y), x, y), ("left", "right")),
    "max.i64.s": (lambda b, x, y: b.select(b.icmp_signed(">", x, y), x, y), ("left", "right")),
    "min.i64.u": (lambda b, x, y: b.select(b.icmp_unsigned("<", x, y), x, y), ("left", "right")),
    "max.i64.u": (lambda b, x, y: b.select(b.icmp_unsigned(">", x, y), x, y), ("left", "right")),
    "ext.i32.i64.s": (lambda b, x: b.sext(x, I64), ("operand",)),
    "ext.i32.i64.u": (lambda b, x: b.zext(x, I64), ("operand",)),
}
_DIVISIONS = {f"{kind}.i64.{sign}" for kind in ("div", "rem") for sign in ("s", "u")}
# The chain's instructions whose results the chunk lowers as its values instead of computing them.
_OVERRIDDEN = _DIVISIONS | {"select.i64"} | set(_INV64)
_LINEAR = {"add.i64", "sub.i64", "mul.i64", "fma.i64"}


def plan(vf, nest: Nest, back_edges: dict) -> ChunkPlan | None:
    """A chunked lowering of `nest`'s root loop when it is a flat loop over delinearised
    indices (step 1, a division or remainder of a value moving with its iv), else None."""
    root = nest.root
    if constant_value(vf, root.step) != 1:
        return None
    term = vf.instructions[vf.blocks[root.header].last]
    if term.op is not COND_BR or term["false_operands"]:
        return None
    walk = _Classifier(vf, nest)
    try:
        walk.run()
    except _Unsupported:
        return None
    if not any(vf.instructions[i].op.name in _DIVISIONS and walk.steps[s.key].args[0].c
               for i, s in walk.overridden.items()):
        return None  # no index is delinearised: nothing to gain
    affine = {i: Affine.const(("value", ("v", s.key))) if s.c == 0 else
              Affine(((root.id, ("const", s.c)),), ("value", ("b", s.key))) for i, s in walk.overridden.items()}
    chunk = build_nest(vf, root.header, back_edges, affine, root_bound=("value", "end"))
    if chunk is None:
        return None
    chunk.pure = frozenset(walk.overridden)
    chunk.jam_factor, chunk.jam_then = (CHUNK_JAM_CONTIGUOUS, CHUNK_JAM_THEN) if _contiguous(chunk) else (CHUNK_JAM, ())
    chunk.disjoint_stores = True
    return ChunkPlan(nest, chunk, walk.steps, walk.overridden, walk.iv_key)


class _Unsupported(Exception):
    pass


class _Classifier:
    """Follows the root loop's body once, in order, giving registers Syms where the rules
    below understand them (None: not understood, computed by the loop as before)."""

    def __init__(self, vf, nest: Nest):
        self.vf, self.nest = vf, nest
        root = nest.root
        self.written, _ = written_slots(vf, range(root.header, root.latch + 1))
        self.known = entry_constants(vf)
        self.steps: list[Step] = []
        self.v64: dict[int, Sym | None] = {}
        self.v32: dict[int, Sym | None] = {}
        self.outside: dict[tuple, Sym] = {}
        self.overridden: dict[int, Sym] = {}
        self.iv_key = self._step(Step("iv", None, (root.iv,), 1))
        self._write64(root.iv, Sym(self.iv_key, 1))

    def _step(self, step: Step) -> int:
        self.steps.append(step)
        return len(self.steps) - 1

    # -- registers --------------------------------------------------------------------------------

    def _write64(self, reg: int, sym) -> None:
        for r in (reg - 1, reg + 1):
            self.v64.pop(r, None)
        self.v32.pop(reg, None)
        self.v32.pop(reg + 1, None)
        self.v64[reg] = sym

    def _write32(self, reg: int, sym) -> None:
        self.v64.pop(reg, None)
        self.v64.pop(reg - 1, None)
        self.v32[reg] = sym

    def _clobber(self, slot: int) -> None:
        self.v32.pop(slot, None)
        self.v32[slot] = None
        self.v64.pop(slot, None)
        self.v64.pop(slot - 1, None)

    def read64(self, reg: int) -> Sym | None:
        if reg in self.v64:
            return self.v64[reg]
        if reg in self.v32 or reg + 1 in self.v32 or reg in self.written or reg + 1 in self.written:
            return None
        return self._outside("reg64", reg)

    def read32(self, reg: int) -> Sym | None:
        if reg in self.v32:
            return self.v32[reg]
        if reg in self.v64 or reg - 1 in self.v64 or reg in self.written:
            return None
        return self._outside("reg32", reg)

    def _outside(self, rule: str, reg: int) -> Sym:
        sym = self.outside.get((rule, reg))
        if sym is None:
            k = self.known.get(reg)
            known = k[1] if k is not None and k[0] == ("i64" if rule == "reg64" else "i32") else None
            sym = self.outside[(rule, reg)] = Sym(self._step(Step(rule, None, (reg,))), 0, known)
        return sym

    # -- the body ---------------------------------------------------------------------------------

    def run(self) -> None:
        vf, root = self.vf, self.nest.root
        children = {lp.header: lp for lp in self.nest.loops if lp.parent == root.id}
        block = root.header + 1
        while block <= root.latch:
            if block in children:
                inner = children[block]
                slots, _ = written_slots(vf, range(inner.header, inner.latch + 1))
                for s in slots:
                    self._clobber(s)
                block = inner.latch + 1
                continue
            b = vf.blocks[block]
            for idx in range(b.first, b.last):
                self._instruction(idx)
            term = vf.instructions[b.last]
            if term.op is not BR:
                raise _Unsupported
            for kind, src, dst in remap_moves(term["operands"]):
                if kind == "i64":
                    self._write64(dst.index, self.read64(src.index))
                elif kind == "i32":
                    self._write32(dst.index, self.read32(src.index))
            block += 1

    def _instruction(self, idx: int) -> None:
        ins = self.vf.instructions[idx]
        name = ins.op.name
        result = self._classify(ins, idx, name)
        slots: set[int] = set()
        instruction_writes(self.vf, idx, slots, set())
        for s in slots:
            self._clobber(s)
        if result is None:
            return
        bank, sym = result
        (self._write64 if bank == "i64" else self._write32)(ins["result"].index, sym)
        if name in _OVERRIDDEN and sym is not None:
            self.overridden[idx] = sym

    def _new(self, rule, idx, args, c=0, known=None) -> Sym:
        if abs(c) >= _MAX_COEFF:
            return None
        return Sym(self._step(Step(rule, idx, tuple(args), c)), c, known)

    def _classify(self, ins, idx: int, name: str):
        op = ins.op
        if op.kind == isa.CONST and op.type in ("i32", "i64"):
            value = ins["value"] if op.fields[0].kind == isa.IMM else 0
            return op.type, self._new("const" + op.type[1:], idx, (value,), 0, value)
        if name in _LINEAR:
            return self._linear(ins, idx, name)
        if name in _DIVISIONS:
            x, y = self.read64(ins["left"].index), self.read64(ins["right"].index)
            if x is None or y is None or y.c:
                return None
            c = x.c if name.startswith("rem") else 0
            return "i64", self._new(name, idx, (x, y), c)
        if name in ("select.i64", "select.i32"):
            read = self.read64 if name == "select.i64" else self.read32
            cond, a, b = self.read32(ins["condition"].index), read(ins["true_value"].index), read(ins["false_value"].index)
            if cond is None or a is None or b is None or a.c != b.c:
                return None
            return name[-3:], self._new(name, idx, (cond, a, b), a.c)
        if name in ("cmp.lt.i64.s", "cmp.eq.i64", "cmp.ne.i64", "cmp.nz.i64"):
            x = self.read64(ins["operand" if name == "cmp.nz.i64" else "left"].index)
            y = self._new("const64", None, (0,), 0, 0) if name == "cmp.nz.i64" else self.read64(ins["right"].index)
            if x is None or y is None or (name != "cmp.lt.i64.s" and abs(x.c - y.c) > 1):
                return None
            return "i32", self._new(name, idx, (x, y))
        if name == "and.i32" or name in _INV32 or name in _INV64:
            fields = _INV32[name][1] if name in _INV32 else _INV64[name][1] if name in _INV64 else ("left", "right")
            banks = [f.bank for f in op.fields if f.name in fields]
            args = [self.read64(ins[f].index) if bank == "i64" else self.read32(ins[f].index)
                    for f, bank in zip(fields, banks)]
            if any(a is None or a.c for a in args):
                return None
            return ("i64" if name in _INV64 else "i32"), self._new(name, idx, args)
        return None

    def _linear(self, ins, idx: int, name: str):
        if name == "fma.i64":
            a, b, d = (self.read64(ins[f].index) for f in ("first", "second", "third"))
            product = self._product(a, b)
            if product is None or d is None:
                return None
            known = _wrap(a.known * b.known + d.known) if None not in (a.known, b.known, d.known) else None
            return "i64", self._new("fma", idx, (a, b, d), product + d.c, known)
        x, y = self.read64(ins["left"].index), self.read64(ins["right"].index)
        if x is None or y is None:
            return None
        if name == "mul.i64":
            c = self._product(x, y)
            known = _wrap(x.known * y.known) if x.known is not None and y.known is not None else None
        else:
            sign = 1 if name == "add.i64" else -1
            c = x.c + sign * y.c
            known = _wrap(x.known + sign * y.known) if x.known is not None and y.known is not None else None
        if c is None:
            return None
        return "i64", self._new(name, idx, (x, y), c, known)

    @staticmethod
    def _product(x, y) -> int | None:
        """The per-iteration change of x * y, when it is a compile-time constant."""
        if x is None or y is None:
            return None
        if not x.c and not y.c:
            return 0
        if not x.c and x.known is not None:
            return x.known * y.c
        if not y.c and y.known is not None:
            return y.known * x.c
        return None


# --- the chunk head -----------------------------------------------------------------------------


class _Head:
    """Emits the chain's first-iteration values and the chunk's length bound at the head."""

    def __init__(self, e, plan: ChunkPlan):
        self.e, self.b, self.plan = e, e.b, plan
        self.v: list = []  # per step: its value at the chunk's first iteration
        self.len: list = []  # per step: for how many iterations from there its rule holds (i64)
        self.extra: dict = {}  # per step key, values the overrides need besides v
        self.inf = const(I64, INF)

    def umin(self, *xs):
        out = xs[0]
        for x in xs[1:]:
            out = self.b.select(self.b.icmp_unsigned("<", x, out), x, out)
        return out

    def umax(self, *xs):
        out = xs[0]
        for x in xs[1:]:
            out = self.b.select(self.b.icmp_unsigned(">", x, out), x, out)
        return out

    def clamp_succ(self, q):
        """q + 1, or INF when that reaches INF (q unsigned)."""
        return self.b.select(self.b.icmp_unsigned(">=", q, self.inf), self.inf, self.b.add(q, const(I64, 1)))

    def no_wrap(self, v0, c: int):
        """How many iterations v0 + c*d stays inside i64 (d counting from 0)."""
        b = self.b
        if c == 0:
            return self.inf
        room = b.sub(const(I64, INF), v0) if c > 0 else b.sub(v0, const(I64, _MIN))
        return self.clamp_succ(room if abs(c) == 1 else b.udiv(room, const(I64, abs(c))))

    def run(self):
        b, e = self.b, self.e
        for key, step in enumerate(self.plan.steps):
            v, n = getattr(self, "_" + step.rule.replace(".", "_"), None)(step, key) \
                if step.rule in _RULES else self._table(step)
            self.v.append(v)
            self.len.append(n)
        return self

    def arg(self, sym: Sym):
        return self.v[sym.key], self.len[sym.key]

    def _table(self, step: Step):
        fn, _ = _INV32.get(step.rule) or _INV64[step.rule]
        args = [self.arg(a) for a in step.args]
        return fn(self.b, *(v for v, _ in args)), self.umin(*(n for _, n in args))

    # rules: (step, key) -> (first value, length)
    def _iv(self, step, key):
        return self.e.get(Reg("i64", step.args[0], False, step.args[0]), "i64"), self.inf

    def _reg64(self, step, key):
        return self.e.get(Reg("i64", step.args[0], False, step.args[0]), "i64"), self.inf

    def _reg32(self, step, key):
        return self.e.get(Reg("i32", step.args[0], False, step.args[0]), "i32"), self.inf

    def _const64(self, step, key):
        return const(I64, step.args[0]), self.inf

    def _const32(self, step, key):
        return const(I32, step.args[0]), self.inf

    def _linear(self, step, fn):
        args = [self.arg(a) for a in step.args]
        return fn(*(v for v, _ in args)), self.umin(*(n for _, n in args))

    def _add_i64(self, step, key):
        return self._linear(step, self.b.add)

    def _sub_i64(self, step, key):
        return self._linear(step, self.b.sub)

    def _mul_i64(self, step, key):
        return self._linear(step, self.b.mul)

    def _fma(self, step, key):
        return self._linear(step, lambda x, y, z: self.b.add(self.b.mul(x, y), z))

    def _division(self, step, key, remainder: bool, signed: bool):
        b = self.b
        (x, xs), (y, ys) = (self.arg(a) for a in step.args)
        cx = step.args[0].c
        zero, one = const(I64, 0), const(I64, 1)
        if cx == 0:
            ok = b.icmp_unsigned("!=", y, zero)
            if signed:
                ok = b.and_(ok, b.not_(b.and_(b.icmp_signed("==", x, const(I64, _MIN)),
                                              b.icmp_signed("==", y, const(I64, -1)))))
            y1 = b.select(ok, y, one)
            op = {(False, True): b.sdiv, (True, True): b.srem, (False, False): b.udiv, (True, False): b.urem}
            return op[(remainder, signed)](x, y1), b.select(ok, self.umin(xs, ys), zero)
        # x moves: both non-negative (then every rule below is plain unsigned arithmetic),
        # and the chunk stays in x's cell of width y.
        ok = b.and_(b.icmp_signed(">=", x, zero), b.icmp_signed(">", y, zero))
        x1, y1 = b.select(ok, x, zero), b.select(ok, y, one)
        q, r = b.udiv(x1, y1), b.urem(x1, y1)
        room = b.sub(b.sub(y1, one), r) if cx > 0 else r
        cell = self.clamp_succ(room if abs(cx) == 1 else b.udiv(room, const(I64, abs(cx))))
        n = b.select(ok, self.umin(xs, ys, cell, self.no_wrap(x, cx)), zero)
        self.extra[key] = b.mul(q, y1)  # x - q*y is the remainder in every iteration
        return (r if remainder else q), n

    def _div_i64_s(self, step, key):
        return self._division(step, key, False, True)

    def _div_i64_u(self, step, key):
        return self._division(step, key, False, False)

    def _rem_i64_s(self, step, key):
        return self._division(step, key, True, True)

    def _rem_i64_u(self, step, key):
        return self._division(step, key, True, False)

    def _select(self, step, key):
        b = self.b
        (cond, cn), (x, xn), (y, yn) = (self.arg(a) for a in step.args)
        t = b.icmp_unsigned("!=", cond, const(cond.type, 0))
        self.extra[key] = t
        return b.select(t, x, y), self.umin(cn, b.select(t, xn, yn))

    def _select_i64(self, step, key):
        return self._select(step, key)

    def _select_i32(self, step, key):
        return self._select(step, key)

    def _and_i32(self, step, key):
        b = self.b
        (x, xn), (y, yn) = (self.arg(a) for a in step.args)
        zero = const(I32, 0)
        v = b.and_(x, y)
        # A zero operand decides the result for as long as it stays zero.
        n = self.umax(self.umin(xn, yn), b.select(b.icmp_unsigned("==", x, zero), xn, const(I64, 0)),
                      b.select(b.icmp_unsigned("==", y, zero), yn, const(I64, 0)))
        return v, n

    def _cmp_lt_i64_s(self, step, key):
        b = self.b
        xs, ys = step.args
        (x, xn), (y, yn) = self.arg(xs), self.arg(ys)
        t = b.icmp_signed("<", x, y)
        n = self.umin(xn, yn, self.no_wrap(x, xs.c), self.no_wrap(y, ys.c))
        d = xs.c - ys.c
        if d > 0:  # x - y grows: true until it reaches 0, after ceil((y - x) / d) iterations
            gap = b.sub(b.sub(y, x), const(I64, 1))
            flip = self.clamp_succ(gap if d == 1 else b.udiv(gap, const(I64, d)))
            n = self.umin(n, b.select(t, flip, self.inf))
        elif d < 0:  # x - y shrinks: false while it stays >= 0
            gap = b.sub(x, y)
            flip = self.clamp_succ(gap if d == -1 else b.udiv(gap, const(I64, -d)))
            n = self.umin(n, b.select(t, self.inf, flip))
        return b.zext(t, I32), n

    def _equality(self, step, pred: str):
        b = self.b
        xs, ys = step.args
        (x, xn), (y, yn) = self.arg(xs), self.arg(ys)
        t = b.zext(b.icmp_unsigned(pred, x, y), I32)
        d = xs.c - ys.c  # -1, 0 or 1 (the classifier's rule): wraparound arithmetic is exact
        n = self.umin(xn, yn)
        if d:
            # x - y (mod 2^64) changes by d: it is zero again after `meet` iterations.
            meet = b.sub(y, x) if d == 1 else b.sub(x, y)
            zero = const(I64, 0)
            n = self.umin(n, b.select(b.icmp_unsigned("==", meet, zero), const(I64, 1), self.umin(meet, self.inf)))
        return t, n

    def _cmp_eq_i64(self, step, key):
        return self._equality(step, "==")

    def _cmp_ne_i64(self, step, key):
        return self._equality(step, "!=")

    def _cmp_nz_i64(self, step, key):
        return self._equality(step, "!=")


_RULES = {"iv", "reg64", "reg32", "const64", "const32", "add.i64", "sub.i64", "mul.i64", "fma", "select.i64",
          "select.i32", "and.i32", "cmp.lt.i64.s", "cmp.eq.i64", "cmp.ne.i64", "cmp.nz.i64"} | _DIVISIONS


# --- lowering -----------------------------------------------------------------------------------------


def lower(e, plan: ChunkPlan, lower_nest) -> None:
    """The loop at its header block: the header's own instructions, then per chunk the head,
    and either the chunk's nest (lowered by `lower_nest(e, nest, entry)`) or one checked
    iteration of the original body; both come back to the header."""
    b, fn, vf = e.b, e.fn, e.vf
    root = plan.root
    header = e.blocks[root.header]
    block = vf.blocks[root.header]
    b.position_at_end(header)
    e.lower_instructions(range(block.first, block.last))
    term = vf.instructions[block.last]
    e.pc = term.pc
    condition = e.i32(term["condition"])
    head = fn.append_basic_block(f"bb{root.header}_chunk_head")
    b.cbranch(b.icmp_unsigned("!=", condition, const(I32, 0)), head, e.target_block(term["false_dest_pc"]))

    b.position_at_end(head)
    h = _Head(e, plan).run()
    bound = e.get(Reg("i64", root.bound[2], False, root.bound[2]), "i64")
    i = h.v[plan.iv_key]
    lengths = [h.len[s.key] for s in plan.overridden.values()]
    n = h.umin(b.sub(bound, i), *lengths)  # i < bound here: bound - i is exact unsigned
    values = {"end": b.add(i, n)}
    for sym in plan.overridden.values():
        values[("v", sym.key)] = h.v[sym.key]
        if sym.c:
            values[("b", sym.key)] = b.sub(h.v[sym.key], b.mul(i, const(I64, sym.c)))
    head_end = b.block

    one = _lower_one_iteration(e, plan)
    chunk = fn.append_basic_block(f"bb{root.header}_chunk")
    b.position_at_end(head_end)
    b.cbranch(b.icmp_unsigned("!=", n, const(I64, 0)), chunk, one)

    e.nest_values = values
    e.redirect = {root.exit: header}
    e.overrides = {idx: _override(plan.steps[sym.key], sym, h) for idx, sym in plan.overridden.items()}
    e.overrides[_loop_test(vf, root)] = _chunk_test(values["end"])
    if not (e.mod.steps.jam_loops and jam.plan(vf, plan.chunk, e.mod.steps.jam_outer, narrow=e.mod.steps.narrow_jam)):
        for loop in plan.chunk.loops[1:] if _contiguous(plan.chunk) else plan.chunk.loops:
            e.overrides[vf.blocks[loop.latch].last] = _scalar_back_edge
    try:
        lower_nest(e, plan.chunk, chunk)
    finally:
        e.nest_values, e.redirect, e.overrides = {}, {}, {}


def _loop_test(vf, loop) -> int:
    """The index of the compare deciding `loop` (iv < bound) in its header block."""
    block = vf.blocks[loop.header]
    condition = vf.instructions[block.last]["condition"].index
    return next(i for i in range(block.last - 1, block.first - 1, -1)
                if vf.instructions[i].op is LOOP_TEST and vf.instructions[i]["result"].index == condition)


def _chunk_test(end):
    """The chunk's loop decides against the chunk's end instead of the loop's bound."""
    def lower(e, ins):
        iv = e.get(ins["left"], "i64")
        e.set(ins["result"], e.b.zext(e.b.icmp_signed("<", iv, end), I32), "i32")
    return lower


def _contiguous(nest: Nest) -> bool:
    """Whether every access of the nest moves by at most one element per iteration of its root."""
    return all(a.element.coeff(nest.root.id) in (ZERO, ("const", 1), ("const", -1)) for a in nest.accesses)


def _scalar_back_edge(e, ins) -> None:
    """A back edge in a chunk that is not jammed, marked not to vectorise: an inner loop's
    accesses stride by the chunk's other dimensions (a depthwise conv's channels), and so
    do the chunk's own when it walks channels (IREE tiles some depthwise convs channel
    innermost). LLVM's gathers and scatters there ran 2-3x slower than scalar code
    (EfficientNet-Lite0's 3x3 depthwise conv 112x112x32, one thread: 19.8 ms unchunked,
    37.6 ms vectorised, 13.3 ms scalar)."""
    branch_to(e, ins["dest_pc"], ins["operands"])
    e.b.block.terminator.set_metadata("llvm.loop", e.mod.module.loop_node('!"llvm.loop.vectorize.enable", i1 0'))


def _lower_one_iteration(e, plan: ChunkPlan):
    """The original body, checked, once; its latch branches back to the header."""
    root = plan.root
    e.block_override = {i: e.fn.append_basic_block(f"bb{i}_one") for i in range(root.header + 1, root.latch + 1)}
    try:
        for i in sorted(e.block_override):
            e.lower_block(i, e.block_override[i])
        return e.block_override[root.header + 1]
    finally:
        e.block_override = {}


def _override(step: Step, sym: Sym, h: _Head):
    """How instruction `step.index` is lowered inside a chunk: its result from the head."""
    rule = step.rule
    if sym.c and rule.startswith("rem"):
        offset = h.extra[sym.key]

        def lower_remainder(e, ins):
            x = e.get(ins["left"], "i64")
            e.set(ins["result"], e.b.sub(x, offset), "i64")
        return lower_remainder
    if sym.c and rule == "select.i64":
        taken = h.extra[sym.key]

        def lower_select(e, ins):
            x, y = e.get(ins["true_value"], "i64"), e.get(ins["false_value"], "i64")
            e.set(ins["result"], e.b.select(taken, x, y), "i64")
        return lower_select
    value = h.v[sym.key]

    def lower_constant(e, ins):
        e.set(ins["result"], value, "i64")
    return lower_constant
