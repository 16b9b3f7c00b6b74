"""A transposed copy of a register-blocked matmul's right-hand side, read by the blocked copies.

When a matmul's right-hand side arrives transposed (B[n, k]: nn.Linear weights as ONNX
exports hand them over), the blocked loop's P copies (columns) each read their own row of
B, far apart: no vector load serves them, and LLVM runs the nest scalar (jam.STRIDED_FACTOR).
When the nest's root loop is Q and such a load moves only with P and with one loop R inside
P, contiguously (B[b + c*p + r]), the fast copy first copies the whole footprint it reads,
T_P x T_R elements, into a stack buffer laid out [r][p], and the blocked copies read
S[r*T_P + p] instead: consecutive columns are consecutive elements, and the blocking is the
ordinary one (4 x 16, or 4 x 32 with 512-bit vectors).

The same values are read (a copy of bits, in a nest whose stores the guard proved apart from
B's bytes: nothing the nest stores can change them), in the same order of operations, so
results stay bit-identical. The copy runs only where the blocked copies may run (the buffers
are apart and Q runs at all, so every element copied is one the guard proved in range); the
remainder copies read B itself. Taken only for constant extents starting at 0 with step 1
and at most PACK_BYTES of copy.

Measured on qmatmul_int8's 16x2048x2048 matmul (B[n, k], 32 workgroups of 16 x 64 outputs,
a 512 KB copy each), one thread, CPU time: see jam.OuterJam.packs.

Where Q's rows fill whole vectors (jam.ROW_LANES) the rows run in the lanes instead: the load
copied is the left-hand side (moving with Q and R, not P: A[m, k] -> S[k*T_Q + m]), B is read
in place, and the stored tile is kept transposed in the same stack buffer while the blocked
copies run (TilePlan: S[p*T_Q + q], copied in with the other copies, back when the blocked
loop hands over). That tile is what makes LLVM's SLP vectorizer pack the copies by rows: it
seeds on the stores of the accumulators after the reduction, which in the output's own layout
are consecutive along P. A copy over Q's range assumes Q starts at 0 (Q is the nest's root,
whose start is a register): checked here, at run time, with the other conditions of the
blocked copies, which run only when it holds.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...frontend.decode import Reg
from ...runtime.native import ir
from ..emit.types import I8, I64, const, opaque_alloca
from .analysis import ONE, ZERO, Access, Affine, Loop, Nest, constant_value, static_trips
from .guard import InvariantEval

# The copies of a nest together at most: a stack buffer in the dispatch function's frame, shared
# by its nests (they run one after another).
PACK_BYTES = 512 * 1024
# Extents that are multiples of TILE are copied TILE x TILE elements at a time: TILE vector
# loads, a transpose by shuffles (log2(TILE) rounds), TILE vector stores. Element by element,
# LLVM gathers: qmatmul_int8's matmul took 5.4 ms a dispatch that way, 2.7 ms tiled (load 6-7).
TILE = 16


@dataclass(frozen=True)
class PackPlan:
    """A load read from a transposed copy of its P x R footprint (here for register-blocked
    nests, in lower.loops.stage for plain jams)."""

    access: Access  # the load, as the nest has it
    packed: Access  # the same load from the copy: element r * p_trips + p
    p: Loop
    r: Loop
    p_trips: int
    r_trips: int

    @property
    def elements(self) -> int:
        return self.p_trips * self.r_trips

    @property
    def bytes(self) -> int:
        return copy_bytes(self)


@dataclass(frozen=True)
class TilePlan:
    """The stored buffer's tile, kept transposed in the copy while the blocked copies run
    (rows in vector lanes): element p * q_trips + q of the copy is element
    `element`(q, p) of the buffer; copied in on the way into the nest, back on the way out."""

    accesses: tuple  # every access of the stored buffer in Q's region (one element index)
    element: Affine
    q: Loop
    p: Loop
    q_trips: int
    p_trips: int

    @property
    def access(self) -> Access:
        return self.accesses[0]

    @property
    def elements(self) -> int:
        return self.q_trips * self.p_trips

    @property
    def packed(self) -> Affine:
        return Affine(tuple(sorted(((self.q.id, ONE), (self.p.id, ("const", self.q_trips))))), ZERO)

    @property
    def bytes(self) -> int:
        return copy_bytes(self)


def copy_bytes(plan) -> int:
    """A plan's copy size, rounded up to 64 bytes (copies placed one after another stay aligned)."""
    return -(-plan.elements * plan.access.width // 64) * 64


def tile_plan(vf, nest: Nest, accesses, p: Loop, q: Loop) -> TilePlan | None:
    """How to keep the one stored buffer's Q x P tile transposed, or None."""
    stored = [a for a in accesses if a.store]
    if not stored or q.parent is not None or q.id != nest.root.id:
        return None
    buf = stored[0].buffer
    mine = tuple(a for a in accesses if a.buffer == buf)
    if any(a.store and a.buffer != buf for a in accesses) or len({a.element for a in mine}) != 1:
        return None
    element = mine[0].element
    if set(dict(element.terms)) - {q.id, p.id} or any(constant_value(vf, c) is None for _, c in element.terms):
        return None
    # Every access runs in every iteration of the loops inside P (a constant, non-zero count
    # of them), so the guard checked the whole tile's range: copying it in and out is safe.
    for a in mine:
        for loop_id in a.loops:
            if loop_id not in (q.id, p.id) and not static_trips(vf, nest.loops[loop_id]):
                return None
    if constant_value(vf, p.start) != 0 or constant_value(vf, p.step) != 1 or constant_value(vf, q.step) != 1:
        return None
    q_trips, p_trips = static_trips(vf, q), static_trips(vf, p)
    if not q_trips or not p_trips:
        return None
    return TilePlan(mine, element, q, p, q_trips, p_trips)


def plan(vf, nest: Nest, access: Access, p: Loop, q: Loop, lane: Loop | None = None) -> PackPlan | None:
    """How to pack `access` (a load moving with `lane`, P unless given, and R inside P,
    not with the other of Q and P), or None if it does not qualify."""
    if access.store or q.parent is not None or q.id != nest.root.id:
        return None
    lane = lane or p
    terms = dict(access.element.terms)
    if lane.id not in terms or len(terms) != 2:
        return None
    (r_id,) = set(terms) - {lane.id}
    r = nest.loops[r_id]
    if r.parent != p.id or access.loops != (q.id, p.id, r.id):
        return None
    if constant_value(vf, terms[r_id]) != 1 or constant_value(vf, terms[lane.id]) is None:
        return None
    p = lane
    for loop in (p, r):
        start = 0 if loop is q else constant_value(vf, loop.start)  # the root's: checked by emit
        if start != 0 or constant_value(vf, loop.step) != 1:
            return None
    p_trips, r_trips = static_trips(vf, p), static_trips(vf, r)
    if not p_trips or not r_trips or p_trips * r_trips * access.width > PACK_BYTES:
        return None
    packed = Affine(tuple(sorted(((p.id, ONE), (r.id, ("const", p_trips))))), ZERO)
    return PackPlan(access, replace(access, element=packed), p, r, p_trips, r_trips)


def emit(e, packs, q: Loop, apart):
    """At the builder's position, on the fast copy's way into the nest: when the buffers are
    `apart` and Q runs, each load's footprint copied to its stack buffer. Returns the i1
    under which the copies were made (the blocked copies run only then) and, per packed load's
    instruction index, (buffer pointer, packed Access) for the lowering (e.repacked)."""
    b = e.b
    ev = InvariantEval(e, proven=True)
    start = e.get(Reg("i64", q.iv, False, q.iv), "i64")
    done = b.and_(apart, b.icmp_signed("<", start, ev.expr(q.bound)))
    if any(isinstance(pk, TilePlan) or pk.p.id == q.id for pk in packs):  # copies over Q's range: from 0
        done = b.and_(done, b.icmp_signed("==", start, const(I64, 0)))
    buffer, offset, repacked = stack_buffer(e, _bytes(packs)), 0, {}
    for pk in packs:  # each copy's place in the buffer (here: the blocked copies use them)
        where = b.gep(buffer, [const(I64, offset)], source_etype=I8, inbounds=True)
        if isinstance(pk, TilePlan):
            for a in pk.accesses:
                repacked[a.index] = (where, replace(a, element=pk.packed))
        else:
            repacked[pk.access.index] = (where, pk.packed)
        offset += _bytes([pk])
    copy = e.fn.append_basic_block(f"bb{q.header}_pack")
    after = e.fn.append_basic_block(f"bb{q.header}_packed")
    b.cbranch(done, copy, after)
    b.position_at_end(copy)
    for pk in packs:
        elem = ir.IntType(8 * pk.access.width)
        scratch = repacked[pk.access.index][0]
        source = e.buffer_field(Reg("ref", pk.access.buffer, False, pk.access.buffer), "data")
        if isinstance(pk, TilePlan):
            _copy_tile(e, source, scratch, elem, pk, ev, back=False)
            continue
        base = ev.expr(pk.access.element.b)
        stride = ev.expr(pk.access.element.coeff(pk.p.id))
        tiled = pk.p_trips % TILE == 0 and pk.r_trips % TILE == 0
        (copy_tiles if tiled else copy_transposed)(e, source, base, stride, scratch, elem, pk)
    b.branch(after)
    b.position_at_end(after)
    return done, repacked


def stack_buffer(e, size: int):
    """A stack buffer of the function of at least `size` bytes (64-byte aligned), shared by
    its nests: made again only when a nest needs more than the last one made. The function
    probes its stack page by page (a frame this large must not step over a thread's guard
    page: a stack too small faults there instead)."""
    buffers = e.mod.pack_buffers
    made = buffers.get(e.fn.name)
    e.fn.attributes.add('"probe-stack"="inline-asm"')
    if made is None or made[1] < size:
        made = buffers[e.fn.name] = (opaque_alloca(e.entry_builder(), ir.ArrayType(I8, size), "pack_buffer", 64), size)
    return made[0]


def _bytes(packs) -> int:
    return sum(pk.bytes for pk in packs)


def fits(packs) -> bool:
    """Whether the copies of one nest fit PACK_BYTES together."""
    return _bytes(packs) <= PACK_BYTES


def _counted(e, name: str, count: int, step: int, body) -> None:
    """for i = 0; i < count; i += step: body(i), at the builder's position (count a positive
    multiple of step); the builder is left after the loop. `body` may open blocks of its own."""
    b = e.b
    entry = b.block
    head, done = e.fn.append_basic_block(name), e.fn.append_basic_block(f"{name}_done")
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64)
    i.add_incoming(const(I64, 0), entry)
    body(i)
    after = b.add(i, const(I64, step), flags=["nsw", "nuw"])
    i.add_incoming(after, b.block)
    b.cbranch(b.icmp_signed("<", after, const(I64, count)), head, done)
    b.position_at_end(done)


def copy_back(e, packs, repacked) -> None:
    """At the builder's position, on the blocked copies' way out (they ran): each kept tile
    copied back to its buffer."""
    ev = InvariantEval(e, proven=True)
    for pk in packs:
        if isinstance(pk, TilePlan):
            target = e.buffer_field(Reg("ref", pk.access.buffer, False, pk.access.buffer), "data")
            _copy_tile(e, target, repacked[pk.access.index][0], ir.IntType(8 * pk.access.width), pk, ev, back=True)


def _copy_tile(e, data, scratch, elem, pk: TilePlan, ev, back: bool) -> None:
    """scratch[p * q_trips + q] = data[element(q, p)] for every q, p (or back)."""
    b = e.b
    width = const(I64, pk.access.width)
    base = ev.expr(pk.element.b)
    cq, cp = ev.expr(pk.element.coeff(pk.q.id)), ev.expr(pk.element.coeff(pk.p.id))

    def column(p):
        start = b.add(base, b.mul(cp, p, flags=["nsw"]), flags=["nsw"])
        out = b.mul(p, const(I64, pk.q_trips), flags=["nsw", "nuw"])

        def element(q):
            there = b.gep(data, [b.mul(b.add(start, b.mul(cq, q, flags=["nsw"]), flags=["nsw"]), width,
                                       flags=["nsw", "nuw"])], source_etype=I8, inbounds=True)
            here = b.gep(scratch, [b.add(out, q, flags=["nsw", "nuw"])], source_etype=elem, inbounds=True)
            src, dst = (here, there) if back else (there, here)
            value = b.load(src, typ=elem)
            value.align = pk.access.width
            b.store(value, dst).align = pk.access.width

        _counted(e, "tile_q", pk.q_trips, 1, element)

    _counted(e, "tile_p", pk.p_trips, 1, column)


def copy_transposed(e, source, base, stride, scratch, elem, pk: PackPlan) -> None:
    """scratch[r * p_trips + p] = source[base + stride * p + r] for every p, r: r outer, p inner
    (the stores contiguous)."""
    b = e.b
    width = const(I64, pk.access.width)

    def row(r):
        start = b.add(base, r, flags=["nsw"])
        out_row = b.mul(r, const(I64, pk.p_trips), flags=["nsw", "nuw"])

        def element(p):
            src = b.add(start, b.mul(stride, p, flags=["nsw"]), flags=["nsw"])
            value = b.load(b.gep(source, [b.mul(src, width, flags=["nsw", "nuw"])], source_etype=I8, inbounds=True),
                           typ=elem)
            value.align = pk.access.width
            st = b.store(value, b.gep(scratch, [b.add(out_row, p, flags=["nsw", "nuw"])], source_etype=elem,
                                      inbounds=True))
            st.align = pk.access.width

        _counted(e, "pack_p", pk.p_trips, 1, element)

    _counted(e, "pack_r", pk.r_trips, 1, row)


def copy_tiles(e, source, base, stride, scratch, elem, pk: PackPlan) -> None:
    """The same copy, TILE x TILE elements at a time (both extents multiples of TILE): row
    p0 + i of a tile is source[base + stride * (p0 + i) + r0 ...], transposed in registers by
    swapping off-diagonal blocks of 8, 4, 2 and 1 lanes, stored as rows r0 + i of the copy."""
    b = e.b
    vec = ir.VectorType(elem, TILE)
    width = const(I64, pk.access.width)

    def tile(p0, r0):
        rows = []
        for i in range(TILE):
            src = b.add(b.add(base, r0, flags=["nsw"]), b.mul(stride, b.add(p0, const(I64, i), flags=["nsw", "nuw"]),
                                                              flags=["nsw"]), flags=["nsw"])
            row = b.load(b.gep(source, [b.mul(src, width, flags=["nsw", "nuw"])], source_etype=I8, inbounds=True),
                         typ=vec)
            row.align = pk.access.width
            rows.append(row)
        block = TILE // 2
        while block:
            low = [c if not c & block else TILE + c - block for c in range(TILE)]
            high = [c + block if not c & block else TILE + c for c in range(TILE)]
            for i in range(TILE):
                if not i & block:
                    j = i + block
                    rows[i], rows[j] = b.shuffle_vector(rows[i], rows[j], low), b.shuffle_vector(rows[i], rows[j], high)
            block //= 2
        for i in range(TILE):
            dst = b.add(b.mul(b.add(r0, const(I64, i), flags=["nsw", "nuw"]), const(I64, pk.p_trips),
                              flags=["nsw", "nuw"]), p0, flags=["nsw", "nuw"])
            st = b.store(rows[i], b.gep(scratch, [dst], source_etype=elem, inbounds=True))
            st.align = pk.access.width

    _counted(e, "pack_tile_p", pk.p_trips, TILE, lambda p0: _counted(e, "pack_tile_r", pk.r_trips, TILE,
                                                                      lambda r0: tile(p0, r0)))
