"""Control flow and calls: branches with register remaps, return, fail, calls, debug ops.

IREE semantics kept here: remap lists are applied in order (not as a parallel copy);
`vm.fail` with status 0 does nothing and execution continues with the next block;
yields resume immediately (jitvm invokes synchronously, as IREE's invoker would after
the yield); break/cond_break and trace/print are branches and discards of moved refs.
"""

from __future__ import annotations

from ...frontend.handlers import OpHandlers
from ...frontend.cconv import Span
from ...frontend.decode import Reg
from ...runtime.native import layout
from ...runtime.vm import traps
from .types import BANK_TYPE, CODE_BANK, FN_TYPE, I8, I32, I64, PTR, const, offset_of
from .effects import remap_moves

lowers = OpHandlers("lowering")  # this family's part of registry.LOWERINGS

STATUS_CODE_MASK = 0x1F
IMPORT_SIZE = layout.sizeof("Import")


# --- branches -----------------------------------------------------------------------------------

def apply_remap(e, pairs) -> None:
    """Copies registers in list order; an aligned (lo, hi) pair of copies moves one i64."""
    for move in remap_moves(pairs):
        apply_move(e, *move)


def apply_move(e, kind: str, src: Reg, dst: Reg) -> None:
    """One move of a remap list (effects.remap_moves)."""
    if kind == "ref":
        if src.is_ref and dst.is_ref:
            e.retain_or_move(src, dst)
    elif kind == "i64":
        e.set(Reg("i64", dst.index, False, dst.index), e.get(Reg("i64", src.index, False, src.index), "i64"),
              "i64")
    else:
        e.set(dst, e.get(src, "i32"), "i32")


# The checked copy of a versioned loop nest runs only when its guard fails (it is there to
# trap where the interpreter traps): its loops are neither unrolled nor vectorised, which
# saves compile time (LoopUnroll and LoopVectorize were a quarter of it on ResNet kernels).
_COLD_LOOP = ('!"llvm.loop.unroll.disable"', '!"llvm.loop.vectorize.enable", i1 false')


def branch_to(e, target_pc: int, pairs) -> None:
    apply_remap(e, pairs)
    br = e.b.branch(e.target_block(target_pc))
    if e.block_override and not e.fast_copy and target_pc <= e.pc:
        br.set_metadata("llvm.loop", e.mod.module.loop_node(*_COLD_LOOP))


def edge(e, target_pc: int, pairs):
    """A block that applies `pairs` and jumps to the target (the target itself if no remap)."""
    if not pairs:
        return e.target_block(target_pc)
    blk = e.fn.append_basic_block(f"edge_pc{e.pc}_to{target_pc}")
    here = e.b.block
    e.b.position_at_end(blk)
    branch_to(e, target_pc, pairs)
    e.b.position_at_end(here)
    return blk


@lowers("block")
def _block(e, ins):
    """Block markers only delimit blocks; the LLVM block is already current."""


@lowers("br", "yield", "break")
def _br(e, ins):
    branch_to(e, ins["dest_pc"], ins["operands"])


@lowers("cond_break")
def _cond_break(e, ins):
    e.i32(ins["condition"])  # read for fidelity; a debugger hook would go here
    branch_to(e, ins["dest_pc"], ins["operands"])


@lowers("cond_br")
def _cond_br(e, ins):
    cond = e.b.icmp_unsigned("!=", e.i32(ins["condition"]), const(I32, 0))
    t = edge(e, ins["true_dest_pc"], ins["true_operands"])
    f = edge(e, ins["false_dest_pc"], ins["false_operands"])
    e.b.cbranch(cond, t, f)


@lowers("br_table")
def _br_table(e, ins):
    index = e.i32(ins["index"])
    default = edge(e, ins["default_dest_pc"], ins["default_operands"])
    sw = e.b.switch(index, default)
    for i, (target, pairs) in enumerate(ins["cases"]):
        sw.add_case(const(I32, i), edge(e, target, pairs))


# --- return / fail ------------------------------------------------------------------------------

def slot_bits(e, reg, code):
    """A value register as the u64 of its ABI slot (32-bit values zero-extended)."""
    b = e.b
    bank = CODE_BANK[code]
    v = e.get(reg, bank)
    if bank == "f32":
        v = b.bitcast(v, I32)
    if bank in ("i32", "f32"):
        return b.zext(v, I64)
    return b.bitcast(v, I64) if bank == "f64" else v


def _store_slot(e, base, i, code, reg) -> None:
    slot = e.b.gep(base, [const(I64, i)], source_etype=I64)
    e.b.store(e.take_ref(reg) if code == "r" else slot_bits(e, reg, code), slot)


@lowers("return")
def _return(e, ins):
    for i, (code, reg) in enumerate(zip(e.vf.cconv.results, ins["operands"])):
        _store_slot(e, e.results, i, code, Reg(CODE_BANK[code], reg.index, reg.move, reg.raw))
    e.release_all_refs()
    e.leave_depth()
    e.b.ret(const(I32, 0))


@lowers("fail")
def _fail(e, ins):
    b = e.b
    raw = e.i32(ins["status"])
    message = ins["message"].decode("utf-8", "replace")
    failing = b.icmp_unsigned("!=", raw, const(I32, 0))
    code = b.and_(raw, const(I32, STATUS_CODE_MASK))
    code = b.select(b.icmp_unsigned("==", code, const(I32, 0)), const(I32, 2), code)  # UNKNOWN
    cold = e.fn.append_basic_block(f"fail_pc{e.pc}")
    nxt = e.fn.append_basic_block(f"fail_continue_pc{e.pc}")
    b.cbranch(failing, cold, nxt)
    b.position_at_end(cold)
    e.trap(traps.FAIL, status=code, message=message)
    b.position_at_end(nxt)
    if ins.pc + ins.size in e.vf.block_of_pc:
        b.branch(e.target_block(ins.pc + ins.size))
    else:
        e.trap(traps.FELL_OFF_END)


# --- calls -------------------------------------------------------------------------------------

def _pack_args(e, site, ins) -> list:
    """Fills the call slots in IREE's order; returns the values moved out of registers."""
    b = e.b
    moved = []
    operands = ins["operands"]
    segments = ins["segment_sizes"] if ins.op.call.variadic else None
    slot = 0
    reg_i = 0

    def put(code, reg):
        nonlocal slot
        p = b.gep(e.call_args, [const(I64, slot)], source_etype=I64, inbounds=True)
        if code == "r":
            v = e.get(reg, "ref")
            if reg.move:
                moved.append(v)
                e.clear_ref(reg)
            b.store(v, p)
        else:
            b.store(slot_bits(e, reg, code), p)
        slot += 1

    for pos, spec in enumerate(site.cconv.args):
        if isinstance(spec, Span):
            count = segments[pos]
            b.store(const(I64, count), b.gep(e.call_args, [const(I64, slot)], source_etype=I64, inbounds=True))
            slot += 1
            for _ in range(count):
                for code in spec.codes:
                    put(code, operands[reg_i])
                    reg_i += 1
        else:
            put(spec, operands[reg_i])
            reg_i += 1
    return moved


def _unpack_results(e, site, ins) -> None:
    b = e.b
    for i, (code, reg) in enumerate(zip(site.result_codes, ins["results"])):
        p = b.gep(e.call_results, [const(I64, i)], source_etype=I64, inbounds=True)
        if code == "r":
            e.set_ref(Reg("ref", reg.index, False, reg.raw), b.load(p, typ=PTR))
            continue
        bank = CODE_BANK[code]  # a slot's low bytes hold 32-bit values (little endian), as on entry
        e.set(Reg(bank, reg.index, False, reg.raw), b.load(p, typ=BANK_TYPE[bank]), bank)


def _callee(e, site):
    """(function pointer, ctx) for a call site: internal functions directly, imports via the table."""
    b = e.b
    if not site.is_import:
        return e.mod.function(site.callee), e.state
    table = b.load(b.gep(e.state, [const(I64, offset_of("ModuleState", "imports"))], source_etype=I8,
                         inbounds=True), typ=PTR)
    entry = b.gep(table, [const(I64, site.callee * IMPORT_SIZE)], source_etype=I8, inbounds=True)
    fn = b.load(entry, typ=FN_TYPE.as_pointer())
    ctx = b.load(b.gep(entry, [const(I64, offset_of("Import", "ctx"))], source_etype=I8), typ=PTR)
    e.check(b.icmp_unsigned("!=", fn, const(PTR, None)), traps.UNRESOLVED_IMPORT, message=site.name)
    return fn, ctx


def _call(e, ins) -> None:
    site = e.vf.calls[e.index]
    b = e.b
    fn, ctx = _callee(e, site)
    moved = _pack_args(e, site, ins)
    status = b.call(fn, [ctx, e.call_args, e.call_results, e.trap_rec])
    for v in moved:
        e.release(v)
    e.check_status(status)
    _unpack_results(e, site, ins)


@lowers("call", "call.variadic")
def _plain_call(e, ins):
    _call(e, ins)


@lowers("call.yieldable", "call.variadic.yieldable")
def _yieldable_call(e, ins):
    _call(e, ins)
    e.b.branch(e.target_block(ins["dest_pc"]))


@lowers("import.resolved")
def _import_resolved(e, ins):
    b = e.b
    index = ins["import_ordinal"] & 0x7FFFFFFF
    table = b.load(b.gep(e.state, [const(I64, offset_of("ModuleState", "imports"))], source_etype=I8,
                         inbounds=True), typ=PTR)
    entry = b.gep(table, [const(I64, index * IMPORT_SIZE + offset_of("Import", "resolved"))],
                  source_etype=I8)
    resolved = b.load(entry, typ=I32)
    e.set(ins["result"], b.zext(b.icmp_unsigned("!=", resolved, const(I32, 0)), I32), "i32")


@lowers("trace", "print")
def _trace(e, ins):
    for reg in ins["operands"]:
        if reg.is_ref and reg.move:
            e.set_ref(reg, const(PTR, None))
