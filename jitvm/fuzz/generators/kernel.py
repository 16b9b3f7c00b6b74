"""Loop nests shaped like VMVX kernels: what the JIT versions, guards and unrolls-and-jams.

A kernel is `@kN(m, n, off, sel)` over buffers held in ref globals (set up once by
`@setup`: allocated and filled from rodata, cloned from rodata, or rodata itself, which is
read-only). Its nest has one to three counted loops in the layout jitvm/lower/loops/analysis.py
recognises: header `cmp.lt.i64.s iv, bound` + `cond_br` to the next block or out, body
blocks in order, latch `add.i64 iv, step` + `br` back, the inner loop's exit being the
outer loop's latch block. The outer bound is `m`, the next one `n` (or constants); element
indices are affine in the induction variables (`mul`/`add`/`fma.i64` with constant
coefficients, some negative, plus a constant or `off`), sometimes through a `shl` the
analysis does not read as affine.

Patterns:
- elementwise: out[f(ivs)] = g(a[...], b[...]) in the innermost loop;
- rmw: out[f(outer ivs)] op= g(...) in the innermost loop (VMVX's matmul);
- acc: a register accumulator set before the innermost loop, updated in it and stored after
  it, in the loop around it (the reduction shape the JIT unrolls-and-jams);
- total: one accumulator across the whole nest, returned (a register carried everywhere).
Buffers may alias: two names for one global, or `select.ref sel ? x : y`.

The arguments are chosen by evaluating the nest's index ranges exactly (`Kernel.fits`, the
same corner reasoning as the JIT's guard): the largest in-range trip count and offset, one
iteration more (a trap on the last outer iteration, after partial stores), one element
before the start or past the end, an inner trip count that overruns in the middle, the
other `sel`, jam-relevant trip counts (7, 8, 9, 15, 16, 17, 31, 32, 33), zero and negative
trips. Integer kernels may divide by loaded data, which traps mid-loop on a zero.

Float results of kernels and float buffers they store to are computed in loops:
oracles/differential.py compares them with the documented NaN-payload tolerance. Kernels never reinterpret float
bits as integers (no `bitcast.f*`, no integer loads of float buffers), so no payload
difference can leak into values compared exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jitvm.frontend import isa

from . import memory, ops, scalar, values
from .emit import FuncGen, FuncOut, RandomChooser, V, emit_op, reg_text, remap_text, render

KDTYPES = ["f32", "f32", "f32", "f64", "i32", "i32", "i64", "i8", "i16"]
WIDTH = {"f32": 4, "f64": 8, "i32": 4, "i64": 8, "i8": 1, "i16": 2}
BANK = {"f32": "f32", "f64": "f64", "i32": "i32", "i64": "i64", "i8": "i32", "i16": "i32"}
STORE = {"f32": "buffer.store.f32", "f64": "buffer.store.f64", "i32": "buffer.store.i32",
         "i64": "buffer.store.i64", "i8": "buffer.store.i8", "i16": "buffer.store.i16"}
ELEMS = [1, 5, 8, 16, 16, 24, 32, 32, 40, 48, 64, 64, 96, 128]
M_CAP = 40
TRIPS = [0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33]

# Conversions between banks (no bitcasts), from the ISA table.
CONVERT = {}
for _op in ops.PURE:
    if _op.family == "conversion" and not _op.name.startswith("bitcast"):
        (_src,) = ops.input_banks(_op)
        CONVERT.setdefault((_src, ops.result_bank(_op)), []).append(_op)


@dataclass
class KBuf:
    glob: int  # ref global holding it
    dtype: str
    nbytes: int
    mutable: bool


def declare_buffers(mg) -> None:
    c = mg.c
    data = RandomChooser(c.int(0, 2 ** 32 - 1))
    for _ in range(c.int(2, 4)):
        dtype = c.choice(KDTYPES)
        n = c.choice(ELEMS) * WIDTH[dtype] + (c.choice([1, 2, 3]) if c.chance(10) else 0)
        source = c.choice(["alloc", "alloc", "clone", "rodata"])
        seg = mg.add_rodata(kernel_data(data, dtype, n))
        g = len(mg.ref_globals)
        mg.ref_globals.append("buffer")
        kb = KBuf(g, dtype, n, source != "rodata")
        kb.source, kb.segment = source, seg
        mg.kernel_buffers.append(kb)
        if dtype in ("f32", "f64") and kb.mutable:
            mg.loose_ref_globals[g] = dtype


def kernel_data(rc: RandomChooser, dtype: str, nbytes: int) -> bytes:
    """Mostly small numbers (zeros included, for integer division traps), some edge values."""
    out = bytearray()
    w = WIDTH[dtype]
    while len(out) < nbytes:
        r = rc.int(0, 99)
        if dtype in ("f32", "f64"):
            if r < 10:
                b = rc.bits(dtype)
            else:
                x = rc.int(-32, 32) / 4
                b = values.bits_of_f32(x) if dtype == "f32" else values.bits_of_f64(x)
        else:
            if r < 8:
                b = rc.bits("i64")
            else:
                b = rc.int(-5, 12) if r < 90 else 0
        out += (b & ((1 << (8 * w)) - 1)).to_bytes(w, "little")
    return bytes(out[:nbytes])


def setup_function(mg) -> FuncOut:
    """Fills the memory ref globals and puts every kernel buffer in its global."""
    fg = FuncGen(mg, "setup", [])
    memory.setup_state(fg)
    for kb in mg.kernel_buffers:
        ro = emit_op(fg, "const.ref.rodata", out_kind="rodata", rodata=kb.segment)
        length = memory.const_i64(fg, kb.nbytes)
        align = memory.const_i32(fg, fg.c.choice([4, 8, 16, 64]))
        if kb.source == "rodata":
            buf = ro
        elif kb.source == "clone":
            buf = emit_op(fg, "buffer.clone", out_kind="buffer", source=ro, offset=memory.const_i64(fg, 0),
                          length=length, alignment=align)
        else:
            buf = emit_op(fg, "buffer.alloc", out_kind="buffer", length=length, alignment=align)
            emit_op(fg, "buffer.copy", source_buffer=ro, source_offset=memory.const_i64(fg, 0), target_buffer=buf,
                    target_offset=memory.const_i64(fg, 0), length=length)
        emit_op(fg, "global.store.ref", value=buf, type_def="!vm.buffer", **{"global": kb.glob})
    sig = fg.returns([])
    return FuncOut(sig, fg.text(sig), [])


# --- the plan of one kernel --------------------------------------------------------------------

@dataclass
class KLoop:
    start: int
    bound: object  # "m", "n" or an int
    step: int


@dataclass
class KAccess:
    bufs: tuple  # kernel buffer indices: (sel != 0, sel == 0), equal when no select; a third
    # element tags a pair that gets its own register names (an alias of another pair)
    dtype: str  # element type of the access
    store: bool
    level: int  # deepest loop around it
    coeffs: dict[int, int]
    base: int
    use_off: bool
    shift: int = 0  # where ivs are stepped before the access: what that adds to the index


@dataclass
class Kernel:
    loops: list[KLoop]
    accesses: list[KAccess] = field(default_factory=list)
    bufs: list[KBuf] = field(default_factory=list)

    def bound(self, loop: KLoop, m: int, n: int) -> int:
        if isinstance(loop.bound, tuple):  # ("len", buffer, width, delta): its element count + delta
            _, kb, width, delta = loop.bound
            return self.bufs[kb].nbytes // width + delta
        return m if loop.bound == "m" else n if loop.bound == "n" else loop.bound

    def fits(self, m: int, n: int, off: int, sel: int) -> bool:
        """Every access of every iteration inside its buffer (stores: a mutable one)."""
        ranges = []
        runs = True
        for lp in self.loops:
            b = self.bound(lp, m, n)
            runs = runs and lp.start < b
            last = lp.start + ((b - 1 - lp.start) // lp.step) * lp.step if lp.start < b else lp.start
            ranges.append((lp.start, last, runs))
        for a in self.accesses:
            if not ranges[a.level][2]:
                continue
            lo = hi = a.base + a.shift + (off if a.use_off else 0)
            for lvl, coef in a.coeffs.items():
                x, y = coef * ranges[lvl][0], coef * ranges[lvl][1]
                lo, hi = lo + min(x, y), hi + max(x, y)
            kb = self.bufs[a.bufs[0] if sel else a.bufs[1]]
            if lo < 0 or hi >= kb.nbytes // WIDTH[a.dtype] or (a.store and not kb.mutable):
                return False
        return True


# --- generation --------------------------------------------------------------------------------

class KernelGen:
    def __init__(self, mg, fg: FuncGen):
        self.mg = mg
        self.fg = fg
        self.c = mg.c
        self.k = Kernel([])
        self.k.bufs = mg.kernel_buffers
        self.names: dict[tuple[int, int], list[V]] = {}
        self.ivs: list[V] = []
        self.consts: dict[tuple[str, int], V] = {}
        self.entry = fg.blocks[0][1]
        self.huge = False
        self.rows_apart = False  # the outer loop's coefficient is the inner loops' extent

    def const(self, bank: str, value: int) -> V:
        """A constant defined in the entry block (so it dominates every use, and is
        invariant in the nest as VMVX code has it)."""
        key = (bank, value)
        if key not in self.consts:
            reg = self.fg.regs.new(bank)
            line = render(isa.op(f"const.{bank}"), result=reg_text(bank, reg), value=str(value))
            if self.fg.open_block is self.entry:
                self.entry.append(line)
            else:
                self.entry.insert(len(self.entry) - 1, line)  # before the entry's terminator
            self.consts[key] = V(bank, reg)
        return self.consts[key]

    def i64(self, value: int) -> V:
        return self.const("i64", value)

    def coef(self, value: int) -> V:
        """An index coefficient: from the entry block, or (`local_consts`) a constant right
        here, which the JIT's loop analysis reads as a literal (a register from the entry
        block stays symbolic, and the unroll-and-jam wants literal coefficients)."""
        if self.local_consts:
            return emit_op(self.fg, "const.i64", value=value, result_reg=self.fg.regs.new("i64"))
        return self.i64(value)

    # -- buffers --------------------------------------------------------------------------------

    def pick_bufs(self, store: bool, dtype: str | None = None, avoid=None) -> tuple[int, int]:
        c = self.c
        kbs = self.k.bufs
        cands = [i for i, kb in enumerate(kbs) if (dtype is None or kb.dtype == dtype or
                                                    (kb.dtype not in ("f32", "f64") and dtype not in ("f32", "f64")))]
        if avoid is not None and [i for i in cands if i not in avoid]:
            cands = [i for i in cands if i not in avoid]
        if store:
            muts = [i for i in cands if kbs[i].mutable]
            cands = muts if muts and c.chance(92) else cands
        if not cands:
            cands = list(range(len(kbs)))
        a = c.choice(cands)
        b = c.choice(cands) if c.chance(20) else a
        return (a, b)

    def ref(self, bufs: tuple[int, int]) -> V:
        """A register naming the buffer pair (one of the names made by `name`)."""
        return self.c.choice(self.names[bufs])

    def name(self, bufs: tuple[int, int]) -> V:
        """Loads the buffer pair into a new ref register (a select on `sel` when they
        differ), in the entry block."""
        fg = self.fg
        x = emit_op(fg, "global.load.ref", out_kind="buffer", type_def="!vm.buffer",
                    result_reg=fg.regs.new("ref"), **{"global": self.k.bufs[bufs[0]].glob})
        if bufs[0] != bufs[1]:
            y = emit_op(fg, "global.load.ref", out_kind="buffer", type_def="!vm.buffer",
                        result_reg=fg.regs.new("ref"), **{"global": self.k.bufs[bufs[1]].glob})
            x = emit_op(fg, "select.ref", out_kind="buffer", condition=self.sel, true_value=x, false_value=y,
                        type_def="!vm.buffer", result_reg=fg.regs.new("ref"))
        self.names.setdefault(bufs, []).append(x)
        return x

    # -- accesses -------------------------------------------------------------------------------

    def coeffs(self, levels) -> dict[int, int]:
        c = self.c
        out = {}
        for lvl in levels:
            inner = [lp for lp in self.k.loops[lvl + 1:]]
            stride = 1
            for lp in inner:
                stride *= lp.bound if isinstance(lp.bound, int) and lp.bound > 0 else 1
            out[lvl] = stride if lvl == 0 and self.rows_apart else c.choice([1, 1, 1, 2, 3, -1, stride, stride, 4])
            if c.chance(3):  # the index wraps around in i64 arithmetic (the guard must see it)
                out[lvl] = c.choice([1 << 40, -(1 << 62), (1 << 61) + 1])
                self.huge = True
        return out

    def access(self, bufs, dtype: str, store: bool, level: int, levels, coeffs=None) -> KAccess:
        c = self.c
        co = coeffs if coeffs is not None else self.coeffs(levels)
        a = KAccess(bufs, dtype, store, level, co, c.choice([0, 0, 0, 1, 2, 5]), c.chance(60))
        if any(v < 0 for v in co.values()) and not a.use_off:
            a.base += c.choice([8, 16, 32])
        self.k.accesses.append(a)
        return a

    def index(self, a: KAccess) -> V:
        """Emits the element index of `a` (at the current point, every iv it uses live)."""
        fg, c = self.fg, self.c
        if a.use_off:
            cur = self.off64 if not a.base else emit_op(fg, "add.i64", left=self.off64,
                                                        right=self.i64(values.signed(a.base, 64)),
                                                        result_reg=fg.regs.new("i64"))
        else:
            cur = self.i64(values.signed(a.base, 64))
        for lvl, coef in sorted(a.coeffs.items()):
            iv = self.ivs[lvl]
            r = c.int(0, 99)
            if coef == 1 and r < 40:
                cur = emit_op(fg, "add.i64", left=cur, right=iv, result_reg=fg.regs.new("i64"))
            elif r < 65:
                cur = emit_op(fg, "fma.i64", first=iv, second=self.coef(coef), third=cur, result_reg=fg.regs.new("i64"))
            elif coef > 0 and coef & (coef - 1) == 0 and r < 69:  # not affine to the JIT's analysis
                t = emit_op(fg, "shl.i64", operand=iv, amount=self.const("i32", coef.bit_length() - 1),
                            result_reg=fg.regs.new("i64"))
                cur = emit_op(fg, "add.i64", left=t, right=cur, result_reg=fg.regs.new("i64"))
            else:
                t = emit_op(fg, "mul.i64", left=iv, right=self.coef(coef), result_reg=fg.regs.new("i64"))
                cur = emit_op(fg, "add.i64", left=cur, right=t, result_reg=fg.regs.new("i64"))
        return cur

    def load(self, a: KAccess) -> V:
        fg = self.fg
        name = {"f32": "buffer.load.f32", "f64": "buffer.load.f64", "i32": "buffer.load.i32",
                "i64": "buffer.load.i64"}.get(a.dtype) or \
            f"buffer.load.{a.dtype}.{self.c.choice(['s', 'u'])}"
        return emit_op(fg, name, source_buffer=self.ref(a.bufs), source_offset=self.index(a),
                       result_reg=fg.regs.new(BANK[a.dtype]))

    def store(self, a: KAccess, value: V) -> None:
        emit_op(self.fg, STORE[a.dtype], target_buffer=self.ref(a.bufs), target_offset=self.index(a),
                value=self.convert(value, BANK[a.dtype]))

    # -- values ---------------------------------------------------------------------------------

    def convert(self, v: V, bank: str) -> V:
        if v.bank == bank:
            return v
        op = self.c.choice(CONVERT[(v.bank, bank)])
        return emit_op(self.fg, op.name, operand=v, result_reg=self.fg.regs.new(bank))

    def compute(self, inputs: list[V], bank: str, n: int) -> V:
        """A few pure ops of `bank` over the inputs (integer division only if allowed)."""
        fg, c = self.fg, self.c
        vals = [self.convert(v, bank) for v in inputs]
        pool = ops.ops_of(bank, exclude=ops.PAYLOAD_VISIBLE | (frozenset() if self.divide else ops.TRAPPING))
        pool = [o for o in pool if o.family != "switch" or c.chance(20)]
        cur = vals[-1] if vals else fg.pick(bank)
        for _ in range(n):
            op = c.choice(pool)
            picks = {}
            for f in op.fields:
                if f.kind == isa.REG and not f.out and f.bank == bank:
                    picks[f.name] = c.choice(vals + [cur]) if c.chance(85) else fg.pick(bank)
            cur = scalar.emit_pure(fg, op, picks)
            vals.append(cur)
        return cur

    def combine(self, acc: V, v: V) -> V:
        """acc op v into acc's own register (a reduction)."""
        fg = self.fg
        bank = acc.bank
        v = self.convert(v, bank)
        if bank in ("f32", "f64"):
            name = self.c.choice([f"add.{bank}", f"add.{bank}", f"mul.{bank}", f"max.{bank}", f"min.{bank}",
                                  f"sub.{bank}"])
        else:
            name = self.c.choice([f"add.{bank}", f"xor.{bank}", f"max.{bank}.s", f"min.{bank}.u", f"mul.{bank}"])
        op = isa.op(name)
        texts = {"left": acc, "right": v}
        if self.c.chance(30) and bank in ("f32", "f64", "i32", "i64"):
            op = isa.op(f"fma.{bank}")
            texts = {"first": v, "second": self.convert(self.last_input, bank), "third": acc}
        return emit_op(fg, op.name, result_reg=acc.reg, **texts)


def kernel_function(mg) -> FuncOut:
    c = mg.c
    name = mg.name("k")
    fg = FuncGen(mg, name, ["i32", "i32", "i32", "i32"])
    fg.no_bitcast_floats = True
    fg.fresh_only = True
    m, n, off, sel = fg.pool["i32"][:4]
    kg = KernelGen(mg, fg)
    kg.sel = sel
    kg.divide = c.chance(20)
    kg.local_consts = c.chance(60)
    depth = c.choice([1, 2, 2, 3, 3])
    pattern = c.choice(["elementwise", "rmw", "rmw", "acc", "acc", "acc", "total"] if depth >= 2
                       else ["elementwise", "rmw", "total"])
    bounds = ["m", "n" if c.chance(60) else c.choice([1, 3, 4, 8, 16]), c.choice([1, 2, 3, 4, 5, 8, 9])]
    for lvl in range(depth):
        kg.k.loops.append(KLoop(c.choice([0, 0, 0, 0, 1]), bounds[lvl], c.choice([1, 1, 1, 1, 2, 3])))
    if depth == 3 and pattern in ("rmw", "acc") and c.chance(60):
        # register blocking's shape: whole groups of 16 around the innermost loop, rows apart
        kg.k.loops[1] = KLoop(0, c.choice([16, 32]), 1)
        kg.rows_apart = True

    # entry: arguments as i64, loop constants, buffer refs
    m64 = emit_op(fg, "ext.i32.i64.s", operand=m, result_reg=fg.regs.new("i64"))
    n64 = emit_op(fg, "ext.i32.i64.s", operand=n, result_reg=fg.regs.new("i64"))
    kg.off64 = emit_op(fg, "ext.i32.i64.s", operand=off, result_reg=fg.regs.new("i64"))
    if c.chance(15):  # the outer bound is a buffer's element count (vm.buffer.length), +-1
        kb, width = c.int(0, len(kg.k.bufs) - 1), c.choice([1, 4, 8])
        if kg.k.bufs[kb].nbytes // width <= 48:
            kg.k.loops[0].bound = ("len", kb, width, c.choice([0, 0, -1, 1]))
    bound_v = []
    for lp in kg.k.loops:
        if isinstance(lp.bound, tuple):
            _, kb, width, delta = lp.bound
            r = emit_op(fg, "global.load.ref", out_kind="buffer", type_def="!vm.buffer",
                        result_reg=fg.regs.new("ref"), **{"global": kg.k.bufs[kb].glob})
            v = emit_op(fg, "buffer.length", buffer=r, result_reg=fg.regs.new("i64"))
            if width > 1:
                v = emit_op(fg, "shr.i64.u", operand=v, amount=kg.const("i32", width.bit_length() - 1),
                            result_reg=fg.regs.new("i64"))
            if delta:
                v = emit_op(fg, "add.i64", left=v, right=kg.i64(delta), result_reg=fg.regs.new("i64"))
            bound_v.append(v)
        else:
            bound_v.append(m64 if lp.bound == "m" else n64 if lp.bound == "n" else kg.i64(lp.bound))
    step_v = [kg.i64(lp.step) for lp in kg.k.loops]
    start_v = [kg.i64(lp.start) for lp in kg.k.loops]
    kg.ivs = [V("i64", fg.regs.new("i64")) for _ in kg.k.loops]

    out_bufs = kg.pick_bufs(True)
    out_dtype = kg.k.bufs[out_bufs[0]].dtype
    bank = BANK[out_dtype]
    if kg.k.bufs[out_bufs[1]].dtype != out_dtype:
        out_bufs = (out_bufs[0], out_bufs[0])
    in_bufs = [kg.pick_bufs(False, avoid=None if c.chance(25) else out_bufs) for _ in range(c.int(1, 2))]
    in_bufs = [b if kg.k.bufs[b[0]].dtype == kg.k.bufs[b[1]].dtype else (b[0], b[0]) for b in in_bufs]
    if c.chance(40):  # an input that is (or, depending on `sel`, may be) the output under another name
        other = kg.pick_bufs(False, dtype=out_dtype)[0]
        pair = c.choice([(out_bufs[0], out_bufs[0]), (out_bufs[0], other), (other, out_bufs[0])])
        in_bufs[0] = pair + ("alias",)
    for b in [out_bufs] + in_bufs:
        if b not in kg.names:
            kg.name(b)
            if c.chance(20):
                kg.name(b)  # a second name for the same buffer
    total = None
    if pattern == "total":
        total = fg.const(bank, 0 if bank not in ("f32", "f64") else values.bits_of_f32(0.5) if bank == "f32"
                         else values.bits_of_f64(0.5), reg=fg.regs.new(bank))
    inner = depth - 1
    all_levels = list(range(depth))

    # plan the accesses (so the evaluator knows them), then emit the nest
    out_levels = all_levels if pattern == "elementwise" else list(range(max(1, depth - 1)))
    if pattern == "acc":
        p = depth - 2
        co = kg.coeffs(range(p + 1))
        if co[p] == 0:
            co[p] = 1
        out_acc = kg.access(out_bufs, out_dtype, True, p, range(p + 1), co)
        init_load = None
        if c.chance(50):
            init_load = KAccess(out_bufs, out_dtype, False, p, out_acc.coeffs, out_acc.base, out_acc.use_off)
            kg.k.accesses.append(init_load)
    elif pattern != "total":
        out_acc = kg.access(out_bufs, out_dtype, True, inner, out_levels)
        rmw_load = None
        if pattern == "rmw":
            rmw_load = KAccess(out_bufs, out_dtype, False, inner, out_acc.coeffs, out_acc.base, out_acc.use_off)
            kg.k.accesses.append(rmw_load)
    ins = [kg.access(b, kg.k.bufs[b[0]].dtype, False, inner, all_levels if c.chance(80) else all_levels[-1:])
           for b in in_bufs]

    # variations the JIT's analysis must see through or refuse
    init_nest = pattern != "total" and c.chance(30)  # VMVX's fill of the output before the compute nest
    if init_nest:
        k_top = max(out_acc.coeffs)
        init_store = KAccess(out_bufs, out_dtype, True, k_top, out_acc.coeffs, out_acc.base, out_acc.use_off)
        kg.k.accesses.append(init_store)
    # ivs stepped first thing in their body block: every access of that loop (inner ones too) sees iv + step
    early = {lvl for lvl in range(depth) if c.chance(8)}
    for lvl in early:
        for a in kg.k.accesses:
            if a.level >= lvl and lvl in a.coeffs and not (init_nest and a is init_store):
                a.shift += a.coeffs[lvl] * kg.k.loops[lvl].step
    early_inc = inner in early
    reduced = {id(a) for a in ins if not early_inc and inner in a.coeffs and c.chance(20)}  # strength-reduced
    branchy = c.chance(8)  # a data-dependent branch in the innermost body (the nest is not analysable)
    kg.huge = kg.huge or branchy

    fg.loop_taint = False

    def emit_nest(levels, ivs, body, main=True):
        """Counted loops over `levels` (header, body, ..., latch; the inner loop's exit is the
        outer loop's latch block) around `body(level)`, called in each body block."""
        labels = [(fg.new_label(), fg.new_label(), fg.new_label()) for _ in levels]  # header, body, exit
        for i, lvl in enumerate(levels):
            head, bod, ex = labels[i]
            if c.chance(50):
                fg.end(render(isa.op("br"), dest_pc=head, operands=remap_text([("i64", start_v[lvl].reg, ivs[i].reg)])))
            else:
                emit_op(fg, "const.i64", value=kg.k.loops[lvl].start, result_reg=ivs[i].reg)
                fg.end(render(isa.op("br"), dest_pc=head, operands=""))
            fg.open(head)
            t = emit_op(fg, "cmp.lt.i64.s", left=ivs[i], right=bound_v[lvl], result_reg=fg.regs.new("i32"))
            fg.end(render(isa.op("cond_br"), condition=t.text, true_dest_pc=bod, true_operands="",
                          false_dest_pc=ex, false_operands=""))
            fg.open(bod)
            fg.loop_taint = True
            body(lvl, "enter")
        for i in reversed(range(len(levels))):
            lvl = levels[i]
            head, bod, ex = labels[i]
            body(lvl, "leave")
            if not (lvl in early and main):
                emit_op(fg, "add.i64", left=ivs[i], right=step_v[lvl], result_reg=ivs[i].reg)
            if c.chance(15):  # the latch in a block of its own
                mid = fg.new_label()
                fg.end(render(isa.op("br"), dest_pc=mid, operands=""))
                fg.open(mid)
            fg.end(render(isa.op("br"), dest_pc=head, operands=""))
            fg.open(ex)
            if i == 0:
                fg.loop_taint = False
            body(lvl, "after")

    if init_nest:
        main_ivs = kg.ivs
        kg.ivs = [V("i64", fg.regs.new("i64")) for _ in range(k_top + 1)]
        fill = fg.const(bank, 0) if c.chance(50) else None

        def init_body(lvl, when):
            if lvl == k_top and when == "enter":
                kg.store(init_store, fill if fill is not None else kg.const(bank, 1))
        emit_nest(list(range(k_top + 1)), kg.ivs, init_body, main=False)
        kg.ivs = main_ivs

    state = {"acc": None, "total": total, "sr": {}}

    def main_body(lvl, when):
        if when == "enter" and lvl in early and lvl != inner:
            emit_op(fg, "add.i64", left=kg.ivs[lvl], right=step_v[lvl], result_reg=kg.ivs[lvl].reg)
        if when == "enter" and pattern == "acc" and lvl == depth - 2:
            acc0 = kg.load(init_load) if init_load is not None else fg.const(bank, 0)
            state["acc"] = emit_op(fg, "select." + bank, condition=kg.const("i32", 1), true_value=acc0,
                                   false_value=acc0, result_reg=fg.regs.new(bank)) if c.chance(20) else acc0
        if when == "enter" and lvl == inner:
            if inner in early:
                emit_op(fg, "add.i64", left=kg.ivs[inner], right=step_v[inner], result_reg=kg.ivs[inner].reg)
            loaded = []
            for a in ins:
                if id(a) in state["sr"]:
                    name_ = {"f32": "buffer.load.f32", "f64": "buffer.load.f64", "i32": "buffer.load.i32",
                             "i64": "buffer.load.i64"}.get(a.dtype) or f"buffer.load.{a.dtype}.s"
                    loaded.append(emit_op(fg, name_, source_buffer=kg.ref(a.bufs), source_offset=state["sr"][id(a)],
                                          result_reg=fg.regs.new(BANK[a.dtype])))
                else:
                    loaded.append(kg.load(a))
            kg.last_input = loaded[-1]
            value = kg.compute(loaded, bank, c.int(0, 3))
            if pattern == "elementwise" and branchy:  # store one of two values: a diamond
                t = emit_op(fg, f"cmp.nz.{value.bank}" if value.bank in ("i32", "i64") else f"cmp.nan.{value.bank}",
                            operand=value, result_reg=fg.regs.new("i32"))
                la, lb, lj = fg.new_label(), fg.new_label(), fg.new_label()
                fg.end(render(isa.op("cond_br"), condition=t.text, true_dest_pc=la, true_operands="",
                              false_dest_pc=lb, false_operands=""))
                fg.open(la)
                kg.store(out_acc, value)
                fg.end(render(isa.op("br"), dest_pc=lj, operands=""))
                fg.open(lb)
                kg.store(out_acc, kg.const(value.bank, 3) if value.bank in ("i32", "i64") else value)
                fg.end(render(isa.op("br"), dest_pc=lj, operands=""))
                fg.open(lj)
            elif pattern == "elementwise":
                kg.store(out_acc, value)
            elif pattern == "rmw":
                old = kg.load(rmw_load)
                kg.store(out_acc, kg.combine(old, value))
            elif pattern == "acc":
                state["acc"] = kg.combine(state["acc"], value)
            else:
                state["total"] = kg.combine(state["total"], value)
            for a in ins:  # step the strength-reduced indices
                if id(a) in state["sr"]:
                    reg = state["sr"][id(a)]
                    emit_op(fg, "add.i64", left=reg,
                            right=kg.coef(values.signed(a.coeffs[inner] * kg.k.loops[inner].step, 64)),
                            result_reg=reg.reg)
        if when == "after" and pattern == "acc" and lvl == depth - 1:
            kg.store(out_acc, state["acc"])

    def sr_init():
        """Strength-reduced indices start at the innermost loop's first iteration."""
        saved = kg.ivs[inner]
        kg.ivs[inner] = start_v[inner]
        for a in ins:
            if id(a) in reduced:
                start_index = kg.index(a)
                state["sr"][id(a)] = emit_op(fg, "add.i64", left=start_index, right=kg.i64(0),
                                             result_reg=fg.regs.new("i64"))
        kg.ivs[inner] = saved

    if inner == 0:
        sr_init()

    def body(lvl, when):
        main_body(lvl, when)
        if when == "enter" and lvl == inner - 1:
            sr_init()

    emit_nest(list(range(depth)), kg.ivs, body)
    fg.loop_taint = False
    total = state["total"]
    results = [total] if total is not None else []
    if c.chance(50):
        results.append(kg.ivs[0])
    sig = fg.returns(results)

    calls = kernel_calls(c, kg.k, pattern, huge=kg.huge)
    loose = frozenset(i for i, v in enumerate(results) if v.bank in ("f32", "f64"))
    return FuncOut(sig, fg.text(sig), calls, loose_results=loose)


def kernel_calls(c, k: Kernel, pattern: str, huge: bool = False) -> list[list[int]]:
    """Arguments around the edges of the in-range region, found with `Kernel.fits`. With
    `huge` coefficients an index may wrap around into range, so no call relies on a trap to
    end a long loop."""
    uses_m = any(lp.bound == "m" for lp in k.loops)
    uses_n = any(lp.bound == "n" for lp in k.loops)
    uses_off = any(a.use_off for a in k.accesses)
    sel = c.int(0, 1)
    n0 = c.choice(TRIPS[1:]) if uses_n else 0
    cap = M_CAP if len(k.loops) < 3 else 24

    def mfit(n, off, s):
        if not uses_m:
            return cap if k.fits(cap, n, off, s) else -1
        lo, hi = 0, cap
        if not k.fits(1, n, off, s):
            return 0
        while lo < hi:  # largest m <= cap that fits (fits is monotone in m)
            mid = (lo + hi + 1) // 2
            if k.fits(mid, n, off, s):
                lo = mid
            else:
                hi = mid - 1
        return lo

    best = (-1, 0)
    for off in (range(-2, 80) if uses_off else [0]):
        f = mfit(n0, off, sel)
        if f > best[0]:
            best = (f, off)
    m0, off0 = max(best[0], 0), best[1]
    cands = [(m0, n0, off0, sel)]
    if uses_m and m0 < cap:
        cands.append((m0 + 1, n0, off0, sel))  # traps in the last outer iteration
        if not k.fits(m0 + 1, n0, off0, sel) and not huge:
            cands.append((values.I32_MAX, n0, off0, sel))  # traps at the same place
    for t in (7, 8, 9, 15, 16, 17, 31, 32, 33, 1, 0, -3):
        if t <= m0:
            cands.append((t, n0, off0, sel))
    if uses_n:
        for n1 in (n0 + 1, 2 * n0 + 3, 0, 7, 8, 9, 15, 16, 17):
            if n1 <= 40:
                cands.append((min(m0, 9), n1, off0, sel))
    if uses_off:
        cands.append((m0, n0, off0 - 1, sel))  # one element before the start
        hi = off0
        while hi < off0 + 200 and k.fits(m0, n0, hi + 1, sel):
            hi += 1
        cands.append((m0, n0, hi, sel))
        cands.append((m0, n0, hi + 1, sel))  # one past the end in the last iteration
    cands.append((m0, n0, off0, 1 - sel))  # the other buffers (aliasing changes)
    calls = [list(cands[0])]
    for _ in range(c.int(3, 7)):
        calls.append(list(cands[c.int(0, len(cands) - 1)]))
    return calls
