"""The loop optimiser's entry: each loop nest lowered twice, checked and fast, chosen by a guard.

The emitter hands every nest the analysis finds (lower.loops.analysis) to `NestVersioning`.
The guard (lower.loops.guard) checks once, at the nest's entry, that every buffer access of
every iteration is in range; the fast copy then runs without per-access checks, jammed
(lower.loops.jam) when the buffers it stores to are apart from the others, and split across
threads (lower.loops.parallel) when the invocation has an idle pool and the root loop's
iterations provably do not interact. Otherwise the checked copy runs, trapping exactly where
the interpreter would. A flat loop over delinearised indices (lower.loops.delinearise) runs
chunk by chunk, each chunk a nest lowered here.
"""

from __future__ import annotations

from dataclasses import replace

from ...verify.model import VerifiedFunction
from . import delinearise, jam, outline, parallel, scopes
from .analysis import ZERO, Loop, Nest, back_edges_of, build_nest, constant_value, loop_headers
from .copies import lower_nest_copy
from .guard import all_iterations_in_range


class NestVersioning:
    """How an Emitter lowers the loop nests of a function (its `nest_lowering`)."""

    def __init__(self, chunk_loops: bool = True):
        self.chunk_loops = chunk_loops  # delinearised flat loops run chunk by chunk

    def nests(self, vf: VerifiedFunction) -> dict:
        """The outermost analyzable loop nests, by the index of their root loop's header
        block: a Nest with at least one range-checkable access, or a delinearise.ChunkPlan."""
        back_edges = back_edges_of(vf)
        out: dict = {}
        covered_until = -1
        for header in loop_headers(back_edges):
            if header <= covered_until:
                continue  # inside a nest already taken
            nest = build_nest(vf, header, back_edges)
            if nest is None:
                continue
            chunked = delinearise.plan(vf, nest, back_edges) if self.chunk_loops else None
            if chunked is not None or nest.accesses:
                out[header] = chunked or nest
                covered_until = nest.root.latch
        return out

    def lower(self, e, nest, entry=None) -> None:
        """The nest twice, checked and fast, behind its guard, at the nest's header block
        (or at `entry`: a chunk's nest, never split across threads)."""
        if isinstance(nest, delinearise.ChunkPlan):
            delinearise.lower(e, nest, self.lower)
            return
        mod, steps = e.mod, e.mod.steps
        plan = jam.plan(e.vf, nest, steps.jam_outer, steps.wide_vectors,
                        steps.pack_operands and steps.affine_indices, steps.row_lanes, steps.narrow_jam) \
            if steps.jam_loops else None
        if plan is not None and plan.outer is not None and steps.shared_blocking and \
                not blocking_pays(e.vf, nest, plan.outer.loop, plan.loop):
            plan = replace(plan, outer=None)
        mod.blocked_nests += bool(plan and plan.outer)
        outermost = (plan.outer.loop if plan.outer is not None else plan.loop) if plan else None
        split = parallel.plan(e.vf, nest, outermost) if steps.parallel_loops and entry is None else None
        # The guard goes first, into the block where the nest is entered: the jammed loop's
        # header reads its verdict on the buffers (a value of a dominating block).
        e.b.position_at_end(entry or e.blocks[nest.root.header])
        e.pc = e.vf.instructions[e.vf.blocks[nest.root.header].first].pc
        ok, ranges, rest, boxes = all_iterations_in_range(e, nest)
        apart = jam.ranges_apart(e, plan.widest, plan.stored, plan.widest_others, nest, ranges) \
            if plan is not None else None
        if plan is None and steps.scope_buffers:  # the fast copy's buffers in scopes of their own, if apart
            plan = scopes.plan(e.vf, nest)
            apart = scopes.apart(e, plan, nest, ranges) if plan is not None else None
        threads = parallel.guard(e, split, nest, ranges, rest, boxes) if split is not None else None
        guard_end = e.b.block
        checked = outline.emit_call(e, nest) if outline.applies(e, nest, entry) else \
            lower_nest_copy(e, nest, "checked", None, None)
        if threads is None:
            fast = lower_nest_copy(e, nest, "fast", plan, apart)
            e.b.position_at_end(guard_end)
            e.b.cbranch(ok, fast, checked)
            return
        # A splittable nest's fast copy lives only in its own function: run on the pool when
        # `threads` holds, else by this thread.
        e.b.position_at_end(guard_end)
        fast = e.fn.append_basic_block(f"bb{nest.root.header}_fast")
        e.b.cbranch(ok, fast, checked)
        e.b.position_at_end(fast)
        parallel.emit_split(e, split, nest, plan, threads, apart)
        e.b.branch(e.blocks[nest.root.exit])


def blocking_pays(vf, nest: Nest, q: Loop, p: Loop) -> bool:
    """Whether register blocking over `q` around the jammed loop `p` pays: it forms a product
    tile (a load inside q whose element does not move with q, which the Q copies share: a
    matmul's right-hand side row, a convolution's weights; or one that moves with q but not
    with p, each Q copy's value broadcast to P's copies: attention weights times V over heads),
    or P's copies read consecutive elements (vector loads: the Q copies' extra accumulators
    keep the adds busy; an NHWC max pool over channels, 4 x 32: 7.0 us a dispatch, 11.2 jammed
    alone). Where neither holds (a softmax over heads, rows of exp(x - max) summed, 128
    elements apart; an NCHW max pool's stride-2 windows) blocking multiplies the gathers and
    the live registers, which spill around the vector exp calls: the nest then runs with P
    jammed alone (its rows may be staged, lower.loops.stage), and its root loop may be split
    across threads. Measured one thread (Xeon, Emerald Rapids, CPU time, load 2.4-3.4): MiniLM's
    softmax 12x128x128 dispatch 325 -> 269 us, ResNet-50 (ONNX zoo) 3x3 max pool 64x56x56
    499 -> 284 us (4 x 14 blocked -> jammed alone)."""
    loads = [a for a in nest.accesses if not a.store and q.id in a.loops]
    if any(a.element.coeff(q.id) == ZERO or (p.id in a.loops and a.element.coeff(p.id) == ZERO) for a in loads):
        return True
    step = constant_value(vf, p.step)
    for a in loads:
        c = constant_value(vf, a.element.coeff(p.id)) if p.id in a.loops else 0
        if c is None or step is None or abs(c * step) > 1:
            return False
    return True
