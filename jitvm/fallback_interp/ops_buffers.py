"""vm.buffer operations; loads and stores are inlined over buffers.BufferView memoryviews.

Offsets of loads, stores and fills count elements of the op's width; copy, compare, hash,
clone and length use bytes. Null (or non-buffer) operands fail with INVALID_ARGUMENT
"<operand> is null" naming the operand as IREE does. Float elements move as bits.
"""

from __future__ import annotations

from ..frontend.handlers import OpHandlers
from .ops_control import store_ref

handles = OpHandlers("interpreter")  # this family's part of registry.HANDLERS

# op -> (element width, view letter of the element, register bank of the value)
_LOADS = {
    "buffer.load.i8.u": (1, "B", "i32"), "buffer.load.i8.s": (1, "b", "i32"),
    "buffer.load.i16.u": (2, "H", "i32"), "buffer.load.i16.s": (2, "h", "i32"),
    "buffer.load.i32": (4, "I", "i32"), "buffer.load.i64": (8, "Q", "i64"),
    "buffer.load.f32": (4, "I", "f32"), "buffer.load.f64": (8, "Q", "f64"),
}
_STORES = {
    "buffer.store.i8": (1, "B", "i32"), "buffer.store.i16": (2, "H", "i32"),
    "buffer.store.i32": (4, "I", "i32"), "buffer.store.i64": (8, "Q", "i64"),
    "buffer.store.f32": (4, "I", "f32"), "buffer.store.f64": (8, "Q", "f64"),
}
_FILLS = {"buffer.fill.i8": 1, "buffer.fill.i16": 2, "buffer.fill.i32": 4, "buffer.fill.i64": 8,
          "buffer.fill.f32": 4, "buffer.fill.f64": 8}


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


def _load(width: int, letter: str, bank: str):
    def emit(e, ins):
        v = open_view(e, ins["source_buffer"], "source_buffer")
        e.line(f"o = {e.i64(ins['source_offset'])}")
        with e.indented(f"if 0 <= o < {v}.n{width}:"):
            out = e.i32(ins["result"]) if letter in ("b", "h") else e.bits(ins["result"], bank)
            e.line(f"{out} = {v}.{letter}[o]")
        with e.indented("else:"):
            e.raise_(f"OOB({v}, o, {width})")
    return emit


def _store(width: int, letter: str, bank: str):
    def emit(e, ins):
        v = open_view(e, ins["target_buffer"], "target_buffer")
        e.line(f"o = {e.i64(ins['target_offset'])}")
        value = e.bits(ins["value"], bank)
        if width < 4:
            value = f"{value} & {(1 << (8 * width)) - 1:#x}"
        with e.indented(f"if 0 <= o < {v}.w{width}:"):
            e.line(f"{v}.{letter}[o] = {value}")
        with e.indented("else:"):
            e.raise_(f"STF({v}, o, {width})")
    return emit


def _fill(width: int):
    def emit(e, ins):
        bank = ins.op.type
        e.line(f"BFILL(stk, {e.ref(ins['target_buffer'])}, {e.i64(ins['target_offset'])}, "
               f"{e.i64(ins['length'])}, {e.bits(ins['value'], bank)}, {width})")
    return emit


for _n, _spec in _LOADS.items():
    handles(_n)(_load(*_spec))
for _n, _spec in _STORES.items():
    handles(_n)(_store(*_spec))
for _n, _w in _FILLS.items():
    handles(_n)(_fill(_w))


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
