"""Unroll-and-jam of a parallel loop around a reduction: several accumulators at once.

In a matmul or convolution the innermost loop is a chain of dependent multiply-adds into
one output element, bound by the latency of each add. The loop around it (over output
columns or channels) is parallel: each of its iterations works on its own output element.
Running U of those iterations in lockstep through the inner loops gives U independent
chains that keep the FP units busy. Every element still sees exactly the same operations
in the same order, so results stay bit-identical.

Only the unchecked copy of a versioned nest is jammed, and only when that is provably the
same program:
- the jammed loop P has inner loops and contains nothing that can trap, call, or touch
  state other than registers and proven buffer accesses;
- every buffer P stores to is accessed only at one index expression E, constant within
  P's inner loops and moving with P's induction variable (a different element per
  iteration of P), and its memory does not overlap any other buffer P reads (the guard
  checks that at run time);
- no register carries a value from one iteration of P to the next, except P's induction
  variable;
- the loops inside P have the same iteration space in every iteration of P.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..frontend import isa
from .loops import ZERO, Loop, Nest, static_trips, written_slots

FACTOR = 64  # iterations of P run together (at most; see _factor)
MIN_FACTOR = 16
COPY_BUDGET = 3200  # instructions of P's region times the factor

# Op families the jammed region may contain besides proven buffer accesses: they cannot
# trap and touch registers only.
_PURE_FAMILIES = {"unary", "binary", "ternary", "shift", "select", "unary_cmp", "binary_cmp", "conversion",
                  "const", "zero", "block", "branch", "cond_branch"}
_TRAPPING = ("div.", "rem.i")  # integer division and remainder trap on zero


@dataclass(frozen=True)
class JamPlan:
    loop: Loop  # the jammed loop P
    region: range  # its blocks, header first
    renamed: frozenset[int]  # i32 slots written in P's region (each copy has its own)
    stored: tuple[int, ...]  # ref registers of buffers P stores to
    others: tuple[int, ...]  # ref registers of the other buffers P accesses
    factor: int = FACTOR


def plan(vf, nest: Nest) -> JamPlan | None:
    """The loop of `nest` worth jamming, if one qualifies."""
    children = {loop.id: [c for c in nest.loops if c.parent == loop.id] for loop in nest.loops}
    # Deepest loops first: the one right around the reduction gives the most independent chains.
    for loop in sorted(nest.loops, key=lambda lp: -_depth(nest, lp)):
        if not children[loop.id]:
            continue
        p = _check(vf, nest, loop)
        if p is not None:
            return p
    return None


def _depth(nest: Nest, loop: Loop) -> int:
    d = 0
    while loop.parent is not None:
        loop = nest.loops[loop.parent]
        d += 1
    return d


def _inside(nest: Nest, loop: Loop) -> set[int]:
    """Ids of the loops strictly inside `loop`."""
    out: set[int] = set()
    for other in nest.loops:
        p = other.parent
        while p is not None:
            if p == loop.id:
                out.add(other.id)
                break
            p = nest.loops[p].parent
    return out


def _check(vf, nest: Nest, loop: Loop) -> JamPlan | None:
    region = range(loop.header, loop.latch + 1)
    if not pure_region(vf, region, nest):
        return None
    inner = _inside(nest, loop)
    accesses = [a for a in nest.accesses if _in_region(vf, a.index, region)]
    stored = {a.buffer for a in accesses if a.store}
    if not stored:
        return None
    for buf in stored:
        exprs = {a.element for a in accesses if a.buffer == buf}
        if len(exprs) != 1:
            return None
        (element,) = exprs
        if any(element.coeff(i) != ZERO for i in inner):
            return None  # must stay one element through the inner loops
        c = element.coeff(loop.id)
        if c[0] != "const" or c[1] == 0:
            return None  # must move with P
    if not _no_carried_registers(vf, region, loop):
        return None
    renamed, _refs = written_slots(vf, region)
    others = tuple(sorted({a.buffer for a in accesses} - stored))
    return JamPlan(loop, region, frozenset(renamed), tuple(sorted(stored)), others, _factor(vf, loop, region))


def pure_region(vf, region: range, nest: Nest) -> bool:
    """Whether the blocks hold only register arithmetic, branches and proven buffer accesses:
    nothing that can trap, call, or touch other state."""
    proven = {a.index for a in nest.accesses}
    for bi in region:
        block = vf.blocks[bi]
        for idx in range(block.first, block.last + 1):
            ins = vf.instructions[idx]
            if idx not in proven and (ins.op.family not in _PURE_FAMILIES or ins.op.name.startswith(_TRAPPING)):
                return False
    return True


def _factor(vf, loop: Loop, region: range) -> int:
    """How many iterations of P run together: FACTOR, halved while the copies would exceed
    COPY_BUDGET instructions (compile time grows with them), and at most the largest power
    of two within P's trip count when that is known (a tile of 16 columns runs as one group
    of 16 rather than entirely in the remainder loop).

    FACTOR 64 keeps four 16-wide vector accumulators in flight: measured single-threaded
    against 16 (one AVX-512 chain bound by the FMA latency), MLP 6.2 -> 2.2 ms, matmul 512
    10.6 -> 5.3 ms, 1x1 conv 4.0 -> 2.2 ms, 3x3 conv 4.3 -> 2.9 ms, ResNet-50-style 64x64
    36 -> 19 ms. The budget keeps compile time in check where regions are large; with it
    every ResNet kernel gets 64 and its executables compile in 10.4 s of CPU (7.8 s at 16)."""
    size = sum(vf.blocks[b].last - vf.blocks[b].first + 1 for b in region)
    factor = FACTOR
    while factor > MIN_FACTOR and factor * size > COPY_BUDGET:
        factor //= 2
    trips = static_trips(vf, loop)
    while trips is not None and factor > 2 and factor > trips:
        factor //= 2
    return factor


def _in_region(vf, index: int, region: range) -> bool:
    for bi in region:
        b = vf.blocks[bi]
        if b.first <= index <= b.last:
            return True
    return False


def _no_carried_registers(vf, region: range, loop: Loop) -> bool:
    """In block order from P's first body block, every register is written before it is read
    (P's induction variable excepted): then no value flows between iterations of P."""
    written: set[int] = {loop.iv, loop.iv + 1}
    in_region, _ = written_slots(vf, region)
    for bi in region:
        if bi == loop.header:
            continue
        block = vf.blocks[bi]
        for idx in range(block.first, block.last + 1):
            ins = vf.instructions[idx]
            for f, value in zip(ins.op.fields, ins.args):
                for reg in _read_regs(f, value):
                    if reg.is_ref:
                        continue
                    slots = [reg.index] + ([reg.index + 1] if reg.bank in ("i64", "f64") else [])
                    if any(s in in_region and s not in written for s in slots):
                        return False
            for f, value in zip(ins.op.fields, ins.args):
                for reg in _written_regs(f, value):
                    if not reg.is_ref:
                        written.add(reg.index)
                        if reg.bank in ("i64", "f64"):
                            written.add(reg.index + 1)
    return True


def _read_regs(f, value):
    if f.kind == isa.REG and not f.out:
        return [value]
    if f.kind == isa.REMAP:
        return [s for s, _ in value]
    return []


def _written_regs(f, value):
    if f.kind == isa.REG and f.out:
        return [value]
    if f.kind == isa.REMAP:
        return [d for _, d in value]
    return []


# --- lowering -------------------------------------------------------------------------------------

def ranges_apart(e, plan: JamPlan, nest, ranges):
    """i1: the bytes P's stores can reach lie apart from the bytes of every other buffer P
    accesses, and of every other stored buffer (so the jammed order of stores and loads
    reads what the original order reads). Uses the guard's per-access element ranges, so
    buffers that are views of one allocation (IREE's transient arena) qualify when the
    parts the nest touches do not overlap. Emitted with the guard; meaningful when it holds.
    """
    from ..frontend.decode import Reg
    from .emitter import I1, I64, const

    b = e.b
    region = {a.index for a in nest.accesses if _in_region(e.vf, a.index, plan.region)}
    spans = {}  # buffer register -> (first byte address, end byte address) of what P touches
    for reg in (*plan.stored, *plan.others):
        shadow = e.buffer_shadow(Reg("ref", reg, False, reg))
        base = b.ptrtoint(shadow["data"], I64)
        lo_all, hi_all = const(I64, -1), const(I64, 0)  # unsigned min/max; empty when nothing runs
        for a in nest.accesses:
            if a.index not in region or a.buffer != reg:
                continue
            runs, lo, hi = ranges[a.index]
            first = b.add(base, b.mul(lo, const(I64, a.width)))
            end = b.add(base, b.mul(b.add(hi, const(I64, 1)), const(I64, a.width)))
            first = b.select(runs, first, const(I64, -1))
            end = b.select(runs, end, const(I64, 0))
            lo_all = b.select(b.icmp_unsigned("<", first, lo_all), first, lo_all)
            hi_all = b.select(b.icmp_unsigned(">", end, hi_all), end, hi_all)
        spans[reg] = (lo_all, hi_all)
    ok = const(I1, 1)
    for s in plan.stored:
        for o in (*plan.stored, *plan.others):
            if o == s or (o in plan.stored and o < s):
                continue
            (s_lo, s_hi), (o_lo, o_hi) = spans[s], spans[o]
            apart = b.or_(b.icmp_unsigned("<=", s_hi, o_lo), b.icmp_unsigned("<=", o_hi, s_lo))
            ok = b.and_(ok, apart)
    return ok


def emit(e, plan: JamPlan, jam_header, rem_header, apart) -> None:
    """Lowers P's region jammed: `jam_header` runs FACTOR iterations at once while that many
    remain and the buffers are `apart` (an i1 from the guard), then hands the rest to
    `rem_header` (P's ordinary, unchecked loop)."""
    from ..frontend.decode import Reg
    from .emitter import I1, I64, const
    from .ops_control import apply_remap

    vf = e.vf
    b = e.b
    loop, u = plan.loop, plan.factor
    fn = e.fn
    blocks = {i: fn.append_basic_block(f"bb{i}_jammed") for i in plan.region if i != loop.header}
    iv = Reg("i64", loop.iv, False, loop.iv)

    # Header: enough iterations left for all copies?
    b.position_at_end(jam_header)
    e.copy, e.renamed = None, plan.renamed
    from .guard import InvariantEval

    ev = InvariantEval(e)
    start = e.get(iv, "i64")
    bound, step = ev.expr(loop.bound), ev.expr(loop.step)
    span = ev.mul(step, const(I64, u - 1))
    runs = b.icmp_signed("<", start, bound)
    enough = b.and_(b.and_(runs, ev.ok), b.icmp_unsigned(">", b.sub(bound, start), span))
    enough = b.and_(enough, apart)
    entry = fn.append_basic_block(f"bb{loop.header}_jam_entry")
    b.cbranch(enough, entry, rem_header)

    # Entry: copy k starts at iv + k * step; the real registers act as the last copy.
    b.position_at_end(entry)
    for k in range(u - 1):
        e.copy = k
        e.set(iv, b.add(start, b.mul(step, const(I64, k))), "i64")
    e.copy = None
    e.set(iv, b.add(start, span), "i64")
    b.branch(blocks[loop.header + 1])

    def copies():
        for k in range(u):
            e.copy = None if k == u - 1 else k
            e.jam_copy = k
            yield k
        e.jam_copy = None

    for i in sorted(blocks):
        block = vf.blocks[i]
        b.position_at_end(blocks[i])
        body = range(block.first, block.last)
        for _ in copies():
            e.lower_instructions(body)
        term = vf.instructions[block.last]
        e.pc = term.pc
        if term.op.name == "br":
            for _ in copies():
                apply_remap(e, term["operands"])
            target = vf.block_of_pc[term["dest_pc"]]
            e.copy = None
            b.branch(jam_header if target == loop.header else blocks[target])
        else:  # cond_br of an inner loop header: every copy decides alike; copy 0 speaks
            e.copy = 0 if u > 1 else None
            cond = b.icmp_unsigned("!=", e.i32(term["condition"]), const(e.i32(term["condition"]).type, 0))
            edges = []
            for side in ("true", "false"):
                target = blocks[vf.block_of_pc[term[f"{side}_dest_pc"]]]
                pairs = term[f"{side}_operands"]
                if pairs:
                    edge = fn.append_basic_block(f"bb{i}_jammed_{side}")
                    here = b.block
                    b.position_at_end(edge)
                    for _ in copies():
                        apply_remap(e, pairs)
                    b.branch(target)
                    b.position_at_end(here)
                    target = edge
                edges.append(target)
            b.cbranch(cond, edges[0], edges[1])
    e.copy, e.renamed, e.jam_copy = None, frozenset(), None
