"""Structured control flow with the VM's unstructured branches: regions of statements.

A region is a run of statements appended to the open block; a statement may end the block
and open others (forward branches to arms and a join, loops with a back edge), leaving a
block open for the next statement. Values cross edges through remap lists: arm entries
take fresh "parameter" registers, joins take "phi" registers written by every incoming
edge, loops carry values through their back edge. Remap lists also overwrite live
registers and chain moves (a later move reading an earlier one's target), because IREE
applies them in order, one 32-bit slot at a time (a swap `a->b, b->a` leaves both equal).

Loops are counted: an i32 or i64 counter from a small start by a constant positive step to
a bound that is a small constant or a live value masked to a few bits; counter, bound and
step are protected from being overwritten, so every loop ends. Forms: test at the top
(the shape the JIT's loop analysis knows) or at the bottom (a conditional back edge with
remaps), with early exits (`cond_br` to the exit from anywhere inside) and early returns.
"""

from __future__ import annotations

from jitvm.frontend import isa

from . import scalar, values
from .emit import VALUE_BANKS, WIDE, FuncGen, FuncOut, FuncSig, V, emit_op, reg_text, remap_text, render

MAX_DEPTH = 3
_MESSAGES = ["", "boom", "assertion failed", "bad: value", "x" * 40, "fail \\\"quoted\\\""]
_STATUSES = [0, 0, 1, 2, 3, 4, 5, 9, 11, 13, 16, 31, 32, 33, 64, 255, -1, values.I32_MIN]
_IMPORT = 'vm.import optional @nowhere.f cconv "0i_i"'


def region(fg: FuncGen, depth: int, budget: int, menu) -> None:
    """Up to `budget` statements from `menu` ((weight, fn(fg)) pairs) into the open block."""
    saved = getattr(fg, "depth", 0), getattr(fg, "menu", None)
    fg.depth, fg.menu = depth, menu
    weights = [w for w, _ in menu]
    total = sum(weights)
    try:
        for _ in range(budget):
            if not fg.is_open:
                return
            r = fg.c.int(0, total - 1)
            for w, fn in menu:
                if r < w:
                    fn(fg)
                    break
                r -= w
    finally:
        fg.depth, fg.menu = saved


def _sub_region(fg: FuncGen, budget: int) -> None:
    region(fg, fg.depth + 1, budget, fg.menu)


# --- remaps -------------------------------------------------------------------------------------

def _value_banks(fg: FuncGen, n: int) -> list[str]:
    refs = getattr(fg, "ref_params", False)
    return [("ref" if refs and fg.c.chance(30) else fg.c.choice(VALUE_BANKS)) for _ in range(n)]


def _slots(fg: FuncGen, writable: bool) -> list[int]:
    """32-bit register slots holding defined values (halves of i64/f64 pairs included);
    `writable`: only those of unprotected registers."""
    out = []
    for bank in VALUE_BANKS:
        for v in fg.pool[bank]:
            if writable and (bank, v.reg) in fg.protected:
                continue
            out += [v.reg, v.reg + 1] if bank in WIDE else [v.reg]
    return out


def edge_moves(fg: FuncGen, params: list[tuple[str, int]]) -> list:
    """Moves giving each (bank, register) in `params` a value, plus (sometimes) moves that
    overwrite live unprotected registers, swaps, chains, single 32-bit slots (half of a
    pair into an i32, an i32 into half of a pair) and ref moves (with or without the move
    bit, onto themselves too); in list order."""
    c = fg.c
    moves = []
    written: dict[str, list[int]] = {}
    for bank, dst in params:
        src = fg.pick(bank)
        if bank == "ref" and c.chance(25):
            moves.append(("Ref", src.reg, dst))
        else:
            moves.append((bank, src.reg, dst))
        written.setdefault(bank, []).append(dst)
    if c.chance(30):
        bank = c.choice(VALUE_BANKS)
        free = [v for v in fg.pool[bank] if (bank, v.reg) not in fg.protected]
        if len(free) >= 2:
            a, b = c.choice(free), c.choice(free)
            moves.append((bank, a.reg, b.reg))
            if c.chance(50):
                moves.append((bank, b.reg, a.reg))  # a swap in IREE's in-order semantics
        if written.get(bank) and c.chance(50) and free:
            moves.append((bank, written[bank][-1], c.choice(free).reg))  # reads an earlier target
    if c.chance(8):
        src, dst = _slots(fg, False), _slots(fg, True)
        if src and dst:
            moves.append(("slot", c.choice(src), c.choice(dst)))
    if getattr(fg, "ref_params", False) and fg.pool["ref"] and c.chance(15):
        a, b = c.choice(fg.pool["ref"]), c.choice(fg.pool["ref"])
        moves.append(("Ref" if c.chance(30) else "ref", a.reg, b.reg))
    return moves


def _define_params(fg: FuncGen, params) -> None:
    for bank, reg in params:
        fg.define(bank, reg, kind="mixed" if bank == "ref" else "")


def _fresh_params(fg: FuncGen, n: int) -> list[tuple[str, int]]:
    return [(b, fg.regs.new(b)) for b in _value_banks(fg, n)]


def condition(fg: FuncGen) -> V:
    """An i32 branch condition: a compare now and then, else any live i32."""
    if fg.c.chance(40):
        op = fg.c.choice([o for o in isa.OPS.values() if o.kind == isa.COMPARE and o.type != "ref"])
        return scalar.emit_pure(fg, op)
    return fg.pick("i32")


# --- statements ---------------------------------------------------------------------------------

def s_pure(fg: FuncGen) -> None:
    scalar.pure_statement(fg, allow_traps=getattr(fg, "allow_traps", True))


def _end_arm(fg: FuncGen, join: str, phis) -> None:
    """Closes an arm: an early return now and then, else a branch to `join` writing the phis."""
    if not fg.is_open:
        return
    if getattr(fg, "result_banks", None) is not None and fg.c.chance(12):
        s_return(fg)
        return
    fg.end(render(isa.op("br"), dest_pc=join, operands=remap_text(edge_moves(fg, phis))))


def s_if(fg: FuncGen) -> None:
    """cond_br to two arms (entry parameters through remaps) that meet at a join (phis)."""
    c = fg.c
    if fg.depth >= MAX_DEPTH:
        return s_pure(fg)
    cond = condition(fg)
    phis = _fresh_params(fg, c.int(0, 3))
    la, lb, lj = fg.new_label(), fg.new_label(), fg.new_label()
    if c.chance(15):  # both edges straight to the join: a select written as a branch
        ma, mb = edge_moves(fg, phis), edge_moves(fg, phis)
        fg.end(render(isa.op("cond_br"), condition=cond.text, true_dest_pc=lj, true_operands=remap_text(ma),
                      false_dest_pc=lj, false_operands=remap_text(mb)))
        fg.open(lj)
        _define_params(fg, phis)
        return
    pa, pb = _fresh_params(fg, c.int(0, 2)), _fresh_params(fg, c.int(0, 2))
    ma, mb = edge_moves(fg, pa), edge_moves(fg, pb)
    fg.end(render(isa.op("cond_br"), condition=cond.text, true_dest_pc=la, true_operands=remap_text(ma),
                  false_dest_pc=lb, false_operands=remap_text(mb)))
    snap = fg.snapshot()
    for label, params in ((la, pa), (lb, pb)):
        fg.restore(snap)
        fg.open(label)
        _define_params(fg, params)
        _sub_region(fg, c.int(0, 5))
        _end_arm(fg, lj, phis)
    fg.restore(snap)
    fg.open(lj)
    _define_params(fg, phis)


def s_table(fg: FuncGen) -> None:
    """br_table over a few cases; each edge goes to an arm or straight to the join."""
    c = fg.c
    if fg.depth >= MAX_DEPTH:
        return s_pure(fg)
    idx = fg.pick("i32")
    if c.chance(50):
        idx = emit_op(fg, "and.i32", left=idx, right=fg.small_const("i32", c.choice([1, 3, 7])))
    phis = _fresh_params(fg, c.int(0, 2))
    lj = None
    arms = [(fg.new_label(), _fresh_params(fg, c.int(0, 2))) for _ in range(c.int(1, 3))]
    lj = fg.new_label()

    def edge():
        if c.chance(25):
            return lj, edge_moves(fg, phis)
        label, params = c.choice(arms)
        return label, edge_moves(fg, params)

    default = edge()
    cases = [edge() for _ in range(c.int(0, 4))]
    text = "".join(f", {i}: {t}({remap_text(m)})" for i, (t, m) in enumerate(cases))
    fg.end(f"vm.br_table {idx.text} {{ default: {default[0]}({remap_text(default[1])}){text} }}")
    snap = fg.snapshot()
    for label, params in arms:
        fg.restore(snap)
        fg.open(label)
        _define_params(fg, params)
        _sub_region(fg, c.int(0, 4))
        _end_arm(fg, lj, phis)
    fg.restore(snap)
    fg.open(lj)
    _define_params(fg, phis)


def s_loop(fg: FuncGen) -> None:
    c = fg.c
    loops = getattr(fg, "loops", [])
    if len(loops) >= 2 or fg.depth >= MAX_DEPTH:
        return s_pure(fg)
    ib = "i64" if c.chance(40) else "i32"
    mask = 7 if not loops else 3
    if c.chance(40):
        bound = fg.const(ib, c.int(-1, mask))
    else:
        m = emit_op(fg, "and.i32", left=fg.pick("i32"), right=fg.small_const("i32", mask))
        bound = m if ib == "i32" else emit_op(fg, c.choice(["ext.i32.i64.s", "ext.i32.i64.u"]), operand=m)
    start = fg.small_const(ib, c.choice([0, 0, 0, 1, -2]))
    step = fg.small_const(ib, c.choice([1, 1, 1, 2, 3]))
    fg.protected |= {(ib, bound.reg)}
    iv = fg.regs.new(ib)
    fg.protected.add((ib, iv))
    carried = _fresh_params(fg, c.int(0, 3))
    init = edge_moves(fg, carried)
    header, body, exit_ = fg.new_label(), fg.new_label(), fg.new_label()
    entry = [(ib, start.reg, iv)] + init
    top = c.chance(70)
    fg.loops = loops + [exit_]
    if top:
        fg.end(render(isa.op("br"), dest_pc=header, operands=remap_text(entry)))
        fg.open(header)
        fg.define(ib, iv)
        _define_params(fg, carried)
        at_header = fg.snapshot()
        t = emit_op(fg, f"cmp.lt.{ib}.s", left=V(ib, iv), right=bound, result_reg=fg.regs.new("i32"))
        fg.end(render(isa.op("cond_br"), condition=t.text, true_dest_pc=body, true_operands="",
                      false_dest_pc=exit_, false_operands=""))
        fg.open(body)
        _sub_region(fg, c.int(1, 6))
        if fg.is_open:
            nxt = emit_op(fg, f"add.{ib}", left=V(ib, iv), right=step, result_reg=fg.regs.new(ib))
            back = [(ib, nxt.reg, iv)] + edge_moves(fg, carried)
            fg.end(render(isa.op("br"), dest_pc=header, operands=remap_text(back)))
        fg.restore(at_header)
    else:
        fg.end(render(isa.op("br"), dest_pc=body, operands=remap_text(entry)))
        fg.open(body)
        fg.define(ib, iv)
        _define_params(fg, carried)
        at_entry = fg.snapshot()
        _sub_region(fg, c.int(1, 6))
        if fg.is_open:
            nxt = emit_op(fg, f"add.{ib}", left=V(ib, iv), right=step, result_reg=fg.regs.new(ib))
            t = emit_op(fg, f"cmp.lt.{ib}.s", left=nxt, right=bound, result_reg=fg.regs.new("i32"))
            back = [(ib, nxt.reg, iv)] + edge_moves(fg, carried)
            fg.end(render(isa.op("cond_br"), condition=t.text, true_dest_pc=body, true_operands=remap_text(back),
                          false_dest_pc=exit_, false_operands=remap_text(back)))
        fg.restore(at_entry)
    fg.loops = loops
    fg.open(exit_)


def s_break(fg: FuncGen) -> None:
    """Leaves the innermost (or outer) loop early: cond_br to its exit."""
    loops = getattr(fg, "loops", [])
    if not loops:
        return s_pure(fg)
    target = fg.c.choice(loops)
    nxt = fg.new_label()
    cond = condition(fg)
    fg.end(render(isa.op("cond_br"), condition=cond.text, true_dest_pc=target, true_operands="",
                  false_dest_pc=nxt, false_operands=""))
    fg.open(nxt)


def s_call(fg: FuncGen) -> None:
    c = fg.c
    refs = getattr(fg, "ref_params", False)
    sigs = [s for s in fg.mod.sigs.values() if s.name != fg.name and (refs or "r" not in s.cconv)]
    if not sigs:
        return s_pure(fg)
    sig = c.choice(sigs)
    args = ", ".join(fg.pick(b).text for b in sig.args)
    outs = [(b, fg.dest(b)) for b in sig.results]
    results = ", ".join(reg_text(b, r) for b, r in outs)
    if c.chance(20):  # the yieldable form: a terminator that continues at a label with the results
        nxt = fg.new_label()
        fg.end(render(isa.op("call.yieldable"), callee_ordinal=f"fz.{sig.name}", operands=args, dest_pc=nxt,
                      results=results))
        fg.open(nxt)
    else:
        fg.line(render(isa.op("call"), callee_ordinal=f"fz.{sig.name}", operands=args, results=results))
    for b, r in outs:
        fg.define(b, r, kind="mixed" if b == "ref" else "")


def s_fail(fg: FuncGen) -> None:
    """cond_fail (a fail block on one side of a cond_br) or a plain vm.fail; a status of 0
    falls through to the next block, so the block after the fail is always valid."""
    c = fg.c
    lf, ln = fg.new_label(), fg.new_label()
    snap = None
    if c.chance(80):
        cond = condition(fg)
        fg.end(render(isa.op("cond_br"), condition=cond.text, true_dest_pc=lf, true_operands="",
                      false_dest_pc=ln, false_operands=""))
        snap = fg.snapshot()
        fg.open(lf)
    if snap is None:  # unconditional: mostly the status 0 that carries on
        status = fg.const("i32", 0) if c.chance(70) else fg.pick("i32")
    else:
        status = fg.const("i32", c.choice(_STATUSES)) if c.chance(70) else fg.pick("i32")
    fg.end(render(isa.op("fail"), status=status.text, message=c.choice(_MESSAGES)))
    if snap is not None:
        fg.restore(snap)
    fg.open(ln)


def s_misc(fg: FuncGen) -> None:
    """yield / break / cond_break (plain branches to the next block here), trace / print,
    import.resolved and a call of the unresolved optional import (a trap)."""
    c = fg.c
    r = c.int(0, 5)
    if r <= 2:
        nxt = fg.new_label()
        params = _fresh_params(fg, c.int(0, 2))
        moves = remap_text(edge_moves(fg, params))
        if r == 0:
            fg.end(render(isa.op("yield"), dest_pc=nxt, operands=moves))
        elif r == 1:
            fg.end(render(isa.op("break"), dest_pc=nxt, operands=moves))
        else:
            fg.end(render(isa.op("cond_break"), condition=condition(fg).text, dest_pc=nxt, operands=moves))
        fg.open(nxt)
        _define_params(fg, params)
    elif r == 3:
        regs = [fg.pick(c.choice(["i32", "f32"])) for _ in range(c.int(0, 3))]
        regs += [fg.pick("ref") for _ in range(c.int(0, 1)) if fg.pool["ref"]]
        fg.line(render(isa.op(c.choice(["trace", "print"])), event_name=c.choice(["ev", "a.b", "tick"]),
                       operands=", ".join(v.text for v in regs)))
    else:
        if _IMPORT not in fg.mod.imports:
            fg.mod.imports.append(_IMPORT)
        if r == 4 or c.chance(70):
            emit_op(fg, "import.resolved", import_ordinal="nowhere.f")
        else:
            out = fg.dest("i32")
            fg.line(render(isa.op("call"), callee_ordinal="nowhere.f", operands=fg.pick("i32").text,
                           results=reg_text("i32", out)))
            fg.define("i32", out)


def s_return(fg: FuncGen) -> None:
    banks = fg.result_banks
    fg.end(render(isa.op("return"), operands=", ".join(fg.pick(b).text for b in banks)))


MENU = [(40, s_pure), (9, s_if), (4, s_table), (8, s_loop), (4, s_break), (7, s_call), (3, s_fail), (4, s_misc)]


def control_function(mg, name: str | None = None) -> FuncOut:
    c = mg.c
    args = ["i32"] + [c.choice(VALUE_BANKS) for _ in range(c.int(0, 3))]
    fg = FuncGen(mg, name or mg.name("c"), args)
    fg.result_banks = [c.choice(VALUE_BANKS) for _ in range(c.int(1, 6))]
    fg.allow_traps = c.chance(50)
    region(fg, 0, c.int(2, 12), MENU)
    if fg.is_open:
        s_return(fg)
    sig = FuncSig(fg.name, args, list(fg.result_banks))
    calls = [[c.scalar(b) for b in args] for _ in range(4)]
    return FuncOut(sig, fg.text(sig), calls)


def recursive_function(mg) -> FuncOut:
    """f(n, ...) recurses on (n & mask) - 1 until it reaches 0: bounded by the argument. The
    mask is 15, or 1023 to reach the call-depth limit (both backends must trap at the same
    depth, RESOURCE_EXHAUSTED)."""
    c = mg.c
    name = mg.name("rec")
    args = ["i32"] + [c.choice(VALUE_BANKS) for _ in range(c.int(0, 2))]
    results = [c.choice(VALUE_BANKS) for _ in range(c.int(1, 2))]
    sig = FuncSig(name, args, results)
    fg = FuncGen(mg, name, args)
    fg.result_banks = results
    n = fg.pool["i32"][0]
    mask = c.choice([15, 15, 15, 1023])
    m = emit_op(fg, "and.i32", left=n, right=fg.small_const("i32", mask))
    fg.protected.add(("i32", m.reg))
    zero = fg.small_const("i32", 0)
    t = emit_op(fg, "cmp.lt.i32.s", left=zero, right=m)
    lr, lb = fg.new_label(), fg.new_label()
    fg.end(render(isa.op("cond_br"), condition=t.text, true_dest_pc=lr, true_operands="", false_dest_pc=lb,
                  false_operands=""))
    snap = fg.snapshot()
    fg.open(lb)
    for _ in range(c.int(0, 4)):
        s_pure(fg)
    s_return(fg)
    fg.restore(snap)
    fg.open(lr)
    m1 = emit_op(fg, "sub.i32", left=m, right=fg.small_const("i32", 1))
    for _ in range(c.int(0, 3)):
        s_pure(fg)
    outs = [(b, fg.dest(b)) for b in results]
    fg.line(render(isa.op("call"), callee_ordinal=f"fz.{name}",
                   operands=", ".join([m1.text] + [fg.pick(b).text for b in args[1:]]),
                   results=", ".join(reg_text(b, r) for b, r in outs)))
    for b, r in outs:
        fg.define(b, r)
    for _ in range(c.int(0, 3)):
        s_pure(fg)
    s_return(fg)
    depths = [0, 1, 2, 5, 15, 16, -1, 31] if mask == 15 else [100, 509, 510, 511, 512, 513, 1000, 1023]
    calls = [[c.choice(depths)] + [c.scalar(b) for b in args[1:]] for _ in range(3)]
    return FuncOut(sig, fg.text(sig), calls)
