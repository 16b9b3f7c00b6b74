"""vm.buffer operations; loads and stores are inlined over buffers.BufferView memoryviews.

Offsets of loads, stores and fills count elements of the op's width; copy, compare, hash,
clone and length use bytes. Null (or non-buffer) operands fail with INVALID_ARGUMENT
"<operand> is null" naming the operand as IREE does. Float elements move as bits.
"""

from __future__ import annotations

from ..frontend import isa
from ..frontend.handlers import OpHandlers
from .ops_control import store_ref

handles = OpHandlers("interpreter")  # this family's part of registry.HANDLERS

_LETTER = {1: "B", 2: "H", 4: "I", 8: "Q"}  # BufferView's unsigned view of elements of each width


def _letter(access: isa.Access) -> str:
    """The view an element moves through: signed for sign-extending loads, else as bits."""
    letter = _LETTER[access.width]
    return letter.lower() if access.signed else letter


def open_view(e, reg, what: str) -> str:
    """The name of a local holding the BufferView of the buffer in `reg`.

    Each ref register used by loads and stores has such a local; it is refreshed (from the
    invocation's cache) when the register holds another address than the view's. A view
    keeps its buffer alive until the invocation closes it (its address then reads 0), so
    a matching address is always the same buffer.
    """
    views = e.buffer_views()
    local = e.view_local(reg)
    e.line(f"x = {e.ref(reg)}")
    with e.indented(f"if x != {local}.addr:"):
        e.line(f"{local} = {views}.get(x) or BV(stk, x, {what!r})")
    return local


def _load(e, ins):
    access, bank = ins.op.access, ins.op.type
    width, letter = access.width, _letter(access)
    v = open_view(e, ins["source_buffer"], "source_buffer")
    e.line(f"o = {e.i64(ins['source_offset'])}")
    with e.indented(f"if 0 <= o < {v}.n{width}:"):
        out = e.i32(ins["result"]) if access.signed else e.bits(ins["result"], bank)
        e.line(f"{out} = {v}.{letter}[o]")
    with e.indented("else:"):
        e.raise_(f"OOB({v}, o, {width})")


def _store(e, ins):
    access, bank = ins.op.access, ins.op.type
    width, letter = access.width, _letter(access)
    v = open_view(e, ins["target_buffer"], "target_buffer")
    e.line(f"o = {e.i64(ins['target_offset'])}")
    value = e.bits(ins["value"], bank)
    if access.narrow:
        value = f"{value} & {(1 << (8 * width)) - 1:#x}"
    with e.indented(f"if 0 <= o < {v}.w{width}:"):
        e.line(f"{v}.{letter}[o] = {value}")
    with e.indented("else:"):
        e.raise_(f"STF({v}, o, {width})")


def _fill(e, ins):
    e.line(f"BFILL(stk, {e.ref(ins['target_buffer'])}, {e.i64(ins['target_offset'])}, "
           f"{e.i64(ins['length'])}, {e.bits(ins['value'], ins.op.type)}, {ins.op.access.width})")


_HANDLER = {isa.LOAD: _load, isa.STORE: _store, isa.FILL: _fill}
for _op in isa.OPS.values():
    if _op.kind == isa.BUFFERS and _op.access is not None:
        handles(_op.name)(_HANDLER[_op.access.action])


@handles("buffer.length")
def _length(e, ins):
    v = open_view(e, ins["buffer"], "buffer")
    e.line(f"{e.u64(ins['result'])} = {v}.n")


@handles("buffer.copy")
def _copy(e, ins):
    e.line(f"BCOPY(stk, {e.ref(ins['source_buffer'])}, {e.i64(ins['source_offset'])}, "
           f"{e.ref(ins['target_buffer'])}, {e.i64(ins['target_offset'])}, {e.i64(ins['length'])})")


@handles("buffer.compare")
def _compare(e, ins):
    e.line(f"{e.u32(ins['result'])} = BCMP(stk, {e.ref(ins['lhs_buffer'])}, {e.i64(ins['lhs_offset'])}, "
           f"{e.ref(ins['rhs_buffer'])}, {e.i64(ins['rhs_offset'])}, {e.i64(ins['length'])})")


@handles("buffer.hash")
def _hash(e, ins):
    e.line(f"{e.u64(ins['result'])} = BHASH(stk, {e.ref(ins['source_buffer'])}, "
           f"{e.i64(ins['source_offset'])}, {e.i64(ins['length'])})")


@handles("buffer.alloc")
def _alloc(e, ins):
    e.line(f"x = BALLOC({e.u64(ins['length'])}, {e.u32(ins['alignment'])})")
    store_ref(e, ins["result"], "x")


@handles("buffer.clone")
def _clone(e, ins):
    e.line(f"x = BCLONE(stk, {e.ref(ins['source'])}, {e.i64(ins['offset'])}, {e.i64(ins['length'])}, "
           f"{e.u32(ins['alignment'])})")
    store_ref(e, ins["result"], "x")
