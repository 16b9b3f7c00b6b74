"""Splitting a nest's outermost loop across threads, for dispatches with one workgroup.

IREE's VMVX code often runs a whole convolution in a single workgroup; the grid gives the
thread pool nothing to split. The outermost loop R of such a nest (over output rows) is
parallel when its iterations are independent, and this module decides when that is
provably so; the lowering then emits R's region as a function of its own, running
iterations [lo, hi), and the guarded fast copy hands R's iteration space to the pool.

R qualifies when, besides what the fast copy already has (every access proven in range):
- R's region contains nothing that can trap, call or touch state other than registers and
  proven buffer accesses (the same families as lower.loops.jam), and no ref register is written;
- no register carries a value from one iteration of R to the next (R's induction variable
  excepted), and no register R writes is read after R before being written again;
- every buffer R stores to is accessed at indices c * iv_R + rest, one invariant c for all
  its accesses and one element width, so that an iteration's footprint is
  [c * iv_R + min rest, c * iv_R + max rest]; the guard checks at run time that footprints
  of different iterations (c * step apart) cannot meet, and that the bytes R stores to lie
  apart from every other buffer it accesses.
Then every iteration reads and writes what it would in the serial order, whatever the
order in which threads run them, and results are bit-identical.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from ...frontend import isa
from ...frontend.decode import Reg
from ...runtime.native import ir
from ..emit.effects import remap_moves, written_slots
from ..emit.types import BANK_TYPE, FN_TYPE, I1, I8, I32, I64, PTR, const, offset_of, opaque_alloca
from .analysis import BR, ZERO, Loop, Nest, entry_constants, innermost_paths, static_trips, successors
from .copies import lower_nest_copy
from .guard import InvariantEval
from .jam import _in_region, _no_carried_registers, pure_region, ranges_apart


@dataclass(frozen=True)
class ParallelPlan:
    root: Loop
    region: range
    stored: dict  # buffer register -> (coefficient of iv_R: invariant expression, element width)
    others: tuple[int, ...]  # the other buffer registers the region accesses
    live_in: tuple[tuple[int, str], ...]  # (register, bank) the region reads (copied to the threads)
    constants: dict  # (register, bank) -> value: live-ins set once, by a constant in the entry block
    refs: tuple[int, ...]  # ref registers the region reads


def plan(vf, nest: Nest, jammed_loop: Loop | None) -> ParallelPlan | None:
    root = nest.root
    if jammed_loop is not None and jammed_loop.id == root.id:
        return None  # R runs jammed instead
    region = range(root.header, root.latch + 1)
    header_end = vf.instructions[vf.blocks[root.header].last]
    if header_end["false_operands"]:
        return None
    if not pure_region(vf, region, nest):
        return None
    if _static_volume(vf, nest) < STATIC_MIN_WORK:
        return None  # never worth splitting: no second copy of the nest to compile
    written, written_refs = written_slots(vf, region)
    if written_refs:
        return None
    accesses = [a for a in nest.accesses if _in_region(vf, a.index, region)]
    stored = {}
    for buf in sorted({a.buffer for a in accesses if a.store}):
        mine = [a for a in accesses if a.buffer == buf]
        coeffs = {a.element.coeff(root.id) for a in mine}
        widths = {a.width for a in mine}
        if len(coeffs) != 1 or len(widths) != 1:
            return None
        (c,), (w,) = coeffs, widths
        if c == ZERO:
            return None
        stored[buf] = (c, w)
    if not stored:
        return None
    if not _no_carried_registers(vf, region, root):
        return None
    if written & live_at(vf, root.exit):
        return None
    refs = read_refs(vf, region)
    others = tuple(sorted({a.buffer for a in accesses} - set(stored)))
    live_in = tuple(sorted(typed_reads(vf, region)))
    known = entry_constants(vf) if root.header != 0 else {}
    constants = {(r, bank): known[r][1] for r, bank in live_in if r in known and known[r][0] == bank}
    return ParallelPlan(root, region, stored, others, live_in, constants, tuple(sorted(refs)))


# Nests whose constant loop bounds hold fewer innermost iterations than this get no split
# copy (compile time: ResNet-50's executables have about a hundred qualifying nests). The
# run-time threshold is the pool's split_min_work (runtime.exec.workers.SPLIT_MIN_WORK).
STATIC_MIN_WORK = 1 << 22


def _static_volume(vf, nest: Nest) -> float:
    """The largest innermost iteration count the nest can have, from bounds that are
    constants or entry-block constant registers (loops.static_trips; anything else counts
    as unbounded)."""
    def trips(loop: Loop) -> float:
        n = static_trips(vf, loop)
        return float("inf") if n is None else n

    volume = 0.0
    for path in innermost_paths(nest):
        v = 1.0
        for loop in path:
            v *= trips(loop)
        volume = max(volume, v)
    return volume


# --- register reads and liveness -------------------------------------------------------------

def _slots(reg) -> list[int]:
    if reg.bank in ("i64", "f64"):
        return [reg.index, reg.index + 1]
    if reg.bank in ("i32", "f32"):
        return [reg.index]
    return [reg.index, reg.index + 1]  # "any" operand lists: either width


def _reads_writes(ins):
    """(i32 slots read, i32 slots surely written, refs read) by one instruction. Edge
    remaps of a conditional branch or a switch count as reads only (they write on one edge)."""
    reads: list[int] = []
    writes: list[int] = []
    refs: list[int] = []
    single_edge = ins.op is BR
    for f, value in zip(ins.op.fields, ins.args):
        if f.kind == isa.REG:
            if value.is_ref:
                if not f.out:
                    refs.append(value.index)
            elif f.out:
                writes += _slots(value)
            else:
                reads += _slots(value)
        elif f.kind == isa.REGS:
            for r in value:
                if r.is_ref:
                    if not f.out:
                        refs.append(r.index)
                elif not f.out:
                    reads += _slots(r)
        elif f.kind == isa.REMAP:
            for src, dst in value:
                if src.is_ref:
                    refs.append(src.index)
                    continue
                reads.append(src.index)
                if single_edge:
                    writes.append(dst.index)
        elif f.kind == isa.CASES:
            for _, pairs in value:
                for src, _dst in pairs:
                    (refs if src.is_ref else reads).append(src.index)
    return reads, writes, refs


def read_slots(vf, blocks) -> set[int]:
    """Every i32 slot read anywhere in `blocks`."""
    return {s for bi in blocks for idx in range(vf.blocks[bi].first, vf.blocks[bi].last + 1)
            for s in _reads_writes(vf.instructions[idx])[0]}


def read_refs(vf, blocks) -> set[int]:
    """Every ref register read anywhere in `blocks`."""
    refs: set[int] = set()
    for bi in blocks:
        block = vf.blocks[bi]
        for idx in range(block.first, block.last + 1):
            refs.update(_reads_writes(vf.instructions[idx])[2])
    return refs


_LIVE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # function -> live slots per block


def typed_reads(vf, blocks) -> set[tuple[int, str]]:
    """(register, bank) of every non-ref register read in `blocks`, in the type the lowering
    reads it (remap lists as effects.remap_moves pairs them):
    copying registers in their own types keeps LLVM's view of each register whole."""
    out: set[tuple[int, str]] = set()
    for bi in blocks:
        block = vf.blocks[bi]
        for idx in range(block.first, block.last + 1):
            ins = vf.instructions[idx]
            for f, value in zip(ins.op.fields, ins.args):
                if f.kind == isa.REG and not f.out and not value.is_ref:
                    out.add((value.index, value.bank))
                elif f.kind == isa.REMAP:
                    out.update((src.index, kind) for kind, src, _dst in remap_moves(value) if kind != "ref")
    return out


def live_at(vf, block_index: int) -> set[int]:
    """The i32 slots some path from the start of the block reads before writing them."""
    cached = _LIVE.get(vf)
    if cached is None:
        use, define = [], []
        for block in vf.blocks:
            u: set[int] = set()
            d: set[int] = set()
            for idx in range(block.first, block.last + 1):
                reads, writes, _ = _reads_writes(vf.instructions[idx])
                u.update(s for s in reads if s not in d)
                d.update(writes)
            use.append(u)
            define.append(d)
        succ = [successors(vf, block) for block in vf.blocks]
        live = [set(u) for u in use]
        changed = True
        while changed:
            changed = False
            for i in reversed(range(len(vf.blocks))):
                out = set().union(*(live[s] for s in succ[i])) if succ[i] else set()
                new = use[i] | (out - define[i])
                if new != live[i]:
                    live[i] = new
                    changed = True
        cached = _LIVE[vf] = live
    return cached[block_index]



# --- lowering -------------------------------------------------------------------------------------

SPLIT_FN = "jv_parallel_for"  # runtime.exec.workers: runs body(state, [lo, hi], env, trap) over chunks


def guard(e, split: ParallelPlan, nest: Nest, ranges, rest, boxes):
    """i1, emitted with the nest's guard: the invocation has an idle pool, the root loop runs
    at least twice, iterations' footprints in every stored buffer lie apart (at most
    |c * step| elements wide), and stored bytes lie apart from every other buffer's."""
    b = e.b
    root = split.root
    runs, start, last, _ = boxes[root.id]
    pool = b.load(b.gep(e.trap_rec, [const(I64, offset_of("Trap", "pool"))], source_etype=I8), typ=PTR)
    ok = b.and_(b.icmp_unsigned("!=", pool, const(PTR, None)), b.and_(runs, b.icmp_signed(">", last, start)))
    ev = InvariantEval(e)
    step = ev.expr(root.step)
    # Worth waking the pool: the iteration box holds at least the pool's split_min_work
    # innermost iterations (an overflowing product counts as enough).
    work, big = const(I64, 1), const(I1, 0)
    for path in innermost_paths(nest):
        volume = const(I64, 1)
        for loop in path:
            _runs, l_start, l_last, _ = boxes[loop.id]
            l_step = InvariantEval(e, proven=True).expr(loop.step)
            trips = b.add(b.udiv(b.sub(l_last, l_start), l_step), const(I64, 1))
            product = b.umul_with_overflow(volume, trips)
            big = b.or_(big, b.extract_value(product, 1))
            volume = b.extract_value(product, 0)
        work = b.select(b.icmp_unsigned(">", volume, work), volume, work)
    lent = b.select(b.icmp_unsigned("!=", pool, const(PTR, None)), pool, e.mod.null_object())
    min_work = b.load(lent, typ=I64)  # PoolT.split_min_work, the pool's first field
    ok = b.and_(ok, b.or_(big, b.icmp_unsigned(">=", work, min_work)))
    for buf, (coeff, _width) in split.stored.items():
        stride = ev.mul(ev.expr(coeff), step)
        stride = b.select(b.icmp_signed("<", stride, const(I64, 0)), ev.sub(const(I64, 0), stride), stride)
        lo = hi = None
        for a in nest.accesses:
            if a.buffer != buf:
                continue
            rlo, rhi, exact = rest[a.index]
            ok = b.and_(ok, exact)
            lo = rlo if lo is None else b.select(b.icmp_signed("<", rlo, lo), rlo, lo)
            hi = rhi if hi is None else b.select(b.icmp_signed(">", rhi, hi), rhi, hi)
        width = ev.add(ev.sub(hi, lo), const(I64, 1))  # elements one iteration touches
        ok = b.and_(ok, b.icmp_signed("<=", width, stride))
    return b.and_(b.and_(ok, ev.ok), ranges_apart(e, split.region, split.stored, split.others, nest, ranges))


def emit_split(e, split: ParallelPlan, nest: Nest, jam_plan, threads, apart) -> None:
    """At the builder's position (every access in range): the registers the root loop's
    region reads go to an environment, with the jam's verdict on the buffers (`apart`), and
    the region's own function runs over the root loop's iteration space: on the pool when
    `threads` (the split guard) holds, else on this thread. Registers the region writes are
    dead after it (the plan checked), so the caller continues at the root's exit."""
    b = e.b
    root = split.root
    env = opaque_alloca(e.entry_builder(), ir.ArrayType(I64, e.n32 // 2 + e.nref + 1), f"split{root.header}_env")
    jam_apart = apart if apart is not None else const(I1, 1)
    b.store(b.zext(jam_apart, I64), b.gep(env, [const(I64, e.n32 // 2 + e.nref)], source_etype=I64))
    for index, bank in split.live_in:
        v = e.get(Reg(bank, index, False, index), bank)
        b.store(v, b.gep(env, [const(I64, 4 * index)], source_etype=I8)).align = 4
    for r in split.refs:
        p = b.gep(env, [const(I64, e.n32 // 2 + r)], source_etype=I64)
        b.store(b.load(e.ref_slot(r), typ=PTR), p)
    body = ir.Function(e.mod.module, FN_TYPE, name=f"{e.fn.name}.split{root.header}")
    body.linkage = "internal"
    e.mod.mark_code(body)
    emit_body(e.sub_emitter(body), split, nest, jam_plan)
    fn = e.mod.module.get_global(SPLIT_FN)
    if fn is None:
        fn = ir.Function(e.mod.module, ir.FunctionType(ir.VoidType(), [PTR, PTR, PTR, PTR, I64, I64, I64, PTR]),
                         name=SPLIT_FN)
        fn.attributes.add("nounwind")
    ev = InvariantEval(e, proven=True)
    start = e.get(_iv(root), "i64")
    pool = b.load(b.gep(e.trap_rec, [const(I64, offset_of("Trap", "pool"))], source_etype=I8), typ=PTR)
    pool = b.select(threads, pool, const(PTR, None))
    b.call(fn, [pool, body, e.state, env, start, ev.expr(root.bound), ev.expr(root.step), e.trap_rec])


def emit_body(sub, split: ParallelPlan, nest: Nest, jam_plan) -> None:
    """The split nest's function (state, [lo, hi], env, trap): the root loop's region, fast
    copy (jammed where the environment says the buffers are apart), over iterations lo,
    lo + step, ... below hi."""
    b = sub.b
    sub.prologue()
    env = sub.results  # the FN_TYPE slot carrying the environment
    for index, bank in split.live_in:
        known = split.constants.get((index, bank))
        if known is not None:
            v = const(BANK_TYPE[bank], known)
        else:
            v = b.load(b.gep(env, [const(I64, 4 * index)], source_etype=I8), typ=BANK_TYPE[bank])
            v.align = 4
        sub.set(Reg(bank, index, False, index), v, bank)
    for r in split.refs:
        obj = b.load(b.gep(env, [const(I64, sub.n32 // 2 + r)], source_etype=I64), typ=PTR)
        sub.store_ref(r, obj)  # borrowed: the caller holds it; the body releases nothing
    lo = b.load(sub.args, typ=I64)
    hi = b.load(b.gep(sub.args, [const(I64, 1)], source_etype=I64), typ=I64)
    apart = b.load(b.gep(env, [const(I64, sub.n32 // 2 + sub.nref)], source_etype=I64), typ=I64)
    apart = b.icmp_unsigned("!=", apart, const(I64, 0))
    sub.set(_iv(split.root), lo, "i64")
    entry = lower_nest_copy(sub, nest, "split", jam_plan, apart, split_hi=hi)
    b.position_at_end(sub.entry)
    b.branch(entry)
    for i, block in enumerate(sub.blocks):  # the function's own blocks: only the exit is reached
        b.position_at_end(block)
        if i == split.root.exit:
            b.ret(const(I32, 0))
        else:
            b.unreachable()
    b.position_at_end(sub.unwind)
    b.unreachable()


def _iv(loop: Loop):
    return Reg("i64", loop.iv, False, loop.iv)
