"""A nest's checked copy left out of quick-tier code, compiled only if its guard ever fails.

The checked copy runs only when the guard finds some access out of range, i.e. on the way
to a trap; but with every access checked it is about as large as the fast copy, and a
quick tier spends a fifth of its compile time on it (ResNet-50-style 224 cold, the process
tree's CPU to the first result 6.9-7.3 -> 5.9-6.2 s without it). With the `defer_checked`
step a function-level nest's checked copy becomes a call through a cell, which starts out
holding the runtime's stub (lower.deferred): the stub compiles the copy as a function of
its own, puts it in the cell and runs it; later failures call it directly.

The caller and that function share one register file in effect: the registers live into
the nest go to an environment first (refs lent: such a nest writes none), the copy runs on
its own files filled from it and, at the nest's exit, puts back what it wrote that is live
there; the caller takes those and goes on at the exit, or unwinds with the trap the copy
recorded (with this frame's pc). A nest leaves only through
its root's exit or a trap (lower.loops.analysis builds no other).
"""

from __future__ import annotations

from ...runtime.native import ir
from ...runtime.vm.symbols import CHECKED_COPY_STUB
from ..emit.effects import written_slots
from ..emit.types import FN_TYPE, I8, I32, I64, PTR, const, opaque_alloca
from .copies import lower_nest_copy
from .parallel import live_at, read_refs, read_slots


def cell_symbol(fn_name: str, header: int) -> str:
    return f"{fn_name}.checked{header}.cell"


def applies(e, nest, entry) -> bool:
    """Whether the checked copy of `nest`, lowered at `entry`, is deferred: a function-level
    nest (not a delinearised chunk's, whose exits lead to the next chunk) that calls no
    function (the deferred copy is a module of its own) and writes no ref register (refs
    are only lent to the copy)."""
    if not e.mod.steps.defer_checked or entry is not None or e.redirect or e.block_override:
        return False
    if written_slots(e.vf, nest.blocks)[1]:
        return False
    return not any(idx in e.vf.calls for bi in nest.blocks
                   for idx in range(e.vf.blocks[bi].first, e.vf.blocks[bi].last + 1))


def emit_call(e, nest) -> ir.Block:
    """Where the guard sends a failure: the copy called through its cell; returns that block."""
    i32_slots, refs, written = _registers(e.vf, nest, e.n32)
    n_i32 = e.n32 // 2
    env = opaque_alloca(e.entry_builder(), ir.ArrayType(I64, n_i32 + e.nref), f"checked{nest.root.header}_env")
    stub = e.mod.module.get_global(CHECKED_COPY_STUB)
    if stub is None:
        stub = ir.Function(e.mod.module, FN_TYPE, name=CHECKED_COPY_STUB)
    cell = ir.GlobalVariable(e.mod.module, PTR, name=cell_symbol(e.fn.name, nest.root.header))
    cell.initializer = stub
    e.mod.deferred.append((cell.name, e.vf.ordinal, nest.root.header))

    b = e.b
    here = b.block
    start = e.fn.append_basic_block(f"bb{nest.root.header}_checked_call")
    b.position_at_end(start)
    for slot in i32_slots:
        b.store(b.load(e.slot(slot), typ=I32), _i32_at(b, env, slot)).align = 4
    for r in refs:
        b.store(b.load(e.ref_slot(r), typ=PTR), _ref_at(b, env, n_i32, r))
    status = b.call(b.load(cell, typ=FN_TYPE.as_pointer()), [e.state, env, cell, e.trap_rec])
    done = e.fn.append_basic_block(f"bb{nest.root.header}_checked_done")
    b.cbranch(b.icmp_unsigned("!=", status, const(I32, 0)), e.unwind, done).set_weights([1, 1 << 20])
    b.position_at_end(done)
    for slot in written:
        b.store(b.load(_i32_at(b, env, slot), typ=I32), e.slot(slot)).align = 4
    b.branch(e.blocks[nest.root.exit])
    b.position_at_end(here)
    return start


def emit_copy(sub, nest) -> None:
    """The deferred copy's function, through emitter `sub`: (state, env, cell, trap) -> 0,
    or the status of the trap it recorded."""
    i32_slots, refs, written = _registers(sub.vf, nest, sub.n32)
    n_i32 = sub.n32 // 2
    b = sub.b
    sub.prologue()
    env = sub.args
    for slot in i32_slots:
        b.store(b.load(_i32_at(b, env, slot), typ=I32), sub.slot(slot)).align = 4
    for r in refs:
        sub.store_ref(r, b.load(_ref_at(b, env, n_i32, r), typ=PTR))
    entry = lower_nest_copy(sub, nest, "checked", None, None)
    b.position_at_end(sub.entry)
    b.branch(entry)

    for i, block in enumerate(sub.blocks):  # the function's own blocks: only the exit is reached
        b.position_at_end(block)
        if i == nest.root.exit:
            for slot in written:
                b.store(b.load(sub.slot(slot), typ=I32), _i32_at(b, env, slot)).align = 4
            b.ret(const(I32, 0))
        else:
            b.unreachable()
    b.position_at_end(sub.unwind)  # the caller's frame releases the refs and leaves the depth
    b.ret(b.load(sub.trap_rec, typ=I32))


def _registers(vf, nest, n32: int) -> tuple[list[int], list[int], list[int]]:
    """The i32 slots and refs the copy starts from, and the i32 slots it hands back: the
    slots the nest touches that are live at its header (read before written on some path;
    a slot it writes on some paths only is live there if anything reads it after the exit),
    every ref it reads, and the slots it writes that are live at its exit."""
    written, _ = written_slots(vf, nest.blocks)
    # both halves of a slot pair: an operand of an "any" list (a return's, a call's) is
    # decoded as one i32 register and counts by its first slot in liveness, even if 64-bit
    touched = _pairs(written | read_slots(vf, nest.blocks))
    live_in, live_out = _pairs(live_at(vf, nest.root.header)), _pairs(live_at(vf, nest.root.exit))
    return (sorted(s for s in touched & live_in if s < n32),
            sorted(r for r in read_refs(vf, nest.blocks) if r < vf.ref_registers),
            sorted(s for s in written & live_out if s < n32))


def _pairs(slots) -> set[int]:
    return {s ^ k for s in slots for k in (0, 1)}


def _i32_at(b, env, slot: int):
    return b.gep(env, [const(I64, 4 * slot)], source_etype=I8)


def _ref_at(b, env, n_i32: int, r: int):
    return b.gep(env, [const(I64, n_i32 + r)], source_etype=I64)
