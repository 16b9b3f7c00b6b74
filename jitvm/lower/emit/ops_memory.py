"""Globals and vm.buffer operations.

Direct global accesses were proven in range and aligned by the verifier; indirect ones
are checked here like IREE does. Buffer accesses take element indices; an access traps
unless the whole element lies inside the buffer (IREE computes the end offset with
wrapping arithmetic; jitvm refuses any access outside the buffer instead of wrapping).
Buffer data pointers and lengths never change after creation, so their loads are marked
invariant: LLVM may hoist them out of loops.
"""

from __future__ import annotations

from ...frontend import isa
from ...frontend.handlers import OpHandlers
from ...runtime.native import ir

from ...runtime.native import layout
from ...runtime.vm import nativelib, traps
from .types import BANK_TYPE, I8, I16, I32, I64, PTR, const, offset_of

lowers = OpHandlers("lowering")  # this family's part of registry.LOWERINGS

_IR = {"i8": I8, "i16": I16, "i32": I32, "i64": I64, "f32": BANK_TYPE["f32"], "f64": BANK_TYPE["f64"]}


def _invariant(e, instr):
    instr.set_metadata("invariant.load", e.mod.module.add_metadata([]))
    return instr


def _field(e, obj, struct: str, name: str, ty, invariant: bool = True):
    p = e.b.gep(obj, [const(I64, offset_of(struct, name))], source_etype=I8, inbounds=True)
    v = e.b.load(p, typ=ty)
    return _invariant(e, v) if invariant else v


# --- globals ------------------------------------------------------------------------------------

def _rwdata(e):
    return _invariant(e, e.b.load(e.b.gep(e.state, [const(I64, offset_of("ModuleState", "rwdata"))],
                                          source_etype=I8, inbounds=True), typ=PTR))


def _global_ptr(e, byte_offset):
    return e.b.gep(_rwdata(e), [byte_offset], source_etype=I8, inbounds=True)


def _indirect_global_ptr(e, reg, width: int):
    offset = e.b.zext(e.i32(reg), I64)
    size_ptr = e.b.gep(e.state, [const(I64, offset_of("ModuleState", "rwdata_size"))], source_etype=I8)
    size = _invariant(e, e.b.load(size_ptr, typ=I64))
    ok = e.b.icmp_unsigned("<=", e.b.add(offset, const(I64, width)), size)
    e.check(ok, traps.GLOBAL_OUT_OF_RANGE, [offset, size])
    return _global_ptr(e, offset)


def _global_load(e, ins):
    ty = ins.op.type
    v = e.b.load(_global_ptr(e, const(I64, ins["byte_offset"])), typ=BANK_TYPE[ty])
    v.align = ins.op.access.width
    e.set(ins["result"], v, ty)


def _global_store(e, ins):
    ty = ins.op.type
    st = e.b.store(e.get(ins["value"], ty), _global_ptr(e, const(I64, ins["byte_offset"])))
    st.align = ins.op.access.width


def _global_load_indirect(e, ins):
    ty = ins.op.type
    v = e.b.load(_indirect_global_ptr(e, ins["byte_offset"], ins.op.access.width), typ=BANK_TYPE[ty])
    v.align = 1
    e.set(ins["result"], v, ty)


def _global_store_indirect(e, ins):
    ty = ins.op.type
    st = e.b.store(e.get(ins["value"], ty), _indirect_global_ptr(e, ins["byte_offset"], ins.op.access.width))
    st.align = 1


_GLOBAL_LOWERING = {  # (action, indirect) -> lowering of a value global's load or store (refs: ops_refs)
    (isa.LOAD, False): _global_load, (isa.STORE, False): _global_store,
    (isa.LOAD, True): _global_load_indirect, (isa.STORE, True): _global_store_indirect,
}


# --- buffers ------------------------------------------------------------------------------------

class BufferView:
    """A checked-non-null vm.buffer operand: its object, data pointer and length.

    The facts are loaded from the register's shadow (maintained on every write of the
    register) when first used: a proven access needs the data pointer alone, and a jammed
    nest has thousands of them."""

    def __init__(self, e, reg, what: str):
        self._e, self._reg, self._facts = e, reg, {}
        self.proven = e.index in e.unchecked  # a loop guard checked this access for all iterations
        if not self.proven:
            e.check(self._fact("ok"), traps.NULL_REF, message=what)

    def _fact(self, name: str):
        if name not in self._facts:
            self._facts[name] = self._e.buffer_field(self._reg, name)
        return self._facts[name]

    @property
    def data(self):
        return self._fact("data")

    @property
    def length(self):
        return self._fact("length")

    @property
    def access(self):
        return self._fact("access")

    def check_mutable(self, e) -> None:
        if self.proven:
            return
        ok = e.b.icmp_unsigned("!=", e.b.and_(self.access, const(I32, layout.BUFFER_MUTABLE)), const(I32, 0))
        e.check(ok, traps.BUFFER_READ_ONLY)

    def check_range(self, e, byte_offset, byte_length, alignment: int) -> None:
        """Traps unless [byte_offset, byte_offset + byte_length) lies inside the buffer."""
        b = e.b
        ok = b.and_(b.icmp_unsigned("<=", byte_offset, self.length),
                    b.icmp_unsigned("<=", byte_length, b.sub(self.length, byte_offset)))
        e.check(ok, traps.BUFFER_OUT_OF_RANGE, [byte_offset, byte_length, alignment, self.length])

    def check_elements(self, e, index, count, width: int):
        """Checks elements [index, index + count) and returns the byte offset of `index`."""
        b = e.b
        limit = b.lshr(self.length, const(I64, width.bit_length() - 1)) if width > 1 else self.length
        ok = b.and_(b.icmp_unsigned("<=", index, limit), b.icmp_unsigned("<=", count, b.sub(limit, index)))
        byte_offset = b.mul(index, const(I64, width))
        e.check(ok, traps.BUFFER_OUT_OF_RANGE,
                [byte_offset, b.mul(count, const(I64, width)), width, self.length])
        return byte_offset

    def element_ptr(self, e, index, width: int):
        """Checks one element at `index` and returns its address."""
        b = e.b
        if self.proven:
            data = self.data
            repacked = e.repacked.get(e.index)
            if repacked is not None:  # a load from the nest's own copy of the data (lower.loops.pack)
                data, packed = repacked
                index = e.proven_index(e, packed)
            elif e.proven_index is not None:  # set by the loop optimiser (lower.loops.copies)
                index = e.proven_index(e, e.unchecked[e.index])
            byte_offset = b.mul(index, const(I64, width), flags=["nsw", "nuw"])
            return b.gep(data, [byte_offset], source_etype=I8, inbounds=True)
        byte_offset = b.mul(index, const(I64, width))
        limit = b.lshr(self.length, const(I64, width.bit_length() - 1)) if width > 1 else self.length
        e.check(b.icmp_unsigned("<", index, limit), traps.BUFFER_OUT_OF_RANGE,
                [byte_offset, width, width, self.length])
        return b.gep(self.data, [byte_offset], source_etype=I8, inbounds=True)


def _scoped(e, instr, reg) -> None:
    """Alias-scope metadata for accesses the guard proved to disjoint buffers."""
    md = e.alias.get((reg.index, e.jam_copy)) or e.alias.get((reg.index, None))
    if md is not None and e.index in e.unchecked:
        instr.set_metadata("alias.scope", md[0])
        instr.set_metadata("noalias", md[1])


def _load(e, ins):
    access = ins.op.access
    buf = BufferView(e, ins["source_buffer"], "source_buffer")
    ptr = buf.element_ptr(e, e.i64(ins["source_offset"]), access.width)
    v = e.b.load(ptr, typ=_IR[access.element])
    v.align = 1
    _scoped(e, v, ins["source_buffer"])
    if access.narrow:
        v = (e.b.sext if access.signed else e.b.zext)(v, I32)
    e.set(ins["result"], v, ins.op.type)


def _store(e, ins):
    access = ins.op.access
    buf = BufferView(e, ins["target_buffer"], "target_buffer")
    buf.check_mutable(e)
    ptr = buf.element_ptr(e, e.i64(ins["target_offset"]), access.width)
    v = e.get(ins["value"], ins.op.type)
    if access.narrow:
        v = e.b.trunc(v, _IR[access.element])
    st = e.b.store(v, ptr)
    st.align = 1
    _scoped(e, st, ins["target_buffer"])


def _fill(e, ins):
    access = ins.op.access
    b = e.b
    width = access.width
    buf = BufferView(e, ins["target_buffer"], "buffer")
    buf.check_mutable(e)
    index, count = e.i64(ins["target_offset"]), e.i64(ins["length"])
    start = buf.check_elements(e, index, count, width)
    value = e.get(ins["value"], ins.op.type)
    if access.narrow:
        value = b.trunc(value, _IR[access.element])
    base = b.gep(buf.data, [start], source_etype=I8, inbounds=True)
    if width == 1:
        b.call(e.mod.intrinsic_memset(), [base, value, count, const(ir.IntType(1), 0)])
        return
    loop_each(e, count, lambda i: _store_at(e, base, i, value, access.element))


_BUFFER_LOWERING = {isa.LOAD: _load, isa.STORE: _store, isa.FILL: _fill}


def _store_at(e, base, i, value, mem):
    st = e.b.store(value, e.b.gep(base, [i], source_etype=_IR[mem], inbounds=True))
    st.align = 1


def loop_each(e, count, body) -> None:
    """Emits `for (i = 0; i < count; ++i) body(i)` with i an i64."""
    b = e.b
    head = e.fn.append_basic_block(f"loop_pc{e.pc}")
    step = e.fn.append_basic_block(f"loop_body_pc{e.pc}")
    done = e.fn.append_basic_block(f"loop_done_pc{e.pc}")
    pre = b.block
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64)
    i.add_incoming(const(I64, 0), pre)
    b.cbranch(b.icmp_unsigned("<", i, count), step, done)
    b.position_at_end(step)
    body(i)
    nxt = b.add(i, const(I64, 1))
    i.add_incoming(nxt, b.block)
    b.branch(head)
    b.position_at_end(done)


for _op in isa.OPS.values():
    if _op.kind == isa.BUFFERS and _op.access is not None:
        lowers(_op.name)(_BUFFER_LOWERING[_op.access.action])
    elif _op.kind == isa.GLOBALS and _op.access.element != "ref":
        lowers(_op.name)(_GLOBAL_LOWERING[_op.access.action, _op.access.indirect])


@lowers("buffer.length")
def _length(e, ins):
    buf = BufferView(e, ins["buffer"], "buffer")
    e.set(ins["result"], buf.length, "i64")


@lowers("buffer.copy")
def _copy(e, ins):
    src = BufferView(e, ins["source_buffer"], "source_buffer")
    dst = BufferView(e, ins["target_buffer"], "target_buffer")
    src_off, dst_off, length = e.i64(ins["source_offset"]), e.i64(ins["target_offset"]), e.i64(ins["length"])
    src.check_range(e, src_off, length, 1)
    dst.check_mutable(e)
    dst.check_range(e, dst_off, length, 1)
    b = e.b
    memmove = e.mod.intrinsic("llvm.memmove.p0.p0.i64", ir.VoidType(), [PTR, PTR, I64, ir.IntType(1)])
    b.call(memmove, [b.gep(dst.data, [dst_off], source_etype=I8), b.gep(src.data, [src_off], source_etype=I8),
                     length, const(ir.IntType(1), 0)])


@lowers("buffer.compare")
def _compare(e, ins):
    lhs = BufferView(e, ins["lhs_buffer"], "lhs_buffer")
    rhs = BufferView(e, ins["rhs_buffer"], "rhs_buffer")
    lo, ro, length = e.i64(ins["lhs_offset"]), e.i64(ins["rhs_offset"]), e.i64(ins["length"])
    lhs.check_range(e, lo, length, 1)
    rhs.check_range(e, ro, length, 1)
    b = e.b
    memcmp = e.mod.intrinsic("memcmp", I32, [PTR, PTR, I64])
    r = b.call(memcmp, [b.gep(lhs.data, [lo], source_etype=I8), b.gep(rhs.data, [ro], source_etype=I8), length])
    e.set(ins["result"], b.zext(b.icmp_signed("==", r, const(I32, 0)), I32), "i32")


@lowers("buffer.hash")
def _hash(e, ins):
    buf = BufferView(e, ins["source_buffer"], "source_buffer")
    off, length = e.i64(ins["source_offset"]), e.i64(ins["length"])
    buf.check_range(e, off, length, 1)
    h = e.b.call(e.runtime("jv_siphash24"), [e.b.gep(buf.data, [off], source_etype=I8), length])
    e.set(ins["result"], h, "i64")


def _alloc_result(e, ins, obj) -> None:
    e.check(e.b.icmp_unsigned("!=", obj, const(PTR, None)), traps.OUT_OF_MEMORY, message="buffer allocation")
    e.set_ref(ins["result"], obj)


def _alignment(e, reg):
    """IREE's allocation alignment: 0 means the default; otherwise a power of two."""
    b = e.b
    a = b.zext(e.i32(reg), I64)
    pow2 = b.icmp_unsigned("==", b.and_(a, b.sub(a, const(I64, 1))), const(I64, 0))
    e.check(pow2, traps.BAD_ALIGNMENT, [a])
    return a


_GUEST = layout.BUFFER_MUTABLE | layout.BUFFER_ORIGIN_GUEST


@lowers("buffer.alloc")
def _alloc(e, ins):
    length = e.i64(ins["length"])
    align = _alignment(e, ins["alignment"])
    obj = e.b.call(e.runtime("jv_buffer_alloc"), [length, align, const(I32, _GUEST)])
    _alloc_result(e, ins, obj)


@lowers("buffer.clone")
def _clone(e, ins):
    src = BufferView(e, ins["source"], "source")
    off, length = e.i64(ins["offset"]), e.i64(ins["length"])
    src.check_range(e, off, length, 1)
    align = _alignment(e, ins["alignment"])
    b = e.b
    obj = b.call(e.runtime("jv_buffer_alloc"), [length, align, const(I32, _GUEST)])
    e.check(b.icmp_unsigned("!=", obj, const(PTR, None)), traps.OUT_OF_MEMORY, message="buffer clone")
    data = _field(e, obj, "Buffer", "data", PTR, invariant=False)
    memcpy = e.mod.intrinsic("llvm.memcpy.p0.p0.i64", ir.VoidType(), [PTR, PTR, I64, ir.IntType(1)])
    b.call(memcpy, [data, b.gep(src.data, [off], source_etype=I8), length, const(ir.IntType(1), 0)])
    e.set_ref(ins["result"], obj)


@lowers("const.ref.rodata")
def _rodata(e, ins):
    table = _invariant(e, e.b.load(e.b.gep(e.state, [const(I64, offset_of("ModuleState", "rodata"))],
                                           source_etype=I8, inbounds=True), typ=PTR))
    obj = _invariant(e, e.b.load(e.b.gep(table, [const(I64, ins["rodata"])], source_etype=PTR), typ=PTR))
    e.retain(obj)
    e.set_ref(ins["value"], obj)
