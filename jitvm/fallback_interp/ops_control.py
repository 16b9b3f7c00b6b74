"""Control flow and calls: branches with register remaps, calls, return, fail, debug ops.

IREE semantics kept here (runtime/src/iree/vm/bytecode/dispatch.c):
  * a remap list is applied in order, one 32-bit slot (or ref) per entry, not as a
    parallel copy: (%i0->%i1, %i1->%i0) leaves both holding the old %i0;
  * call arguments and results travel per the callee's calling convention (i64/f64 as
    whole pairs); ref arguments are retained, or moved when the register has the move bit;
  * vm.fail with status 0 does nothing: execution continues with the next block (a
    function whose last block does that traps FELL_OFF_END instead of running off the
    end); a nonzero status keeps its low 5 bits (IREE's status code field), 0 -> UNKNOWN;
  * vm.yield and yieldable calls resume at once (jitvm invokes synchronously, as IREE's
    invoke loop does after a yield), so they are branches and plain calls;
  * vm.break/cond_break branch (no debugger is ever attached); vm.trace/vm.print print
    nothing, like IREE's runtime, and only release the ref operands marked move.
"""

from __future__ import annotations

from ..frontend.handlers import OpHandlers

handles = OpHandlers("interpreter")  # this family's part of registry.HANDLERS


def _pair(pairs, i):
    """True when pairs[i], pairs[i + 1] copy one aligned 64-bit register to another."""
    if i + 1 >= len(pairs):
        return False
    (s0, d0), (s1, d1) = pairs[i], pairs[i + 1]
    return (not s1.is_ref and not d1.is_ref and s0.index % 2 == 0 and d0.index % 2 == 0
            and s1.index == s0.index + 1 and d1.index == d0.index + 1)


def emit_remap(e, pairs) -> None:
    i = 0
    while i < len(pairs):
        src, dst = pairs[i]
        if src.is_ref or dst.is_ref:
            if src.is_ref and dst.is_ref:
                ref_move_or_retain(e, src, dst)
            i += 1
        elif _pair(pairs, i):
            if src.index != dst.index:
                e.line(f"{e.u64(dst)} = {e.u64(src)}")
            i += 2
        else:
            if src.index != dst.index:
                e.line(f"{e.u32(dst)} = {e.u32(src)}")
            i += 1


def take_ref(e, reg, into: str) -> None:
    """`into` = an owned reference to the register's object (moved out if marked move)."""
    e.line(f"{into} = R[{reg.index}]")
    if reg.move:
        e.line(f"R[{reg.index}] = 0")
    else:
        with e.indented(f"if {into}:"):
            e.line(f"RET({into})")


def store_ref(e, reg, owned: str) -> None:
    """R[reg] = owned reference `owned`, releasing what the register held."""
    e.line(f"o = R[{reg.index}]")
    e.line(f"R[{reg.index}] = {owned}")
    with e.indented("if o:"):
        e.line("REL(o)")


def ref_move_or_retain(e, src, dst) -> None:
    """IREE's iree_vm_ref_retain_or_move between two registers (a move onto itself is a no-op)."""
    if src.move and src.index == dst.index:
        return
    take_ref(e, src, "v")
    store_ref(e, dst, "v")


# --- branches -----------------------------------------------------------------------------------

@handles("block")
def _block(e, ins):
    """Block markers only delimit blocks (codegen starts each block after its marker)."""


@handles("br", "yield", "break", "cond_break")
def _br(e, ins):
    e.goto(ins["dest_pc"], ins["operands"])


@handles("cond_br")
def _cond_br(e, ins):
    with e.indented(f"if {e.u32(ins['condition'])}:"):
        e.goto(ins["true_dest_pc"], ins["true_operands"])
    e.goto(ins["false_dest_pc"], ins["false_operands"])


@handles("br_table")
def _br_table(e, ins):
    cases = ins["cases"]
    e.line(f"x = {e.i32(ins['index'])}")
    if cases and not any(remap for _, remap in cases):
        table = e.const(tuple(e.block_index(pc) for pc, _ in cases), "targets")
        with e.indented(f"if 0 <= x < {len(cases)}:"):
            e.dispatch(f"{table}[x]")
    else:
        for i, (pc, remap) in enumerate(cases):
            with e.indented(f"if x == {i}:"):
                e.goto(pc, remap)
    e.goto(ins["default_dest_pc"], ins["default_operands"])


# --- calls --------------------------------------------------------------------------------------

def _arguments(e, codes, regs) -> list[str]:
    out = []
    for k, (code, reg) in enumerate(zip(codes, regs)):
        if code == "r":
            take_ref(e, reg, f"q{k}")
            out.append(f"q{k}")
        elif code in ("I", "F"):
            out.append(e.u64(reg))
        else:
            out.append(e.u32(reg))
    return out


def _store_results(e, codes, regs, result: str) -> None:
    for k, (code, reg) in enumerate(zip(codes, regs)):
        value = result if len(codes) == 1 else f"{result}[{k}]"
        if code == "r":
            store_ref(e, reg, value)
        elif code in ("I", "F"):
            e.line(f"{e.u64(reg)} = {value}")
        else:
            e.line(f"{e.u32(reg)} = {value}")


def emit_call(e, ins) -> None:
    site = e.vf.calls[e.index]
    args = _arguments(e, site.arg_codes, ins["operands"])
    if site.is_import:
        segments = ins["segment_sizes"] if ins.op.call.variadic else None
        callee = e.env(f"CS{e.ordinal}_{e.index}", ("call", site, segments))
    else:
        callee = f"f{site.callee}"
    call = f"{callee}({', '.join(['stk'] + args)})"
    if not site.result_codes:
        e.line(call)
        return
    e.line(f"t = {call}")
    _store_results(e, site.result_codes, ins["results"], "t")


@handles("call", "call.variadic")
def _call(e, ins):
    emit_call(e, ins)


@handles("call.yieldable", "call.variadic.yieldable")
def _call_yieldable(e, ins):
    emit_call(e, ins)
    e.goto(ins["dest_pc"])


@handles("return")
def _return(e, ins):
    values = _arguments(e, e.vf.cconv.results, ins["operands"])
    if not values:
        e.line("return None")
    elif len(values) == 1:
        e.line(f"return {values[0]}")
    else:
        e.line(f"return ({', '.join(values)})")


@handles("fail")
def _fail(e, ins):
    message = e.const(ins["message"].decode("utf-8", "replace"), "msg")
    e.line(f"x = {e.u32(ins['status'])}")
    with e.indented("if x:"):
        e.raise_(f"TRAP(K_FAIL, message={message}, status=(x & 31) or 2)")
    nxt = e.next_block_pc()
    if nxt is None:
        e.raise_("TRAP(K_FELL_OFF_END)")
    else:
        e.goto(nxt)


@handles("import.resolved")
def _import_resolved(e, ins):
    ordinal = ins["import_ordinal"] & 0x7FFFFFFF
    e.line(f"{e.u32(ins['result'])} = {e.env(f'IR{ordinal}', ('resolved', ordinal))}")


@handles("trace", "print")
def _trace(e, ins):
    for reg in ins["operands"]:
        if reg.is_ref and reg.move:
            e.line(f"x = R[{reg.index}]")
            with e.indented("if x:"):
                e.line(f"R[{reg.index}] = 0")
                e.line("REL(x)")
