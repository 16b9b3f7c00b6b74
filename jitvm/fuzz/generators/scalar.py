"""Register-to-register ops, emitted generically from the ISA table's fields.

Any op of `ops.PURE` can be emitted by `emit_pure`: each input register field takes a live
value of the field's bank, immediates take edge values, register lists (switch values)
take a few live values, and the result goes to a fresh or reused register of its bank.
The family is chosen first (weights below), then the op within it, so rare families
(ternary, switch) are not drowned by the many unary math ops.
"""

from __future__ import annotations

from jitvm.frontend import isa

from . import ops, values
from .emit import VALUE_BANKS, FuncGen, FuncOut, V, reg_text, render

FAMILY_WEIGHTS = {"binary": 30, "unary": 14, "conversion": 14, "binary_cmp": 10, "shift": 8, "select": 7,
                  "ternary": 5, "unary_cmp": 4, "switch": 4}
NEW_FAMILY_WEIGHT = 3  # families the ISA table gains (powi, ...) are generated too


def emit_pure(fg: FuncGen, op: isa.Op, picks: dict[str, V] | None = None) -> V:
    """One instance of `op` on live values (or `picks` for some input fields); returns the result."""
    texts = {}
    taint = fg.loop_taint
    out = None
    for f in op.fields:
        if f.kind == isa.REG and not f.out:
            v = picks[f.name] if picks and f.name in picks else fg.pick(f.bank)
            taint = taint or v.loop
            texts[f.name] = v.text
        elif f.kind == isa.REGS:
            vs = [fg.pick(f.bank) for _ in range(fg.c.int(0, 4))]
            taint = taint or any(v.loop for v in vs)
            texts[f.name] = ", ".join(v.text for v in vs)
        elif f.kind == isa.IMM:
            texts[f.name] = immediate(fg, f.bank)
        elif f.kind == isa.REG and f.out:
            out = f
    reg = fg.dest(out.bank)
    texts[out.name] = reg_text(out.bank, reg)
    fg.line(render(op, **texts))
    return fg.define(out.bank, reg, loop=taint)


def immediate(fg: FuncGen, bank: str) -> str:
    b = fg.c.bits(bank)
    if bank in ("i32", "i64"):
        return str(values.signed(b, values.WIDTH[bank]))
    text = values.float_text(bank, b)
    return text if text is not None else "nan"


def choose_op(fg: FuncGen, allow_traps: bool = True, pool_ops=None) -> isa.Op:
    by_family = ops.PURE_BY_FAMILY if pool_ops is None else ops.by_family(pool_ops)
    families = list(FAMILY_WEIGHTS) + [f for f in by_family if f not in FAMILY_WEIGHTS]
    families = [f for f in families if f in by_family]
    weights = [FAMILY_WEIGHTS.get(f, NEW_FAMILY_WEIGHT) for f in families]
    total = sum(weights)
    r = fg.c.int(0, total - 1)
    for fam, w in zip(families, weights):
        if r < w:
            break
        r -= w
    candidates = [op for op in by_family[fam] if allow_traps or op.name not in ops.TRAPPING]
    if fg.no_bitcast_floats:
        candidates = [op for op in candidates if op.name not in ops.PAYLOAD_VISIBLE]
    return fg.c.choice(candidates or by_family["binary"])


def pure_statement(fg: FuncGen, allow_traps: bool = True) -> V:
    """A constant now and then, else one pure op."""
    if fg.c.chance(12):
        return fg.materialize(fg.c.choice(VALUE_BANKS))
    return emit_pure(fg, choose_op(fg, allow_traps))


def result_values(fg: FuncGen, limit: int = 16) -> list[V]:
    """What a function returns: the most recently defined live values of every bank."""
    live = {id(v) for b in VALUE_BANKS for v in fg.pool[b]}
    return [v for v in fg.defined if id(v) in live][-limit:]


def scalar_function(mg, name: str | None = None, ncalls: int = 4) -> FuncOut:
    """Straight-line arithmetic on arguments and constants of every value bank."""
    c = mg.c
    args = [c.choice(VALUE_BANKS) for _ in range(c.int(0, 4))]
    fg = FuncGen(mg, name or mg.name("s"), args)
    allow_traps = c.chance(60)
    for _ in range(c.int(1, 24)):
        pure_statement(fg, allow_traps)
    sig = fg.returns(result_values(fg))
    calls = [[c.scalar(b) for b in args] for _ in range(ncalls if args else 1)]
    return FuncOut(sig, fg.text(sig), calls)
