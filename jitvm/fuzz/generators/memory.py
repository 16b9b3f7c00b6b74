"""Buffers, lists, globals and ref ops; the module state and its observer.

Memory functions are straight-line code with the odd if/else (control.region with the
statement menu below): buffers from vm.buffer.alloc (odd lengths and alignments, bad ones
included), read-only rodata and clones of it; loads and stores of every width at indices
from edge constants, from the buffer's own length (last element, first past the end) or
from any live i64; fills, copies (overlapping when source and target are one buffer),
compares, hashes; lists of every element type (variant lists too) grown, shrunk and
indexed out of range, with refs stored in them; value globals at aligned and misaligned,
in- and out-of-range offsets, direct and indirect; ref globals; ref selects, switches,
compares, casts, assigns (some with the move bit) and discards.

Memory functions use no buffer loads or stores inside loops (kernel.py does), so nothing
here is subject to the NaN-payload tolerance of oracles/differential.py.
"""

from __future__ import annotations

from jitvm.frontend import isa

from . import scalar, values
from .emit import REF_TYPES, VALUE_BANKS, FuncGen, FuncOut, FuncSig, V, emit_op, reg_text, render

GLOBAL_BYTES = 64
MEMORY_REF_GLOBALS = ["buffer", "buffer", "list:i32", "list:any", "buffer"]
LIST_KINDS = ["list:i32", "list:i64", "list:f32", "list:f64", "list:any", "list:buffer"]

EDGE_INDEX = [0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 31, 32, 63, 64, -1, -2, -8, 1 << 31, (1 << 31) - 1, 1 << 32,
              (1 << 32) + 1, values.I64_MAX, values.I64_MIN, 1 << 62, -(1 << 61)]
ALLOC_LENGTHS = [0, 1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 16, 17, 24, 31, 32, 32, 33, 64, 64, 100]
ALIGNMENTS = [0, 1, 2, 4, 8, 16, 32, 64, 128, 3, 12, -1, 1 << 31]
LIST_SIZES = [0, 1, 2, 3, 4, 5, 8, 16, 33]
LIST_INDEX = [0, 1, 2, 3, 4, 7, 8, -1, -2, 1 << 31, 16, 32]
_FAIL_TEXTS = ["", "x", "boom", "bad value", "fail: %d", "status \\\" quoted"]


def declare_state(mg) -> None:
    mg.global_bytes = GLOBAL_BYTES
    mg.ref_globals = list(MEMORY_REF_GLOBALS)
    mg.memory_ref_globals = len(MEMORY_REF_GLOBALS)
    mg.rodata_kinds = []
    for _ in range(mg.c.int(1, 3)):
        n = mg.c.choice([1, 2, 3, 4, 7, 8, 13, 16, 24, 32, 40])
        data = _random_bytes(mg.c, n)
        mg.add_rodata(data)


def _random_bytes(c, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        bank = c.choice(["i32", "f32", "f64", "i64"])
        b = c.bits(bank)
        out += b.to_bytes(values.WIDTH[bank] // 8, "little")
    return bytes(out[:n])


# --- operands ---------------------------------------------------------------------------------

def const_i64(fg: FuncGen, value: int) -> V:
    return fg.small_const("i64", value) if -16 <= value <= 128 else fg.const("i64", value)


def const_i32(fg: FuncGen, value: int) -> V:
    return fg.small_const("i32", value) if -16 <= value <= 128 else fg.const("i32", value)


def risky(fg: FuncGen) -> bool:
    """Whether to take an operand that probably traps (per-function rate `fg.risk` %)."""
    return fg.c.chance(getattr(fg, "risk", 5))


def index(fg: FuncGen, buf: V | None, width: int) -> V:
    """An i64 element index (or byte offset when width is 1) into `buf`: mostly inside it
    (a constant when its length is known, its last element from vm.buffer.length when not);
    now and then (`risky`) an edge, the first element past the end, or any live i64."""
    c = fg.c
    count = None if buf is None or buf.size is None else buf.size // width
    if not risky(fg):
        if count:
            return const_i64(fg, c.int(0, count - 1) if c.chance(80) else count - 1)
        if count is None and buf is not None:
            return _from_length(fg, buf, width, -1)
    r = c.int(0, 99)
    if r < 40 and buf is not None:
        return _from_length(fg, buf, width, c.choice([-1, 0, 0, 1, -2]))
    if r < 80:
        return const_i64(fg, c.choice(EDGE_INDEX))
    if r < 90 and fg.have("i64"):
        return fg.pick("i64")
    return const_i64(fg, c.int(0, 3))


def _from_length(fg: FuncGen, buf: V, width: int, delta: int) -> V:
    """vm.buffer.length in elements of `width`, plus `delta`."""
    n = emit_op(fg, "buffer.length", buffer=buf)
    if width > 1:
        n = emit_op(fg, "shr.i64.u", operand=n, amount=const_i32(fg, width.bit_length() - 1))
    if delta:
        return emit_op(fg, "add.i64", left=n, right=const_i64(fg, delta))
    return n


def _fitting(fg: FuncGen, family: str, buf: V):
    """An op of the family whose element fits in `buf` (any op when risky or unknown)."""
    ops_ = [o for o in isa.OPS.values() if o.family == family]
    if buf.size is not None and not risky(fg):
        fit = [o for o in ops_ if o.access.width <= buf.size]
        ops_ = fit or ops_
    return fg.c.choice(ops_)


def byte_range(fg: FuncGen, buf: V, width: int = 1) -> tuple[V, V, int | None]:
    """(offset, length, known length) in elements of `width` bytes: mostly a range inside
    `buf` when its length is known, else edges and any live i64."""
    c = fg.c
    if buf.size is not None and not risky(fg):
        count = buf.size // width
        off = c.int(0, count)
        n = c.int(0, count - off)
        return const_i64(fg, off), const_i64(fg, n), n
    off = index(fg, buf, width)
    if c.chance(40):
        return off, index(fg, buf, width), None
    n = c.choice([0, 1, 2, 3, 4, 8, 16])
    return off, const_i64(fg, n), n


def buffer(fg: FuncGen, mutable_bias: bool = False) -> V:
    bufs = [v for v in fg.pool["ref"] if v.kind in ("buffer", "rodata")]
    if mutable_bias and not risky(fg):
        bufs = [v for v in bufs if v.kind == "buffer"]
    if bufs and fg.c.chance(85):
        return fg.c.choice(bufs)
    return new_buffer(fg, mutable=mutable_bias)


def new_buffer(fg: FuncGen, mutable: bool = False) -> V:
    c = fg.c
    r = c.int(0, 99)
    if r < 25 and fg.mod.rodata and (not mutable or risky(fg)):
        seg = c.int(0, len(fg.mod.rodata) - 1)
        return emit_op(fg, "const.ref.rodata", out_kind="rodata", out_size=len(fg.mod.rodata[seg]), rodata=seg)
    align = const_i32(fg, c.choice(ALIGNMENTS) if risky(fg) else c.choice([0, 1, 4, 8, 16, 64]))
    if r < 40:
        src = buffer(fg) if fg.pool["ref"] else new_buffer(fg)
        off, length, n = byte_range(fg, src)
        return emit_op(fg, "buffer.clone", out_kind="buffer", out_size=n, source=src, offset=off, length=length,
                       alignment=align)
    if not risky(fg):
        n = c.choice(ALLOC_LENGTHS)
        return emit_op(fg, "buffer.alloc", out_kind="buffer", out_size=n, length=const_i64(fg, n), alignment=align)
    if c.chance(50) and fg.have("i64"):
        length = emit_op(fg, "and.i64", left=fg.pick("i64"), right=const_i64(fg, 63))
    else:
        length = const_i64(fg, c.choice([-1, 1 << 62, values.I64_MIN]))
    return emit_op(fg, "buffer.alloc", out_kind="buffer", length=length, alignment=align)


def a_list(fg: FuncGen, kind: str | None = None) -> V:
    lists = [v for v in fg.pool["ref"] if v.kind.startswith("list") and (kind is None or v.kind == kind)]
    if lists and fg.c.chance(85):
        return fg.c.choice(lists)
    kind = kind or fg.c.choice(LIST_KINDS)
    lst = emit_op(fg, "list.alloc", out_kind=kind, out_size=0, element_type=REF_TYPES[kind][9:-1],
                  initial_capacity=const_i32(fg, fg.c.choice(LIST_SIZES)))
    if fg.c.chance(80):
        n = fg.c.choice(LIST_SIZES[1:])
        emit_op(fg, "list.resize", list=lst, new_size=const_i32(fg, n))
        lst = fg.define("ref", lst.reg, kind=kind, size=n)
    return lst


def list_index(fg: FuncGen, lst: V) -> V:
    c = fg.c
    if lst.size and not risky(fg):
        return const_i32(fg, c.int(0, lst.size - 1))
    if not risky(fg):
        return const_i32(fg, c.int(0, 1))
    if c.chance(60):
        return const_i32(fg, c.choice(LIST_INDEX))
    if c.chance(50) and fg.have("i32"):
        return fg.pick("i32")
    return const_i32(fg, c.int(0, 5))


def list_size(fg: FuncGen) -> tuple[V, int | None]:
    c = fg.c
    if c.chance(85) or not fg.have("i32"):
        n = c.choice(LIST_SIZES)
        return const_i32(fg, n), n
    return emit_op(fg, "and.i32", left=fg.pick("i32"), right=const_i32(fg, 15)), None


def any_ref(fg: FuncGen) -> V:
    if fg.pool["ref"] and fg.c.chance(90):
        return fg.c.choice(fg.pool["ref"])
    return fg.materialize("ref")


def _moves(fg: FuncGen, *names: str) -> frozenset[str]:
    return frozenset(n for n in names if risky(fg))


# --- statements -------------------------------------------------------------------------------

def s_load(fg):
    buf = buffer(fg)
    op = _fitting(fg, "buffer_load", buf)
    w = op.access.width
    emit_op(fg, op.name, source_buffer=buf, source_offset=index(fg, buf, w))


def s_store(fg):
    buf = buffer(fg, mutable_bias=True)
    op = _fitting(fg, "buffer_store", buf)
    w = op.access.width
    emit_op(fg, op.name, target_buffer=buf, target_offset=index(fg, buf, w), value=fg.pick(op.type))


def s_fill(fg):
    buf = buffer(fg, mutable_bias=True)
    op = _fitting(fg, "buffer_fill", buf)
    w = op.access.width
    off, n, _ = byte_range(fg, buf, w)
    emit_op(fg, op.name, target_buffer=buf, target_offset=off, length=n, value=fg.pick(op.type))


def s_copy(fg):
    src = buffer(fg)
    dst = src if fg.c.chance(30) and src.kind == "buffer" else buffer(fg, mutable_bias=True)
    soff, n, known = byte_range(fg, src)
    if known is not None and dst.size is not None and fg.c.chance(80):
        doff = const_i64(fg, fg.c.int(0, max(0, dst.size - known)))
    else:
        doff = index(fg, dst, 1)
    emit_op(fg, "buffer.copy", source_buffer=src, source_offset=soff, target_buffer=dst, target_offset=doff, length=n)


def s_compare(fg):
    a = buffer(fg)
    b = a if fg.c.chance(25) else buffer(fg)
    aoff, n, known = byte_range(fg, a)
    if known is not None and b.size is not None and fg.c.chance(80):
        boff = const_i64(fg, fg.c.int(0, max(0, b.size - known)))
    else:
        boff = index(fg, b, 1)
    emit_op(fg, "buffer.compare", lhs_buffer=a, lhs_offset=aoff, rhs_buffer=b, rhs_offset=boff, length=n)


def s_hash(fg):
    a = buffer(fg)
    off, n, _ = byte_range(fg, a)
    emit_op(fg, "buffer.hash", source_buffer=a, source_offset=off, length=n)


def s_length(fg):
    emit_op(fg, "buffer.length", buffer=buffer(fg))


def s_new_buffer(fg):
    new_buffer(fg)


def s_list_new(fg):
    a_list(fg, fg.c.choice(LIST_KINDS))


def s_list_size_ops(fg):
    lst = a_list(fg)
    r = fg.c.int(0, 2)
    if r == 0:
        size, n = list_size(fg)
        emit_op(fg, "list.resize", list=lst, new_size=size)
        fg.define("ref", lst.reg, kind=lst.kind, size=n)
    elif r == 1:
        emit_op(fg, "list.reserve", list=lst, minimum_capacity=list_size(fg)[0])
    else:
        emit_op(fg, "list.size", list=lst)


def s_list_value(fg):
    lst = a_list(fg, None if risky(fg) else fg.c.choice(["list:i32", "list:i64", "list:f32", "list:f64", "list:any"]))
    bank = lst.kind[5:] if lst.kind[5:] in VALUE_BANKS and not risky(fg) else fg.c.choice(VALUE_BANKS)
    if fg.c.chance(50):
        emit_op(fg, f"list.set.{bank}", list=lst, index=list_index(fg, lst), value=fg.pick(bank))
    else:
        emit_op(fg, f"list.get.{bank}", list=lst, index=list_index(fg, lst))


def s_list_ref(fg):
    lst = a_list(fg, fg.c.choice(["list:buffer", "list:any", None]))
    if fg.c.chance(50):
        fits = [v for v in fg.pool["ref"] if lst.kind == "list:any" or v.kind in ("buffer", "rodata", "null")]
        value = fg.c.choice(fits) if fits and not risky(fg) else any_ref(fg)
        emit_op(fg, "list.set.ref", move=_moves(fg, "value"), list=lst, index=list_index(fg, lst), value=value)
    else:
        kind = "buffer" if not risky(fg) else fg.c.choice(["buffer", "list:i32", "list:any"])
        emit_op(fg, "list.get.ref", out_kind=kind, list=lst, index=list_index(fg, lst), type_def=REF_TYPES[kind])


def s_global_value(fg):
    c = fg.c
    bank = c.choice(VALUE_BANKS)
    w = values.WIDTH[bank] // 8
    if c.chance(50):
        off = c.int(0, GLOBAL_BYTES // w - 1) * w
        if c.chance(50):
            emit_op(fg, f"global.store.{bank}", byte_offset=off, value=fg.pick(bank))
        else:
            emit_op(fg, f"global.load.{bank}", byte_offset=off)
        return
    r = c.int(0, 99)
    if r < 75:
        off = const_i32(fg, c.int(0, GLOBAL_BYTES // w - 1) * w)
    elif r < 92:  # misaligned, just past the end, negative, huge
        off = const_i32(fg, c.choice([GLOBAL_BYTES - w + 4, GLOBAL_BYTES, 1, 2, 3, 6, 61, -4, -8, 1 << 31, 4]))
    else:
        off = fg.pick("i32")
    if c.chance(50):
        emit_op(fg, f"global.store.indirect.{bank}", byte_offset=off, value=fg.pick(bank))
    else:
        emit_op(fg, f"global.load.indirect.{bank}", byte_offset=off)


def s_global_ref(fg):
    c = fg.c
    mg = fg.mod
    k = c.int(0, mg.memory_ref_globals - 1)
    kind = mg.ref_globals[k]
    tdef = REF_TYPES[kind]
    indirect = c.chance(40)
    if indirect:
        same = [i for i in range(mg.memory_ref_globals) if mg.ref_globals[i][:4] == kind[:4]]
        slot = const_i32(fg, c.choice(same) if not risky(fg) else c.choice([len(mg.ref_globals), 1 << 16, -1]))
    if c.chance(50):
        matching = [v for v in fg.pool["ref"] if v.kind[:4] == kind[:4] or v.kind == "null"]
        value = c.choice(matching) if matching and not risky(fg) else any_ref(fg)
        if indirect:
            emit_op(fg, "global.store.indirect.ref", move=_moves(fg, "value"), value=value, type_def=tdef, **{"global": slot})
        else:
            emit_op(fg, "global.store.ref", move=_moves(fg, "value"), value=value, type_def=tdef, **{"global": k})
    else:
        if indirect:
            emit_op(fg, "global.load.indirect.ref", out_kind=kind, type_def=tdef, **{"global": slot})
        else:
            emit_op(fg, "global.load.ref", out_kind=kind, type_def=tdef, **{"global": k})


def s_ref_misc(fg):
    c = fg.c
    r = c.int(0, 6)
    if r == 0:
        a, b = any_ref(fg), any_ref(fg)
        emit_op(fg, "select.ref", out_kind=a.kind if a.kind == b.kind else "mixed", move=_moves(fg, "true_value"),
                condition=fg.pick("i32"), true_value=a, false_value=b, type_def=REF_TYPES["buffer"])
    elif r == 1:
        vs = [any_ref(fg) for _ in range(c.int(0, 3))]
        d = any_ref(fg)
        emit_op(fg, "switch.ref", out_kind="mixed", index=const_i32(fg, c.choice([0, 1, 2, 3, -1])) if c.chance(60)
                else fg.pick("i32"), default_value=d, values=vs, type_def=REF_TYPES["buffer"])
    elif r == 2:
        name = c.choice(["cmp.eq.ref", "cmp.ne.ref"])
        emit_op(fg, name, left=any_ref(fg), right=any_ref(fg))
    elif r == 3:
        emit_op(fg, "cmp.nz.ref", operand=any_ref(fg))
    elif r == 4:
        v = any_ref(fg)
        emit_op(fg, "assign.ref", out_kind=v.kind, move=_moves(fg, "source"), source=v)
    elif r == 5:
        v = any_ref(fg)
        kind = (v.kind if v.kind in REF_TYPES else "buffer") if not risky(fg) else \
            c.choice(["buffer", "list:i32", "list:any"])
        emit_op(fg, "cast.any.ref", out_kind=kind, move=_moves(fg, "operand"), operand=v, result_type=REF_TYPES[kind])
    else:
        vs = fg.pool["ref"][:]
        if vs:
            chosen = [c.choice(vs) for _ in range(c.int(1, 2))]
            regs = sorted({v.reg for v in chosen})
            fg.line(render(isa.op("discard.refs"), refs=", ".join(reg_text("ref", r) for r in regs)))
            for r_ in regs:
                fg.define("ref", r_, kind="null")


def s_pure(fg):
    scalar.pure_statement(fg, allow_traps=fg.c.chance(30))


MENU = [(14, s_load), (12, s_store), (5, s_fill), (6, s_copy), (4, s_compare), (3, s_hash), (3, s_length),
        (5, s_new_buffer), (3, s_list_new), (5, s_list_size_ops), (8, s_list_value), (5, s_list_ref),
        (8, s_global_value), (5, s_global_ref), (6, s_ref_misc), (10, s_pure)]


def memory_function(mg, name: str | None = None) -> FuncOut:
    """Buffer, list, global and ref statements. One in four takes buffer arguments: it is
    not called from the test, only by the memory functions generated after it."""
    from . import control

    c = mg.c
    args = [c.choice(VALUE_BANKS) for _ in range(c.int(0, 3))]
    internal = c.chance(25)
    if internal:
        args += ["ref"] * c.int(1, 2)
    fg = FuncGen(mg, name or mg.name("m"), args)
    fg.result_banks = None
    fg.risk = c.choice([0, 1, 3, 8])
    fg.ref_params = True
    control.region(fg, depth=1, budget=c.int(2, 18), menu=MENU + [(4, control.s_if), (3, control.s_call)])
    results = scalar.result_values(fg, 8)
    refs = [v for v in fg.pool["ref"]][-4:]
    sig = fg.returns(results + refs)
    calls = [] if internal else [[c.scalar(b) for b in args] for _ in range(3 if args else 2)]
    return FuncOut(sig, fg.text(sig), calls)


def setup_state(fg: FuncGen) -> None:
    """Puts a fresh buffer or list of known size in every memory ref global."""
    mg = fg.mod
    for k in range(mg.memory_ref_globals):
        kind = mg.ref_globals[k]
        if kind == "buffer":
            n = fg.c.choice([8, 16, 24, 32, 64])
            v = emit_op(fg, "buffer.alloc", out_kind="buffer", length=const_i64(fg, n), alignment=const_i32(fg, 16))
        else:
            v = emit_op(fg, "list.alloc", out_kind=kind, element_type=REF_TYPES[kind][9:-1],
                        initial_capacity=const_i32(fg, 4))
            emit_op(fg, "list.resize", list=v, new_size=const_i32(fg, 4))
        emit_op(fg, "global.store.ref", value=v, type_def=REF_TYPES[kind], **{"global": k})


def observe_function(mg) -> FuncOut:
    """Returns the whole module state: value globals as i64 words, then every ref global."""
    fg = FuncGen(mg, "observe", [])
    fg.fresh_only = True
    vals = []
    for off in range(0, mg.global_bytes, 8):
        vals.append(emit_op(fg, "global.load.i64", byte_offset=off))
    for k, kind in enumerate(mg.ref_globals):
        vals.append(emit_op(fg, "global.load.ref", out_kind=kind, type_def=REF_TYPES[kind], **{"global": k}))
    sig = fg.returns(vals)
    return FuncOut(sig, fg.text(sig), [])


__all__ = ["FuncSig", "declare_state", "memory_function", "observe_function"]
