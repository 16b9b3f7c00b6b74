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

import math
from dataclasses import dataclass, replace

from ...frontend import isa
from ...frontend.decode import Reg
from ..emit.effects import remap_moves, written_slots
from ..emit.ops_control import apply_move
from ..emit.types import I1, I64, const
from .analysis import BLOCK, BR, COND_BR, ZERO, Loop, Nest, constant_value, static_trips
from . import pack as packing
from .guard import InvariantEval
from .sharing import P_LANE, Q_LANE, REGISTER_OPS, CopySharing

FACTOR = 64  # iterations of P run together (at most; see _factor)
MIN_FACTOR = 16
# ... with the narrow_jam step (the jammed quick tier, lower.unit_build: no vectoriser, fast
# instruction selection): scalar chains need a few to hide the add's latency, not 64.
# ResNet-50-style 64, every kernel so, one thread, CPU (lowering + LLVM / a call): 4 wide
# 0.74 + 1.53 s / 0.43 s, 8 wide 0.94 + 1.89 / 0.41-0.44, 64 wide 1.41 + 2.67 / 0.42; not
# jammed 0.59 + 1.30 / 1.86 (load 6-7).
NARROW_FACTOR = 4
COPY_BUDGET = 3200  # instructions of P's region times the factor

# What the jammed region may contain besides proven buffer accesses: ops that touch
# registers only and cannot trap, block markers and the two branches the jam lowers. Two
# exceptions keep what the region took before the ISA said which ops trap, until they are
# settled on their own: float division stays out (the test was the name prefix "div.") and
# select.ref stays in, although its type check can trap and the copies share ref registers.
_KEPT_OUT, _KEPT_IN = {isa.op("div.f32"), isa.op("div.f64")}, {isa.op("select.ref")}
_JAMMABLE = frozenset(({op for op in REGISTER_OPS if not op.traps} - _KEPT_OUT) | _KEPT_IN | {BLOCK, BR, COND_BR})


@dataclass(frozen=True)
class JamPlan:
    loop: Loop  # the jammed loop P
    region: range  # its blocks, header first
    renamed: frozenset[int]  # i32 slots written in P's region (each copy has its own)
    stored: tuple[int, ...]  # ref registers of buffers P stores to
    others: tuple[int, ...]  # ref registers of the other buffers P accesses
    factor: int = FACTOR
    outer: "OuterJam | None" = None  # P's parent jammed too, when it qualifies
    # Smaller groups P's remaining iterations run in, largest first, before P's plain loop
    # takes what is left (Nest.jam_then: a delinearised chunk's rows of 64 or 48 columns).
    then: tuple[int, ...] = ()

    @property
    def widest(self) -> range:
        """The blocks of the outermost jammed loop."""
        return self.outer.region if self.outer is not None else self.region

    @property
    def widest_others(self) -> tuple[int, ...]:
        """The buffers read, not stored, in those blocks."""
        return self.outer.others if self.outer is not None else self.others


@dataclass(frozen=True)
class OuterJam:
    """Register blocking: P's parent Q also runs `factor` iterations at once, and inside
    them P runs `inner` iterations at once, so factor x inner copies share each load that
    does not depend on Q (the weights of a convolution, a matmul's right-hand side row),
    which LLVM then loads once. Taken only where P's trip count is a constant multiple of
    `inner`, so no Q copy ever needs a partial group of P; Q's remaining iterations run
    with P jammed alone (plainly where there are none but when the buffers overlap).

    4 x 16 measured best on AVX2 (8 vector accumulators; SLP packs P's copies, so they are
    numbered P-major): single-threaded matmul 512 8.4 -> 5.8 ms, MLP 2.65 -> 2.03 ms;
    6 x 16 spills, 8 x 8 and 3 x 16 reach 6.2 and 5.9 ms, 4 x 8 slows down."""

    loop: Loop  # Q
    region: range
    renamed: frozenset[int]  # i32 slots written in Q's region
    others: tuple[int, ...]  # ref registers of the buffers Q's region reads, not stored
    factor: int  # iterations of Q at once
    inner: int  # iterations of P at once inside them
    # Whether Q's remaining iterations run with P jammed: not when Q's trip count is a
    # constant multiple of `factor` (then they run only if the buffers overlap; compile time)
    jammed_remainder: bool = True
    # Loads P's copies would read far apart (a transposed right-hand side), which the blocked
    # copies read from a transposed copy made on the nest's way in (lower.loops.pack) instead:
    # the blocking is then the ordinary one. Measured one thread (Xeon, Sapphire Rapids class,
    # CPU time, load 6-7): qmatmul's 16x2048x2048 matmul with B[n, k] 9.2 -> 2.7 ms a dispatch
    # (4 x 2 strided -> packed 4 x 32); the int8 model 11.4 -> 6.1 ms, int4 13.2 -> 5.0 ms.
    packs: tuple = ()

    @property
    def copies(self) -> int:
        return self.factor * self.inner


def plan(vf, nest: Nest, outer: bool = True, wide: bool = False, pack: bool = False,
         rows: bool = True, narrow: bool = False) -> JamPlan | None:
    """The loop of `nest` worth jamming, if one qualifies (and its parent too, if `outer`;
    `wide`: the target has 512-bit vectors, see OUTER_INNER_WIDE; `pack`: far-apart loads
    may be read from a transposed copy, see OuterJam.packs; `rows`: ... or the rows run in
    vector lanes instead, see ROW_LANES; `narrow`: at most NARROW_FACTOR iterations at once)."""
    children = {loop.id: [c for c in nest.loops if c.parent == loop.id] for loop in nest.loops}
    # Deepest loops first: the one right around the reduction gives the most independent chains.
    for loop in sorted(nest.loops, key=lambda lp: -_depth(nest, lp)):
        if not children[loop.id]:
            continue
        p = _check(vf, nest, loop, narrow)
        if p is not None:
            if outer:
                q = _check_outer(vf, nest, p, children, wide, pack, rows=rows)
                through = _check_outer(vf, nest, p, children, wide, pack, through=True)
                if through is not None and _prefer_through(q, through):
                    q = through
                if q is not None:
                    return replace(p, outer=q)
            return p
    return None


OUTER_FACTOR = 4  # iterations of Q at once in register blocking
OUTER_INNER = 16  # ... with this many of P at once inside each
OUTER_BUDGET = 4096  # instructions of Q's region times the copies
# A Q of SMALL_Q iterations (a late ResNet stage's 2x2 images) is blocked SMALL_Q x 32 when
# P holds a convolution window (SMALL_Q_LEVELS loops deep: kernel rows, columns, channels).
# Each weight loaded then serves both columns: on 2 threads the 2x2x512 3x3 convs (weights
# of a workgroup bigger than L2, read once per output pixel) ran 1.10 -> 0.82-0.99 ms and
# 1.84-1.90 -> 1.70-1.76 ms, unchanged on one; a 1x1 one (P one loop deep) ran slower
# (1.31 -> 1.85 ms) and fewer Q iterations than OUTER_FACTOR otherwise stay jammed over P.
SMALL_Q = 2
SMALL_Q_LEVELS = 3
# When a load P's copies do not share strides across P (a matmul whose right-hand side is
# stored transposed, B[n, k]: nn.Linear weights as ONNX exports hand them over), each of
# the 16 P copies reads its own row, 8 KB apart for K = 2048: the rows fall in one L1 set
# and the loads become gathers that miss. Few P copies and more Q copies keep the streams
# in cache. Measured on a 16x2048x2048 matmul (AMD EPYC Zen 4, one thread, CPU time):
# 4 x 16 28.3 ms, 4 x 4 14.3, 8 x 4 17.2, 4 x 2 9.7, 8 x 2 9.7, 8 x 1 15.8 ms.
STRIDED_FACTOR, STRIDED_INNER = 4, 2
# With 512-bit vectors (32 registers of 16 floats) P runs 32 iterations at once inside Q's 4:
# 8 vector accumulators again, where 4 x 16 leaves 4 and the adds wait on their latency.
# Measured one thread (Xeon, Sapphire Rapids class, CPU time, load 5-11), 4 x 16 -> 4 x 32 at
# 512 bits: matmul 512 4.16 -> 3.66 ms, MLP 2.23 -> 1.84 ms, ResNet-50-style 64x64 30.4 -> 27.6 ms,
# MiniLM's FFN matmul (128x1536x384) 3.55 -> 3.31 ms; 8 x 16, 8 x 32 and 2 x 64 were slower.
# Taken where P's trip count is a multiple of it and the copies stay within the same budget
# per copy, else the blocking stays 4 x 16.
OUTER_INNER_WIDE = 32
# A Q whose known trip count is no multiple of the factor runs whole when its copies stay
# within this many: ResNet-50's (ONNX zoo) 3x3 conv 512x7x7x512, one thread, CPU time,
# 13.6 -> 9.7 ms with 7 x 7 instead of 4 x 7 and 3 rows jammed alone, EfficientNet-Lite0's
# 1x1 conv 1152x7x7x192 0.75 -> 0.49 ms; 14 x 14 rows as 7 x 14 ran 0.73x (stays 4 x 14).
OUTER_COPIES = OUTER_FACTOR * OUTER_INNER
# The same instructions per copy as 4 x 16 within OUTER_BUDGET. It costs compile time: CPU time
# of compiling ResNet-50-style 64x64 10.1 s at 4 x 16 (both 512-bit), 15.5 s at 4 x 32 with this
# budget, 11.2 s with OUTER_BUDGET (then only regions of up to 32 instructions get 4 x 32, and
# its convolutions run as at 4 x 16: 27.1 ms instead of 24.4 ms); MiniLM-L6 3.7 / 5.2 / 3.9 s
# of compile for 54.5 / 50.5 / 54.6 ms a call (one thread, load 6-7).
OUTER_BUDGET_WIDE = 2 * OUTER_BUDGET
# Rows in vector lanes: when P's copies would read a transposed right-hand side (B[n, k]) and
# Q runs ROW_LANES rows, the blocked copies run those ROW_LANES iterations of Q (one 512-bit
# vector of 4-byte elements) by ROW_INNER of P: each copy's left-hand element comes
# from a transposed copy of the rows (A^T[k][m], small: Q x R elements), each column's B
# element is loaded once and broadcast, and the output tile is kept transposed on the stack
# while they run (lower.loops.pack.TilePlan: it makes LLVM's SLP pack the copies by rows).
# B is then read once, in its own layout, while the multiplies run, where the packed blocking
# first copies all of it (16 MB for qmatmul's 16x2048x2048, about 1 ms of memory traffic
# before any arithmetic). Measured one thread, CPU time, qmatmul_int8's matmul dispatch
# (16 x 64 outputs a workgroup, K = 2048), same process alternating (load 2.5): packed 4 x 32
# 2.23 ms, rows 16 x 16 1.66 ms, 16 x 8 1.62 ms, 16 x 4 1.65 ms (B's reading bounds it, not
# the adds' latency); 16 x 8 compiles in 0.44 s of CPU, 16 x 16 in 1.07 s. Taken for one group
# of rows only (each group reads B again) and at least ROW_MIN_COLUMNS columns (the copy of A
# at most a quarter of the copy of B it replaces). Same process, one thread, transposed-B
# matmuls M x N x K (IREE's tiles of 64 columns), packed -> rows: 16x1024x512 0.416 ->
# 0.363 ms; 32 rows a tile, 32x2048x1024 2.67 -> 2.73 ms; 64 rows, 64x1024x512 0.89 -> 1.19 ms.
# All of Q's rows in lanes at once (B read once) did not help either: 32 x 4 copies 2.07 ->
# 2.11 ms, 64 x 2 0.79 -> 1.12 ms (four vector loads of A's copy per step, from L2), while
# 16 x 8 ran qmatmul's shape 3.00 -> 2.42 ms in the same run (load 3.3-3.5, whole calls).
ROW_LANES, ROW_INNER = 16, 8
ROW_MIN_COLUMNS = 4 * ROW_LANES
ROW_WIDTH = 4  # bytes of the elements the lanes hold (f32, i32)
ROW_BUDGET = OUTER_BUDGET_WIDE


def _prefer_through(parent: "OuterJam | None", through: "OuterJam") -> bool:
    """Whether to block over P's grandparent rather than its parent: its copies share the
    loads that do not move with it (an NCHW conv's input row, read by 4 output channels at
    once), unless those loads are strided or the parent's blocking takes a small image whole.
    One thread, CPU time, against the rows around the row (4 x 14): ResNet-50 zoo's 3x3 convs
    256x14x14x256 7.22 -> 5.87 ms, 128x28x28x128 7.70 -> 6.15 ms, EfficientNet-Lite0's 1x1
    conv 672x14x14x112 1.06 -> 0.95 ms (load 8); strided (stride-2 1x1 convs, 4 x 2) 0.74x,
    a 7x7 image as 4 channels x 7 columns instead of 7 x 7 0.46x."""
    if (through.factor, through.inner) == (STRIDED_FACTOR, STRIDED_INNER) or through.inner % OUTER_INNER == 0:
        return False  # the kernel suite's NHWC nests (rows of 16k) keep their measured blocking
    return parent is None or parent.jammed_remainder or parent.factor <= OUTER_FACTOR


def _injective(strides) -> bool:
    """Whether sum(stride * i) over i < trips of each (stride, trips) takes a different value
    for every combination: each stride, smallest first, exceeds what the smaller ones reach
    (the largest's trip count may be unknown)."""
    reach = 0
    for k, (stride, trips) in enumerate(sorted(strides, key=lambda st: st[0])):
        if stride <= reach or (trips is None and k < len(strides) - 1):
            return False
        reach += stride * (trips - 1) if trips is not None else 0
    return True


def _check_outer(vf, nest: Nest, p: JamPlan, children, wide: bool = False, pack: bool = False,
                 through: bool = False, rows: bool = False) -> OuterJam | None:
    """Register blocking over P's parent Q (`through`: its grandparent, the loop between
    with a known trip count and running in lockstep in every copy, as an NCHW conv's rows
    between its channels and columns), when it is provably the same program: Q's region
    holds only P's loop (and the loop between) and pure blocks, stores only where P stores
    (every iteration its own element), no register carries a value between Q's iterations,
    and P's trip count is a constant multiple of the inner factor (every Q copy runs P in
    whole groups)."""
    loop = p.loop
    if loop.parent is None:
        return None
    q, middle = nest.loops[loop.parent], None
    if through:  # Q is P's grandparent; the loop between runs in lockstep in every copy
        middle, pack, wide = q, False, False  # packing and 4 x 32 blocking know a parent Q only
        if q.parent is None or [c.id for c in children[middle.id]] != [loop.id] or static_trips(vf, middle) is None:
            return None
        q = nest.loops[q.parent]
    if [c.id for c in children[q.id]] != [(middle or loop).id]:
        return None
    inner, factor, budget = min(OUTER_INNER, p.factor), OUTER_FACTOR, OUTER_BUDGET
    p_trips, q_trips = static_trips(vf, loop), static_trips(vf, q)
    region = range(q.header, q.latch + 1)
    accesses = [a for a in nest.accesses if _in_region(vf, a.index, region)]
    strided = _strided_loads(vf, accesses, loop, q)
    packs = tuple(pk for pk in (packing.plan(vf, nest, a, loop, q) for a in strided) if pk is not None) \
        if pack else ()
    if len(packs) != len(strided) or not packing.fits(packs):
        packs = ()
    row_packs = _row_lanes(vf, nest, accesses, p, q, p_trips, q_trips) if strided and wide and pack and rows \
        else None
    if row_packs is not None:
        packs, factor, inner, budget = row_packs, ROW_LANES, ROW_INNER, ROW_BUDGET
    elif q_trips == SMALL_Q and _levels_inside(nest, loop) >= SMALL_Q_LEVELS:
        factor, inner = SMALL_Q, min(p.factor, OUTER_FACTOR * OUTER_INNER // SMALL_Q)
        packs = ()
    elif strided and not packs:
        factor, inner = STRIDED_FACTOR, min(p.factor, STRIDED_INNER)
    elif wide and p_trips is not None and p_trips % OUTER_INNER_WIDE == 0 and \
            _region_size(vf, region) * OUTER_INNER_WIDE * factor <= OUTER_BUDGET_WIDE:
        inner = min(OUTER_INNER_WIDE, p.factor)
        budget = OUTER_BUDGET_WIDE
    elif p_trips is not None and p_trips % inner:
        inner = _even_groups(p_trips, inner) or inner  # a 14- or 7-column row: 4 x 14, 4 x 7
    if p_trips is not None and q_trips is not None and factor < q_trips and q_trips * inner <= OUTER_COPIES \
            and q_trips % factor:
        factor = q_trips  # a 7x7 image blocked whole: no rows left over for the remainder
    if p_trips is None or p_trips % inner or (q_trips is not None and q_trips < factor):
        return None
    if not (_plain_header(vf, loop) and _plain_header(vf, q)):
        return None
    if _region_size(vf, region) * inner * factor > budget or not pure_region(vf, region, nest):
        return None
    if any(a.store and not _in_region(vf, a.index, p.region) for a in accesses):
        return None
    step_p, step_q = constant_value(vf, loop.step), constant_value(vf, q.step)
    if not step_p or not step_q:
        return None
    for buf in p.stored:
        element = _only_element(accesses, buf)
        if element is None:
            return None
        cq, cp = constant_value(vf, element.coeff(q.id)), constant_value(vf, element.coeff(loop.id))
        if not cq or not cp:
            return None
        if middle is not None:
            cm, step_m = constant_value(vf, element.coeff(middle.id)), constant_value(vf, middle.step)
            if not cm or not step_m or not _injective([(abs(cq * step_q), q_trips), (abs(cp * step_p), p_trips),
                                                       (abs(cm * step_m), static_trips(vf, middle))]):
                return None
            continue
        # Iteration (i, j) of Q and P stores element base + cq*step_q*i + cp*step_p*j. The
        # blocked order runs a group's P iterations for `factor` iterations of Q before any
        # of their later P iterations: every iteration of the whole nest must store its own
        # element (not only the copies of one group: rows closer than a row's width share
        # elements, and their additions would change order), which holds when one stride
        # spans the other loop's whole range.
        a, b = abs(cq * step_q), abs(cp * step_p)
        if not (a >= p_trips * b or (q_trips is not None and b >= q_trips * a)):
            return None
    if not _no_carried_registers(vf, region, q):
        return None
    renamed, _refs = written_slots(vf, region)
    others = tuple(sorted({a.buffer for a in accesses} - set(p.stored)))
    return OuterJam(q, region, frozenset(renamed), others, factor, inner,
                    jammed_remainder=q_trips is None or q_trips % factor != 0, packs=packs)


def _strided_loads(vf, accesses, p: Loop, q: Loop) -> list:
    """The loads that move with P but not with Q by more than one element per iteration of
    P: each P copy would read its own far-apart stream (see STRIDED_FACTOR)."""
    step = constant_value(vf, p.step)
    out = []
    for a in accesses:
        if a.store or a.element.coeff(q.id) != ZERO or a.element.coeff(p.id) == ZERO:
            continue
        c = constant_value(vf, a.element.coeff(p.id))
        if c is None or step is None or abs(c * step) != 1:
            out.append(a)
    return out


def _row_lanes(vf, nest: Nest, accesses, p: JamPlan, q: Loop, p_trips, q_trips) -> tuple | None:
    """The copies rows in vector lanes need (see ROW_LANES), or None where they do not apply:
    Q runs one group, P whole groups, every load moving with Q but not P can be read from a
    transposed copy, of 4-byte elements, and the stored tile can be kept transposed."""
    if q_trips != ROW_LANES or p_trips is None or p_trips < ROW_MIN_COLUMNS or p_trips % ROW_INNER \
            or p.factor < ROW_INNER:
        return None
    rows = [a for a in accesses if not a.store and a.element.coeff(q.id) != ZERO and a.element.coeff(p.loop.id) == ZERO]
    packs = tuple(pk for pk in (packing.plan(vf, nest, a, p.loop, q, lane=q) for a in rows) if pk is not None)
    if not rows or len(packs) != len(rows) or any(a.width != ROW_WIDTH for a in accesses):
        return None
    tile = packing.tile_plan(vf, nest, accesses, p.loop, q)
    if tile is None or not packing.fits((*packs, tile)):
        return None
    return (*packs, tile)


def _plain_header(vf, loop: Loop) -> bool:
    """The header branches to the next block into the body and to the loop's exit, moving
    no registers on either edge (the register-blocked copy enters and leaves that way)."""
    term = vf.instructions[vf.blocks[loop.header].last]
    return term.op is COND_BR and not term["true_operands"] and not term["false_operands"] and \
        vf.block_of_pc[term["true_dest_pc"]] == loop.header + 1 and vf.block_of_pc[term["false_dest_pc"]] == loop.exit


def _levels_inside(nest: Nest, loop: Loop) -> int:
    """How many loops deep the nest goes inside `loop`."""
    inner = _inside(nest, loop)
    base = _depth(nest, loop)
    return max((_depth(nest, lp) - base for lp in nest.loops if lp.id in inner), default=0)


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


def _check(vf, nest: Nest, loop: Loop, narrow: bool = False) -> JamPlan | None:
    region = range(loop.header, loop.latch + 1)
    if not pure_region(vf, region, nest):
        return None
    inner = _inside(nest, loop)
    accesses = [a for a in nest.accesses if _in_region(vf, a.index, region)]
    stored = {a.buffer for a in accesses if a.store}
    if not stored:
        return None
    spans = []  # per stored buffer: (P's stride, the inner loops' strides' gcd) when the element moves inside
    for buf in stored:
        element = _only_element(accesses, buf)
        if element is None:
            return None
        c = element.coeff(loop.id)
        if c[0] == "reg" and nest.disjoint_stores and loop.parent is None and constant_value(vf, c):
            c = ("const", constant_value(vf, c))  # a chunk over channels: see _CHANNEL_CHUNKS
        if c[0] != "const" or c[1] == 0:
            return None  # must move with P
        if any(element.coeff(i) != ZERO for i in inner):
            # One element through the inner loops, or (a delinearised chunk's nest) elements
            # that no other jammed copy touches: see _disjoint_factor.
            lattice = _inner_lattice(vf, nest, element, inner) if nest.disjoint_stores else None
            if lattice is None:
                return None
            step = constant_value(vf, loop.step)
            if not step:
                return None
            spans.append((abs(c[1] * step), lattice))
    if not _no_carried_registers(vf, region, loop):
        return None
    renamed, _refs = written_slots(vf, region)
    others = tuple(sorted({a.buffer for a in accesses} - stored))
    factor = _factor(vf, loop, region, narrow)
    if nest.jam_factor is not None:
        factor = min(factor, nest.jam_factor)
    for stride, lattice in spans:
        while factor > 1 and (factor - 1) * stride >= lattice:
            factor //= 2
    if factor < 2:
        return None
    then = tuple(f for f in nest.jam_then if 2 <= f < factor)  # each within the lattice, as factor is
    return JamPlan(loop, region, frozenset(renamed), tuple(sorted(stored)), others, factor, then=then)


# _CHANNEL_CHUNKS: a delinearised chunk (lower.loops.delinearise) may walk channels, as IREE
# tiles some depthwise convolutions channel innermost (EfficientNet-Lite0's, from ONNX): its
# accumulator moves by a channel plane per iteration, a stride held in an entry-block
# constant register. Jammed like a chunk over columns (16 chains instead of one; the loads
# stay strided): one thread, CPU time, its 5x5 and 3x3 depthwise convs 1.19-1.40x faster
# (56x56x96x3x3 2.31 -> 1.65 ms), the model 45.8 -> 42.6 ms (load 11). Only the chunk's own
# loop: the same rule on the channel loop inside a chunk over columns slowed the stem's
# 112x112x32 3x3 conv 0.84x.


def _inner_lattice(vf, nest: Nest, element, inner) -> int | None:
    """The gcd of what one step of each inner loop adds to `element` (compile-time
    constants, else None). Copies j < factor of P then store to disjoint sets of elements
    when (factor - 1) * P's stride stays below it: every element is still touched by one
    copy only, in its original order (a depthwise conv's chunk over output columns, each
    column accumulating over channels and the window)."""
    g = 0
    for loop_id in inner:
        coeff = element.coeff(loop_id)
        if coeff == ZERO:
            continue
        c, step = constant_value(vf, coeff), constant_value(vf, nest.loops[loop_id].step)
        if not c or not step:
            return None
        g = math.gcd(g, abs(c * step))
    return g


def _only_element(accesses, buf: int):
    """The one element index every access of `buf` uses, or None if they differ."""
    exprs = {a.element for a in accesses if a.buffer == buf}
    return next(iter(exprs)) if len(exprs) == 1 else None


def _region_size(vf, region: range) -> int:
    """VM instructions in the blocks of `region`."""
    return sum(vf.blocks[b].last - vf.blocks[b].first + 1 for b in region)


def pure_region(vf, region: range, nest: Nest) -> bool:
    """Whether the blocks hold only register arithmetic, branches and proven buffer accesses:
    nothing that can trap, call, or touch other state."""
    proven = {a.index for a in nest.accesses}
    for bi in region:
        block = vf.blocks[bi]
        for idx in range(block.first, block.last + 1):
            ins = vf.instructions[idx]
            if idx not in proven and idx not in nest.pure and ins.op not in _JAMMABLE:
                return False
    return True


def _factor(vf, loop: Loop, region: range, narrow: bool = False) -> int:
    """How many iterations of P run together: FACTOR (NARROW_FACTOR if `narrow`), halved while
    the copies would exceed COPY_BUDGET instructions (compile time grows with them); when P's trip count is known,
    whole groups that cover it exactly (see _even_groups), else at most the largest power of
    two within it (a tile of 16 columns runs as one group of 16 rather than entirely in the
    remainder loop).

    FACTOR 64 keeps four 16-wide vector accumulators in flight: measured single-threaded
    against 16 (one AVX-512 chain bound by the FMA latency), MLP 6.2 -> 2.2 ms, matmul 512
    10.6 -> 5.3 ms, 1x1 conv 4.0 -> 2.2 ms, 3x3 conv 4.3 -> 2.9 ms, ResNet-50-style 64x64
    36 -> 19 ms. The budget keeps compile time in check where regions are large; with it
    every ResNet kernel gets 64 and its executables compile in 10.4 s of CPU (7.8 s at 16)."""
    size = _region_size(vf, region)
    factor = NARROW_FACTOR if narrow else FACTOR
    while factor > MIN_FACTOR and factor * size > COPY_BUDGET:
        factor //= 2
    trips = static_trips(vf, loop)
    even = _even_groups(trips, factor) if trips is not None else None
    if even is not None:
        return even
    while trips is not None and factor > 2 and factor > trips:
        factor //= 2
    return factor


# The fewest groups of at most `factor` iterations that cover a known trip count exactly,
# each at least this long. NCHW convolutions (ONNX exports) jam the output row, 7, 14, 28
# or 56 columns: as powers of two, 4 + 3, 8 + 6 or 16 + 12 of them ran in the scalar
# remainder loop, and a row that is no multiple of 16 was never register-blocked. One
# thread, CPU time, bit-identical: ResNet-50 (ONNX zoo) 3x3 conv 256x14x14x256 76.9 ->
# 7.3 ms, 512x7x7x512 66.4 -> 15.5 ms; EfficientNet-Lite0's 1x1 conv 1152x7x7x192 3.8 ->
# 1.0 ms; whole models 1663 -> 417 ms and 108 -> 58 ms (load 8-14).
EVEN_MIN = 3
EVEN_MAX_GROUPS = 4  # longer loops keep powers of two: their remainder is a small part


def _even_groups(trips: int, factor: int) -> int | None:
    """The group size when `trips` splits into at most EVEN_MAX_GROUPS equal groups of
    EVEN_MIN..factor iterations (the fewest groups), else None (powers of two then, and a
    remainder loop)."""
    if trips <= factor:
        return trips if trips >= EVEN_MIN else None
    for groups in range(-(-trips // factor), min(EVEN_MAX_GROUPS, trips // EVEN_MIN) + 1):
        if trips % groups == 0:
            return trips // groups
    return None


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

def ranges_apart(e, region: range, stored, others, nest, ranges):
    """i1: the bytes P's stores can reach lie apart from the bytes of every other buffer P
    accesses, and of every other stored buffer (so the jammed order of stores and loads
    reads what the original order reads). Uses the guard's per-access element ranges, so
    buffers that are views of one allocation (IREE's transient arena) qualify when the
    parts the nest touches do not overlap. Emitted with the guard; meaningful when it holds.
    """
    b = e.b
    stored = tuple(stored)
    region = {a.index for a in nest.accesses if _in_region(e.vf, a.index, region)}
    spans = {}  # buffer register -> (first byte address, end byte address) of what P touches
    for reg in (*stored, *others):
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
    for s in stored:
        for o in (*stored, *others):
            if o == s or (o in stored and o < s):
                continue
            (s_lo, s_hi), (o_lo, o_hi) = spans[s], spans[o]
            apart = b.or_(b.icmp_unsigned("<=", s_hi, o_lo), b.icmp_unsigned("<=", o_hi, s_lo))
            ok = b.and_(ok, apart)
    return ok


def emit(e, plan: JamPlan, jam_header, rem_header, apart) -> None:
    """Lowers P's region jammed: `jam_header` runs FACTOR iterations at once while that many
    remain and the buffers are `apart` (an i1 from the guard), then hands the rest to
    `rem_header` (P's ordinary, unchecked loop)."""
    loop, u, fn = plan.loop, plan.factor, e.fn
    blocks = {i: fn.append_basic_block(f"bb{i}_jammed") for i in plan.region if i != loop.header}
    e.b.position_at_end(jam_header)
    e.copy, e.renamed = None, plan.renamed
    ev = InvariantEval(e)
    start, step = _group_start(e, ev, loop, u, apart, f"bb{loop.header}_jam_entry", rem_header)
    _spread_iv(e, loop, start, step, u, lambda k: k)  # copy k starts at iv + k * step
    e.b.branch(blocks[loop.header + 1])
    sharing = CopySharing(e, blocks, {loop.header: (P_LANE, loop.iv, loop.header + 1, None)}, loop.header, u, 1,
                          e.mod.steps.share_copies)
    _lower_copies(e, blocks, u, lambda t: jam_header if t == loop.header else blocks[t], sharing)
    e.copy, e.renamed, e.jam_copy, e.jam_lanes, e.jam_index = None, frozenset(), None, {}, None


def emit_outer(e, plan: JamPlan, q_header, q_rem_header, apart) -> None:
    """Lowers Q's region register-blocked (see OuterJam): `q_header` runs the factor x inner
    copies while factor iterations of Q remain and the buffers are `apart`, else hands over
    to `q_rem_header` (Q's plain loop, with P jammed alone). Copy k is iteration k % factor
    of Q's group and k // factor of P's (P-major: how SLP packs them)."""
    b, fn = e.b, e.fn
    outer, p = plan.outer, plan.loop
    q, n, factor = outer.loop, outer.copies, outer.factor
    blocks = {i: fn.append_basic_block(f"bb{i}_blocked") for i in outer.region if i not in (q.header, p.header)}
    p_header = fn.append_basic_block(f"bb{p.header}_blocked")

    def target(t):
        return q_header if t == q.header else p_header if t == p.header else blocks[t]

    b.position_at_end(q_header)
    e.copy, e.renamed = None, outer.renamed
    ev = InvariantEval(e)
    p_bound, p_step = ev.expr(p.bound), ev.expr(p.step)  # invariant: evaluated once, here
    handover = q_rem_header
    if any(isinstance(pk, packing.TilePlan) for pk in outer.packs):  # the tile goes back on the way out
        handover = fn.append_basic_block(f"bb{q.header}_blocked_exit")
        back = fn.append_basic_block(f"bb{q.header}_copy_back")
        b.position_at_end(handover)
        b.cbranch(apart, back, q_rem_header)
        b.position_at_end(back)
        packing.copy_back(e, outer.packs, e.repacked)
        b.branch(q_rem_header)
        b.position_at_end(q_header)
    start, step = _group_start(e, ev, q, factor, apart, f"bb{q.header}_blocked_entry", handover)
    _spread_iv(e, q, start, step, n, lambda k: k % factor)
    b.branch(target(q.header + 1))

    # P's header: a whole group of P left, or P is done (its trip count is a multiple of inner).
    b.position_at_end(p_header)
    p_start = e.get(Reg("i64", p.iv, False, p.iv), "i64")
    p_entry = fn.append_basic_block(f"bb{p.header}_blocked_entry")
    b.cbranch(b.icmp_signed("<", p_start, p_bound), p_entry, target(p.exit))
    b.position_at_end(p_entry)
    _spread_iv(e, p, p_start, p_step, n, lambda k: k // factor)
    b.branch(target(p.header + 1))

    headers = {q.header: (Q_LANE, q.iv, q.header + 1, None), p.header: (P_LANE, p.iv, p.header + 1, p.exit)}
    sharing = CopySharing(e, blocks, headers, q.header, n, factor, e.mod.steps.share_copies)
    _lower_copies(e, blocks, n, target, sharing)
    e.copy, e.renamed, e.jam_copy, e.jam_lanes, e.jam_index = None, frozenset(), None, {}, None


def _group_start(e, ev, loop: Loop, count: int, apart, entry_name: str, otherwise):
    """At a jammed loop's header: branches to a new entry block (left positioned there) when
    `count` iterations remain and the buffers are `apart`, else to `otherwise`. Returns the
    group's first induction value and the step."""
    b = e.b
    start = e.get(Reg("i64", loop.iv, False, loop.iv), "i64")
    bound, step = ev.expr(loop.bound), ev.expr(loop.step)
    span = ev.mul(step, const(I64, count - 1))
    runs = b.icmp_signed("<", start, bound)
    enough = b.and_(b.and_(b.and_(runs, ev.ok), b.icmp_unsigned(">", b.sub(bound, start), span)), apart)
    entry = e.fn.append_basic_block(entry_name)
    b.cbranch(enough, entry, otherwise)
    b.position_at_end(entry)
    return start, step


def _spread_iv(e, loop: Loop, start, step, n: int, lane) -> None:
    """Copy k's induction variable of `loop` is start + lane(k) * step; the real registers
    are the last copy (so they carry the group's position to the latch)."""
    iv = Reg("i64", loop.iv, False, loop.iv)
    for k in range(n):
        e.copy = None if k == n - 1 else k
        e.set(iv, e.b.add(start, e.b.mul(step, const(I64, lane(k)))), "i64")
    e.copy = None
    e.jam_lanes[loop.id] = (lane, step)


def _lower_copies(e, blocks: dict, n: int, target, sharing) -> None:
    """Every block of `blocks` (VM block index -> LLVM block) lowered for `n` copies in
    lockstep, instruction by instruction and move by move, each by the copies that hold its
    result (lower.loops.sharing; the last copy is the real registers); branches to
    `target(VM block index)`. A cond_br is an inner loop's header: every copy decides
    alike, copy 0 speaks."""
    vf, b, fn = e.vf, e.b, e.fn

    def copies():
        # Highest first: a copy reads what its holder (a lower copy) held before the step,
        # even where the step makes the holder's register hold another value.
        for k in reversed(range(n)):
            e.copy = None if k == n - 1 else k
            e.jam_copy = k
            yield k
        e.copy, e.jam_copy = None, None

    def adopt(key, regs):
        """The real registers take the holder's result of step `key` (after every copy)."""
        holder = sharing.def_holder(n - 1, key)
        for reg in regs:
            e.copy = holder  # the holder's own file, as it stands after the step
            value = e.get(reg)
            e.copy = None
            e.set(reg, value)

    def remap(term_idx, side, pairs):
        for j, move in enumerate(remap_moves(pairs)):
            sharing.now = key = ("move", term_idx, side, j)
            for k in copies():
                if sharing.runs(k, key):
                    apply_move(e, *move)
            if not sharing.runs(n - 1, key):
                kind, _, dst = move
                adopt(key, [Reg("i64", dst.index, False, dst.index) if kind == "i64" else dst])

    e.sharing = sharing
    for i in sorted(blocks):
        block = vf.blocks[i]
        b.position_at_end(blocks[i])
        for idx in range(block.first, block.last):
            sharing.now = idx
            for k in copies():
                if sharing.runs(k, idx):
                    e.lower_instructions((idx,))
            if not sharing.runs(n - 1, idx):
                adopt(idx, _results(vf.instructions[idx]))
        term = vf.instructions[block.last]
        e.pc = term.pc
        if term.op is BR:
            remap(block.last, "", term["operands"])
            dest = vf.block_of_pc[term["dest_pc"]]
            br = b.branch(target(dest))
            if dest in blocks and dest <= i:
                unrolling = _unroll_property(e, dest)
                if unrolling:
                    br.set_metadata("llvm.loop", e.mod.module.loop_node(unrolling))
        else:
            sharing.now = ("cond", block.last)
            e.copy = 0 if n > 1 else None
            condition = e.i32(term["condition"])
            cond = b.icmp_unsigned("!=", condition, const(condition.type, 0))
            e.copy = None
            edges = []
            for side in ("true", "false"):
                dest = target(vf.block_of_pc[term[f"{side}_dest_pc"]])
                pairs = term[f"{side}_operands"]
                if pairs:
                    edge = fn.append_basic_block(f"bb{i}_jammed_{side}")
                    here = b.block
                    b.position_at_end(edge)
                    remap(block.last, side, pairs)
                    b.branch(dest)
                    b.position_at_end(here)
                    dest = edge
                edges.append(dest)
            b.cbranch(cond, edges[0], edges[1])
    e.sharing = None


def _results(ins) -> list:
    """The registers an instruction writes (a shareable one: its one result)."""
    return [value for f, value in zip(ins.op.fields, ins.args) if f.kind == isa.REG and f.out]


# Inner loops of a jammed region with fewer iterations than this are not unrolled: LLVM
# unrolls them by 2 once the copies share their values, and the remainder handling on
# every entry costs more than it saves (ResNet's 3x3 convs over 64-256 channels, one thread:
# 56x56x64 4.09 -> 3.57 ms, 4x4x256 3.65 -> 3.04 ms), while 512-long reductions gain from it
# (4x2048x512 1.15 -> 0.52 ms). Loops whose trip count is known only at run time are not
# unrolled at run time either: since the copies derive their indices from each other
# (guard.proven_index) their bodies are small enough for LLVM to unroll a convolution's
# window loops by 2, and ResNet-50-style's 3x3 convs slowed 7-15%.
UNROLL_MIN_TRIPS = 512


def _unroll_property(e, header: int) -> str | None:
    """The unrolling property of the inner loop with this VM header block, if any."""
    for loop in e.nest_loops.values():
        if loop.header == header:
            trips = static_trips(e.vf, loop)
            if trips is None:
                return '!"llvm.loop.unroll.runtime.disable"'
            return '!"llvm.loop.unroll.disable"' if trips < UNROLL_MIN_TRIPS else None
    return None
