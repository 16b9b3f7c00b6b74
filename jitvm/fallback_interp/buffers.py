"""vm.buffer access for interpreted code: typed views of native buffer memory, IREE's checks.

Buffer loads and stores are the hot path of VMVX kernels, so the generated code indexes
memoryviews of the native bytes directly (one per element width, signed and unsigned) and
only calls into this module on a cache miss or a failure. A `BufferView` holds a reference
to its buffer, so its address cannot be reused while the invocation's `Stack` caches it;
data pointer, length and access rights never change after a buffer is created.

Checks follow IREE (runtime/src/iree/vm/buffer.h): offsets of loads, stores and fills count
elements of the op's width; a store or fill first requires a mutable buffer
(PERMISSION_DENIED), then the whole range inside it (OUT_OF_RANGE). IREE computes the end
offset with wrapping arithmetic; jitvm refuses every access outside the buffer instead.
Messages and trap arguments are the JIT's (runtime.vm.traps), so both backends read alike.
"""

from __future__ import annotations

import ctypes

from ..runtime.native import layout
from ..runtime.vm import nativelib, traps
from ..runtime.vm.hashing import siphash24
from ..runtime.native.layout import BufferT

_M64 = 0xFFFFFFFFFFFFFFFF
_TYPE_ID_OFFSET = layout.field("Object", "type_id").offset
_GUEST = layout.BUFFER_MUTABLE | layout.BUFFER_ORIGIN_GUEST
_CACHE_LIMIT = 256  # open views per invocation before the cache is flushed
_EMPTY = memoryview(b"")



def type_id(addr: int) -> int:
    return ctypes.c_uint32.from_address(addr + _TYPE_ID_OFFSET).value


class BufferView:
    """Typed memoryviews of one vm.buffer's bytes; `n<w>` counts whole elements of width w.

    `w<w>` is the element count when the buffer is mutable and -1 otherwise, so a store's
    single range check also refuses read-only buffers (the failure path tells them apart).
    """

    __slots__ = ("addr", "n", "mutable", "n1", "n2", "n4", "n8", "w1", "w2", "w4", "w8",
                 "B", "b", "H", "h", "I", "i", "Q", "q")

    def __init__(self, addr: int):
        s = BufferT.from_address(addr)
        n = s.length
        self.addr = addr
        self.n = n
        self.mutable = bool(s.access & layout.BUFFER_MUTABLE)
        raw = memoryview((ctypes.c_uint8 * n).from_address(s.data)).cast("B") if n else _EMPTY
        for w, (u, i) in ((1, ("B", "b")), (2, ("H", "h")), (4, ("I", "i")), (8, ("Q", "q"))):
            count = n // w
            part = raw[:count * w]
            setattr(self, u, part.cast(u))
            setattr(self, i, part.cast(i))
            setattr(self, f"n{w}", count)
            setattr(self, f"w{w}", count if self.mutable else -1)
        nativelib.fn.jv_retain(addr)

    def close(self) -> None:
        """Drops the view's reference; its address then matches no register (not even null)."""
        addr, self.addr = self.addr, -1
        if addr > 0:
            nativelib.fn.jv_release(addr)


class NoView:
    """What a buffer-view local holds before its first use: matches no address."""

    __slots__ = ()
    addr = -1


NOVIEW = NoView()


def view(stk, addr: int, what: str) -> BufferView:
    """The cached view of the buffer at `addr`; null or non-buffer refs fail like IREE."""
    if not addr or type_id(addr) != nativelib.BUFFER_TYPE_ID:
        raise traps.make_trap(traps.NULL_REF, message=what)
    views = stk.views
    if len(views) >= _CACHE_LIMIT:
        stk.close()
    v = views[addr] = BufferView(addr)
    return v


# --- failures of the inline fast paths -------------------------------------------------------

def out_of_range(v: BufferView, index: int, width: int) -> BaseException:
    """A load of one element at `index` missed the buffer."""
    return traps.make_trap(traps.BUFFER_OUT_OF_RANGE, (index * width) & _M64, width, width, v.n)


def store_failed(v: BufferView, index: int, width: int) -> BaseException:
    """A store of one element at `index` failed: read-only buffer, or out of range."""
    if not v.mutable:
        return traps.make_trap(traps.BUFFER_READ_ONLY)
    return out_of_range(v, index, width)


def _check_bytes(v: BufferView, offset: int, length: int) -> tuple[int, int]:
    """[offset, offset + length) (unsigned 64-bit values) must lie inside the buffer."""
    offset &= _M64
    length &= _M64
    if offset > v.n or length > v.n - offset:
        raise traps.make_trap(traps.BUFFER_OUT_OF_RANGE, offset, length, 1, v.n)
    return offset, length


# --- whole-buffer operations -----------------------------------------------------------------

def fill(stk, addr: int, index: int, count: int, value: int, width: int) -> None:
    """`vm.buffer.fill.<w>`: `count` elements from element `index`, each the low bytes of `value`."""
    v = stk.views.get(addr) or view(stk, addr, "buffer")
    if not v.mutable:
        raise traps.make_trap(traps.BUFFER_READ_ONLY)
    index &= _M64
    count &= _M64
    limit = v.n // width
    if index > limit or count > limit - index:
        raise traps.make_trap(traps.BUFFER_OUT_OF_RANGE, (index * width) & _M64, (count * width) & _M64,
                              width, v.n)
    if not count:
        return
    start = index * width
    if width == 1:
        ctypes.memset(BufferT.from_address(addr).data + start, value & 0xFF, count)
        return
    v.B[start:start + count * width] = (value & ((1 << (8 * width)) - 1)).to_bytes(width, "little") * count


def copy(stk, src_addr: int, src_offset: int, dst_addr: int, dst_offset: int, length: int) -> None:
    """`vm.buffer.copy` (bytes); overlapping ranges copy as if through a temporary."""
    src = stk.views.get(src_addr) or view(stk, src_addr, "source_buffer")
    dst = stk.views.get(dst_addr) or view(stk, dst_addr, "target_buffer")
    src_offset, length = _check_bytes(src, src_offset, length)
    if not dst.mutable:
        raise traps.make_trap(traps.BUFFER_READ_ONLY)
    dst_offset, length = _check_bytes(dst, dst_offset, length)
    if length:
        dst.B[dst_offset:dst_offset + length] = bytes(src.B[src_offset:src_offset + length])


def compare(stk, lhs_addr: int, lhs_offset: int, rhs_addr: int, rhs_offset: int, length: int) -> int:
    """`vm.buffer.compare`: 1 when the two byte ranges are equal."""
    lhs = stk.views.get(lhs_addr) or view(stk, lhs_addr, "lhs_buffer")
    rhs = stk.views.get(rhs_addr) or view(stk, rhs_addr, "rhs_buffer")
    lhs_offset, length = _check_bytes(lhs, lhs_offset, length)
    rhs_offset, length = _check_bytes(rhs, rhs_offset, length)
    return int(lhs.B[lhs_offset:lhs_offset + length] == rhs.B[rhs_offset:rhs_offset + length])


def hash_range(stk, addr: int, offset: int, length: int) -> int:
    """`vm.buffer.hash`: SipHash-2-4 of the byte range, as an unsigned 64-bit pattern."""
    v = stk.views.get(addr) or view(stk, addr, "source_buffer")
    offset, length = _check_bytes(v, offset, length)
    return siphash24(bytes(v.B[offset:offset + length])) & _M64


def _alignment(alignment: int) -> int:
    a = alignment & 0xFFFFFFFF
    if a & (a - 1):
        raise traps.make_trap(traps.BAD_ALIGNMENT, a)
    return a


def alloc(length: int, alignment: int) -> int:
    """`vm.buffer.alloc`: a new zeroed, mutable guest buffer (an owned reference)."""
    a = _alignment(alignment)
    obj = nativelib.fn.jv_buffer_alloc(length & _M64, a, _GUEST)
    if not obj:
        raise traps.make_trap(traps.OUT_OF_MEMORY, message="buffer allocation")
    return obj


def clone(stk, addr: int, offset: int, length: int, alignment: int) -> int:
    """`vm.buffer.clone`: a new mutable buffer holding a copy of the byte range."""
    src = stk.views.get(addr) or view(stk, addr, "source")
    offset, length = _check_bytes(src, offset, length)
    a = _alignment(alignment)
    obj = nativelib.fn.jv_buffer_alloc(length, a, _GUEST)
    if not obj:
        raise traps.make_trap(traps.OUT_OF_MEMORY, message="buffer clone")
    if length:
        ctypes.memmove(BufferT.from_address(obj).data, BufferT.from_address(addr).data + offset, length)
    return obj
