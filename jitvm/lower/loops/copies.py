"""One copy of a loop nest's blocks: checked, unchecked (fast), jammed, or a split body.

A versioned nest is lowered twice and the guard picks a copy at run time; the fast copy's
accesses carry no checks (the guard proved them in range), may rebuild their indices from
the affine form, and run jammed (lower.loops.jam) when the stored buffers are apart.
"""

from __future__ import annotations

from dataclasses import replace

from ...frontend.decode import Reg
from . import jam, pack, stage
from .guard import proven_index
from .scopes import ScopePlan


def lower_nest_copy(e, nest, name: str, plan, apart, split_hi=None):
    """Lowers one copy of `nest` through emitter `e` and returns its entry block: "checked"
    (every access checked) or unchecked, jammed per `plan` (a jam.JamPlan) when the buffers
    are `apart`, or with `plan` a scopes.ScopePlan, its buffers in alias scopes of their own
    when they are `apart`. With `split_hi`, the root loop stops there and leaves to the
    root's exit block (the body of a split nest)."""
    if isinstance(plan, ScopePlan):
        return _lower_scoped(e, nest, name, plan, apart, split_hi) if name != "checked" else \
            lower_nest_copy(e, nest, name, None, None, split_hi)
    fn = e.fn
    e.nest_loops = {loop.id: loop for loop in nest.loops}
    e.block_override = {i: fn.append_basic_block(f"bb{i}_{name}") for i in nest.blocks}
    e.unchecked = {} if name == "checked" else {a.index: a for a in nest.accesses}
    e.fast_copy = name != "checked"
    e.proven_index = proven_index if e.fast_copy and e.mod.steps.affine_indices else None
    jammed = plan is not None and name != "checked"
    outer = plan.outer if jammed else None
    p_jammed = jammed and (outer is None or outer.jammed_remainder)
    if p_jammed:
        rem_header = e.block_override[plan.loop.header]
        jam_header = fn.append_basic_block(f"bb{plan.loop.header}_jam")
        then_headers = [fn.append_basic_block(f"bb{plan.loop.header}_jam{f}") for f in plan.then]
        e.block_override[plan.loop.header] = jam_header  # P is entered jammed
    if outer is not None:
        q_rem_header = e.block_override[outer.loop.header]
        q_header = fn.append_basic_block(f"bb{outer.loop.header}_blocked")
        e.block_override[outer.loop.header] = q_header  # Q is entered register-blocked
    entry = e.block_override[nest.root.header]
    blocked_apart, repacked = apart, {}
    if outer is not None:
        e.mod.prefer_wide_vectors(fn)
    if outer is not None and outer.packs:  # copies the blocked loads read, made on the way in
        pre = fn.append_basic_block(f"bb{nest.root.header}_{name}_pack_test")
        e.b.position_at_end(pre)
        blocked_apart, repacked = pack.emit(e, outer.packs, outer.loop, apart)
        e.b.branch(entry)
        entry = pre
    jam_apart, staged = apart, {}
    stages = stage.plan(e.vf, nest, plan) if p_jammed and outer is None and e.mod.steps.stage_loads and \
        e.mod.steps.affine_indices else ()
    if stages:  # P's loop is entered through the transposed copies of the rows its copies read
        stage_header = fn.append_basic_block(f"bb{plan.loop.header}_stage_test")
        e.block_override[plan.loop.header] = stage_header
        entry = e.block_override[nest.root.header]
    for i in nest.blocks:
        if jammed and i in plan.widest:
            continue
        if split_hi is not None and i == nest.root.header:
            _lower_split_header(e, nest.root, split_hi)
        else:
            e.lower_block(i, e.block_override[i])
    if outer is not None:
        e.block_override[outer.loop.header] = q_rem_header  # Q's plain loop, P jammed alone
        for i in outer.region:
            if i not in plan.region:
                e.lower_block(i, e.block_override[i])
    if jammed:
        if p_jammed:
            e.block_override[plan.loop.header] = rem_header  # the plain loop loops back to itself
        for i in plan.region:
            e.lower_block(i, e.block_override[i])
        # In the jammed copies the buffers are apart (the header checked): say so to
        # LLVM. Different iterations of P store to different elements, so each
        # jammed copy's stores get a scope of their own.
        copies = max(plan.factor, outer.copies if outer is not None else 0)
        keys = [(r, k) for r in plan.stored for k in (*range(copies), None)]
        keys += [(r, None) for r in plan.widest_others]
        e.alias = e.mod.module.alias_scopes(keys)
        if stages:
            e.b.position_at_end(stage_header)
            jam_apart, staged = stage.emit(e, stages, plan.loop, apart)
            e.b.branch(jam_header)
        if p_jammed:
            # groups of plan.factor, then of each smaller factor in turn, then P's plain loop
            headers = [jam_header, *then_headers, rem_header]
            e.repacked = staged
            for i, factor in enumerate((plan.factor, *plan.then)):
                jam.emit(e, replace(plan, factor=factor), headers[i], headers[i + 1], jam_apart)
            e.repacked = {}
        if outer is not None:
            e.repacked = repacked
            jam.emit_outer(e, plan, q_header, q_rem_header, blocked_apart)
            e.repacked = {}
        e.alias = {}
    e.block_override, e.unchecked, e.fast_copy, e.nest_loops = {}, {}, False, {}
    e.proven_index = None
    return entry


def _lower_scoped(e, nest, name: str, plan: ScopePlan, apart, split_hi):
    """Two unchecked copies, picked by `apart`: one whose buffer accesses carry an alias
    scope per buffer register (lower.loops.scopes), and the plain one."""
    plain = lower_nest_copy(e, nest, name, None, None, split_hi)
    e.alias = e.mod.module.alias_scopes(plan.keys())
    scoped = lower_nest_copy(e, nest, f"{name}_apart", None, None, split_hi)
    e.alias = {}
    pick = e.fn.append_basic_block(f"bb{nest.root.header}_{name}_apart_test")
    here = e.b.block
    e.b.position_at_end(pick)
    e.b.cbranch(apart, scoped, plain)
    e.b.position_at_end(here)
    return pick


def _lower_split_header(e, root, hi) -> None:
    """The root loop's header in a split nest's body: its instructions, then iv < hi."""
    b = e.b
    block = e.vf.blocks[root.header]
    b.position_at_end(e.block_override[root.header])
    e.lower_instructions(range(block.first, block.last))
    iv = e.get(Reg("i64", root.iv, False, root.iv), "i64")
    b.cbranch(b.icmp_signed("<", iv, hi), e.block_override[root.header + 1], e.blocks[root.exit])
