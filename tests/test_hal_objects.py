"""The hal module's exports called directly, as a program's imports would call them.

Each test drives the exports through their declared calling conventions (PythonFunction.call,
the path both backends use) and checks IREE's semantics: ranges, access rights, ref type
checks, fences, command buffer record/replay with binding tables, and queue ordering.
"""

from __future__ import annotations

import os
import struct
import sys

import numpy as np
import pytest

from jitvm import Trap
from jitvm.errors import STATUS_CODES
from jitvm.runtime.native import layout
from jitvm.runtime.modules import HalModule
from jitvm.runtime.modules.hal import types as t
from jitvm.runtime.vm.objects import VmBuffer

F32 = t.element_type(t.NUMERICAL_FLOAT_IEEE, 32)
I32 = t.element_type(t.NUMERICAL_INTEGER, 32)
SI32 = t.element_type(t.NUMERICAL_INTEGER_SIGNED, 32)
DEVICE_LOCAL = t.MEMORY_TYPE_DEVICE_LOCAL
USAGE = t.USAGE_DEFAULT


@pytest.fixture
def hal():
    return HalModule(None)  # no executables here: any backend object will do


def call(hal, name, *args):
    fn = hal.lookup(name)
    assert fn is not None, name
    out = fn.call(list(args))
    return out[0] if len(out) == 1 else (tuple(out) if out else None)


def text(s: str) -> VmBuffer:
    return VmBuffer.from_bytes(s.encode(), access=layout.BUFFER_ORIGIN_MODULE)


def status(exc) -> str:
    return {v: k for k, v in STATUS_CODES.items()}[exc.value.status]


def device(hal):
    return call(hal, "devices.get", 0)


def allocator(hal):
    return call(hal, "device.allocator", device(hal))


def alloc(hal, n, usage=USAGE):
    return call(hal, "allocator.allocate", allocator(hal), -1, DEVICE_LOCAL, usage, n)


def contents(buf_ref, dtype=np.uint8):
    return np.frombuffer(buf_ref.payload.read(0, buf_ref.payload.byte_length), dtype=dtype)


# --- devices -----------------------------------------------------------------------------------

def test_one_local_sync_device_answers_the_compilers_queries(hal):
    assert call(hal, "devices.count") == 1
    dev = device(hal)
    assert dev.type_name == "hal.device"
    assert call(hal, "devices.get", 1) is None
    q = lambda cat, key: call(hal, "device.query.i64", dev, text(cat), text(key))  # noqa: E731
    assert q("hal.device.id", "local*") == (1, 1)
    assert q("hal.device.id", "vulkan*") == (1, 0)
    assert q("hal.executable.format", "vmvx-bytecode-fb") == (1, 1)
    from jitvm.runtime.modules.hal import formats
    assert q("hal.executable.format", formats.embedded_prefix()) == (1, 1)  # llvm-cpu (issue 21)
    assert q("hal.executable.format", "embedded-elf-riscv_64") == (1, 0)  # another architecture
    assert q("hal.device", "concurrency") == (1, 1)
    assert q("hal.device", "no.such.key") == (0, 0)


def test_wrong_ref_type_is_a_readable_trap(hal):
    with pytest.raises(Trap, match=r"hal.device.allocator: expected !hal.device, got !vm.buffer") as e:
        call(hal, "device.allocator", text("x"))
    assert status(e) == "INVALID_ARGUMENT"
    with pytest.raises(Trap, match="expected !hal.buffer, got null"):
        call(hal, "buffer.length", None)


# --- buffers -----------------------------------------------------------------------------------

def test_allocation_is_zeroed_host_visible_and_mappable(hal):
    buf = alloc(hal, 64)
    b = buf.payload
    assert call(hal, "buffer.length", buf) == 64
    assert b.memory_type & t.MEMORY_TYPE_HOST_VISIBLE and b.memory_type & t.MEMORY_TYPE_DEVICE_VISIBLE
    assert not b.memory_type & t.MEMORY_TYPE_OPTIMAL
    assert b.allowed_usage & t.USAGE_MAPPING_SCOPED and b.allowed_usage & USAGE == USAGE
    assert not contents(buf).any()
    assert b.memory.data_address % 64 == 0


def test_load_store_are_little_endian_and_bounds_checked(hal):
    buf = alloc(hal, 8)
    call(hal, "buffer.store", 0x11223344, buf, 2, 4)
    assert contents(buf).tolist() == [0, 0, 0x44, 0x33, 0x22, 0x11, 0, 0]
    assert call(hal, "buffer.load", buf, 2, 2) == 0x3344
    assert call(hal, "buffer.load", buf, 2, 4) == 0x11223344
    call(hal, "buffer.store", -1, buf, 0, 1)
    assert call(hal, "buffer.load", buf, 0, 1) == 0xFF  # zero-extended
    with pytest.raises(Trap, match=r"store out of bounds \(target_offset=6, length=4 into max 8\)") as e:
        call(hal, "buffer.store", 1, buf, 6, 4)
    assert status(e) == "OUT_OF_RANGE"
    with pytest.raises(Trap, match="load length byte count 8 exceeds max"):
        call(hal, "buffer.load", buf, 0, 8)
    with pytest.raises(Trap, match="outside of the valid buffer range") as e:
        call(hal, "buffer.load", buf, 6, 4)
    assert status(e) == "OUT_OF_RANGE"


def test_subspans_alias_the_allocation_and_check_ranges(hal):
    buf = alloc(hal, 32)
    sub = call(hal, "buffer.subspan", buf, 8, 16)
    assert call(hal, "buffer.length", sub) == 16
    call(hal, "buffer.store", 0x7F, sub, 0, 1)
    assert contents(buf)[8] == 0x7F
    assert call(hal, "buffer.subspan", buf, 0, -1) == buf  # the whole buffer is the buffer itself
    subsub = call(hal, "buffer.subspan", sub, 4, -1)  # WHOLE_BUFFER: the rest
    assert call(hal, "buffer.length", subsub) == 12
    assert subsub.payload.allocated == buf  # subspans of subspans point at the allocation (views: same object)
    with pytest.raises(Trap, match=r"invalid subspan of an existing buffer \(source_offset=8, length=32\)") as e:
        call(hal, "buffer.subspan", buf, 8, 32)
    assert status(e) == "OUT_OF_RANGE"
    del buf
    assert call(hal, "buffer.load", sub, 0, 1) == 0x7F  # a subspan keeps its allocation alive


def test_buffer_assert_checks_length_memory_type_and_usage(hal):
    buf = alloc(hal, 16, usage=t.USAGE_TRANSFER)
    alloc_ref = allocator(hal)
    call(hal, "buffer.assert", buf, text("input0"), alloc_ref, 16, t.MEMORY_TYPE_DEVICE_VISIBLE, t.USAGE_TRANSFER)
    with pytest.raises(Trap, match="input0 buffer byte length 16 less than expected minimum 32"):
        call(hal, "buffer.assert", buf, text("input0"), alloc_ref, 32, 0, 0)
    with pytest.raises(Trap, match=r"input0 requested usage was not specified.*requires DISPATCH_STORAGE") as e:
        call(hal, "buffer.assert", buf, text("input0"), alloc_ref, 16, 0, t.USAGE_DISPATCH_STORAGE)
    assert status(e) == "PERMISSION_DENIED"
    with pytest.raises(Trap, match="input0 buffer memory type is not compatible"):
        call(hal, "buffer.assert", buf, text("input0"), alloc_ref, 0, t.MEMORY_TYPE_HOST_CACHED, 0)


def test_import_aliases_vm_buffers_with_iree_access_rules(hal):
    src = VmBuffer.from_bytes(bytes(range(16)))
    ro = VmBuffer.wrap_memory(src.data_address, 16, layout.BUFFER_ORIGIN_MODULE, src)
    a = allocator(hal)
    imported = call(hal, "allocator.import", a, 0, -1, DEVICE_LOCAL, USAGE, src, 4, 8)
    assert contents(imported).tolist() == list(range(4, 12))
    call(hal, "buffer.store", 0xAB, imported, 0, 1)
    assert src.tobytes()[4] == 0xAB  # no copy: the import aliases the vm.buffer
    with pytest.raises(Trap, match="source buffer is immutable and can only be imported for constant usage"):
        call(hal, "allocator.import", a, 0, -1, DEVICE_LOCAL, USAGE, ro, 0, -1)
    constant = call(hal, "allocator.import", a, 0, -1, DEVICE_LOCAL, USAGE | t.USAGE_SHARING_IMMUTABLE, ro, 0, -1)
    with pytest.raises(Trap, match="buffer does not support the requested access type") as e:
        call(hal, "buffer.store", 1, constant, 0, 1)
    assert status(e) == "PERMISSION_DENIED"
    with pytest.raises(Trap, match=r"byte range out of bounds \(requested 8-23 of available 16\)"):
        call(hal, "allocator.import", a, 0, -1, DEVICE_LOCAL, USAGE, src, 8, 16)


def test_allocation_preserve_discard_counting(hal):
    buf = alloc(hal, 4)
    call(hal, "buffer.allocation.preserve", buf)
    call(hal, "buffer.allocation.preserve", buf)
    assert call(hal, "buffer.allocation.is_terminal", buf) == 0
    assert call(hal, "buffer.allocation.discard", buf) == 0
    assert call(hal, "buffer.allocation.is_terminal", buf) == 1
    assert call(hal, "buffer.allocation.discard", buf) == 1


# --- buffer views --------------------------------------------------------------------------------

def test_buffer_view_create_query_and_subspan(hal):
    buf = alloc(hal, 64)
    view = call(hal, "buffer_view.create", buf, 16, 24, F32, t.ENCODING_DENSE_ROW_MAJOR, [(2,), (3,)])
    assert call(hal, "buffer_view.rank", view) == 2
    assert [call(hal, "buffer_view.dim", view, i) for i in range(2)] == [2, 3]
    assert call(hal, "buffer_view.element_type", view) == F32
    assert call(hal, "buffer_view.encoding_type", view) == t.ENCODING_DENSE_ROW_MAJOR
    inner = call(hal, "buffer_view.buffer", view)
    assert call(hal, "buffer.length", inner) == 24 and inner.payload.byte_offset == 16
    with pytest.raises(Trap, match="dimension 2 out of range for a rank-2 buffer view"):
        call(hal, "buffer_view.dim", view, 2)
    with pytest.raises(Trap, match="outside of the valid buffer range"):
        call(hal, "buffer_view.create", buf, 48, 24, F32, 1, [(6,)])


def test_buffer_view_assert_rules_and_messages(hal):
    view = call(hal, "buffer_view.create", alloc(hal, 24), 0, 24, I32, 1, [(2,), (3,)])
    ok = lambda et, dims, enc=1: call(hal, "buffer_view.assert", view, text("input0"), et, enc, dims)  # noqa: E731
    ok(I32, [(2,), (3,)])
    ok(SI32, [(2,), (3,)])  # integers of the same width are compatible (signless storage)
    with pytest.raises(Trap, match=r"input0 element type mismatch; expected f32 \(21000020\) but have i32 "
                                   r"\(10000020\)"):
        ok(F32, [(2,), (3,)])
    with pytest.raises(Trap, match=r"input0 shape dimension 1 mismatch; expected 4 but have 3; expected shape "
                                   r"`2x4`, actual shape `2x3`"):
        ok(I32, [(2,), (4,)])
    with pytest.raises(Trap, match=r"input0 shape rank mismatch; expected 0 \(scalar\) but have 2"):
        ok(I32, [])
    with pytest.raises(Trap, match="input0 encoding mismatch; expected 00000002 but have 00000001"):
        ok(I32, [(2,), (3,)], enc=2)


def test_buffer_view_text_form_matches_iree(hal):
    buf = alloc(hal, 24)
    buf.payload.write(0, np.array([[1, 2.5, -3], [1e20, np.nan, -np.inf]], np.float32).tobytes())
    view = call(hal, "buffer_view.create", buf, 0, 24, F32, 1, [(2,), (3,)])
    assert view.payload.format() == "2x3xf32=[1 2.5 -3][1E+20 NAN -INF]"
    flags = call(hal, "buffer_view.create", buf, 0, 3, t.element_type(t.NUMERICAL_BOOLEAN, 8), 1, [(3,)])
    buf.payload.write(0, bytes([1, 0, 1]))
    assert flags.payload.format() == "3xi1=01 00 01"


# --- fences ---------------------------------------------------------------------------------------

def test_fence_lifecycle(hal):
    dev = device(hal)
    f = call(hal, "fence.create", dev, 0)
    assert call(hal, "fence.query", f) == STATUS_CODES["DEFERRED"]
    assert call(hal, "fence.await", 0, 0, [(f,)]) == STATUS_CODES["DEADLINE_EXCEEDED"]
    with pytest.raises(Trap, match="waits forever on a fence nothing will signal") as e:
        call(hal, "fence.await", -1, 0, [(f,)])
    assert status(e) == "DEADLINE_EXCEEDED"
    call(hal, "fence.signal", f)
    assert call(hal, "fence.query", f) == 0
    assert call(hal, "fence.await", -1, 0, [(f,), (None,)]) == 0
    with pytest.raises(Trap, match="monotonically increasing"):
        call(hal, "fence.signal", f)


def test_fence_join_and_failure_propagation(hal):
    dev = device(hal)
    a, b = call(hal, "fence.create", dev, 0), call(hal, "fence.create", dev, 0)
    assert call(hal, "fence.join", 0, [(None,)]) is None  # nothing to wait on: a null fence
    joined = call(hal, "fence.join", 0, [(a,), (b,), (None,)])
    assert len(joined.payload.timepoints) == 2
    call(hal, "fence.signal", a)
    assert call(hal, "fence.query", joined) == STATUS_CODES["DEFERRED"]
    call(hal, "fence.fail", b, STATUS_CODES["ABORTED"])
    assert call(hal, "fence.query", joined) == STATUS_CODES["ABORTED"]
    with pytest.raises(Trap) as e:
        call(hal, "fence.await", -1, 0, [(joined,)])
    assert status(e) == "ABORTED"


# --- queue and command buffers ---------------------------------------------------------------------

def test_queue_operations_wait_then_signal(hal):
    dev = device(hal)
    done = call(hal, "fence.create", dev, 0)
    buf = call(hal, "device.queue.alloca", dev, -1, None, done, 0, DEVICE_LOCAL, USAGE, 16, 0)
    assert call(hal, "fence.query", done) == 0 and call(hal, "buffer.length", buf) == 16
    filled = call(hal, "fence.create", dev, 0)
    call(hal, "device.queue.fill", dev, -1, done, filled, buf, 4, 8, 0xBEEF, 2, 0)
    assert contents(buf, np.uint16)[2:6].tolist() == [0xBEEF] * 4  # the rest is undefined, as in IREE
    other = alloc(hal, 16)
    call(hal, "device.queue.copy", dev, -1, filled, None, buf, 4, other, 0, 8, 0)
    assert contents(other, np.uint16)[:4].tolist() == [0xBEEF] * 4
    src = VmBuffer.from_bytes(b"abcdefgh")
    call(hal, "device.queue.update", dev, -1, None, None, src, 2, other, 8, 4, 0)
    assert other.payload.read(8, 4) == b"cdef"
    file = call(hal, "ex.file.from_memory", dev, -1, t.ACCESS_READ, src, 1, 6, 0)
    call(hal, "device.queue.read", dev, -1, None, None, file, 2, other, 12, 4, 0)
    assert other.payload.read(12, 4) == b"defg"
    with pytest.raises(Trap, match="file was imported read-only"):
        call(hal, "device.queue.write", dev, -1, None, None, other, 0, file, 0, 2, 0)
    call(hal, "device.queue.dealloca", dev, -1, None, None, buf, 0)
    call(hal, "device.queue.barrier", dev, -1, None, None, 0)
    call(hal, "device.queue.flush", dev, -1)


def _resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_queue_alloca_leaves_a_transient_unwritten_while_allocate_zeroes(hal):
    """A transient's contents are undefined (IREE's local-task leaves them so): the alloca must
    not write its pages (a 16 MB dequantised weight's memset was 0.5 ms of serial time per
    call). Untouched pages of a fresh mapping are not resident; written ones are."""
    dev, n = device(hal), 256 << 20
    before = _resident_bytes()
    buf = call(hal, "device.queue.alloca", dev, -1, None, None, 0, DEVICE_LOCAL, USAGE, n, 0)
    grown = _resident_bytes() - before
    call(hal, "device.queue.dealloca", dev, -1, None, None, buf, 0)
    del buf
    assert grown < n // 4, f"queue.alloca of {n >> 20} MiB made {grown >> 20} MiB resident"
    before = _resident_bytes()
    kept = alloc(hal, 64 << 20)  # hal.allocator.allocate still zero-fills: deterministic contents
    assert _resident_bytes() - before >= 32 << 20
    assert not contents(kept).any()


def test_failed_queue_operation_fails_its_signal_fence(hal):
    dev = device(hal)
    buf = alloc(hal, 8)
    sig = call(hal, "fence.create", dev, 0)
    with pytest.raises(Trap, match="fill patterns must be 1, 2, 4 or 8 bytes"):
        call(hal, "device.queue.fill", dev, -1, None, sig, buf, 0, 8, 0, 3, 0)
    assert call(hal, "fence.query", sig) == STATUS_CODES["INVALID_ARGUMENT"]
    never = call(hal, "fence.create", dev, 0)
    with pytest.raises(Trap, match=r"queue.copy waits on a fence nothing will signal \(semaphore at 0 "
                                   r"awaiting 1\)"):
        call(hal, "device.queue.copy", dev, -1, never, None, buf, 0, alloc(hal, 8), 0, 8, 0)


def test_copy_refuses_overlapping_ranges_of_one_allocation(hal):
    buf = alloc(hal, 16)
    with pytest.raises(Trap, match="source and target ranges must not overlap"):
        call(hal, "device.queue.copy", device(hal), -1, None, None, buf, 0, call(hal, "buffer.subspan", buf, 4, 12),
             0, 8, 0)


def test_command_buffer_replays_with_each_binding_table(hal):
    dev = device(hal)
    cmd = call(hal, "command_buffer.create", dev, 0, 3, -1, 2)
    update = VmBuffer.from_bytes(struct.pack("<4I", 1, 2, 3, 4))
    call(hal, "command_buffer.fill_buffer", cmd, None, 0, 16, 0, 7, 4, 0)
    call(hal, "command_buffer.execution_barrier", cmd, 0, 0, 0)
    call(hal, "command_buffer.update_buffer", cmd, update, 4, None, 4, 8, 0, 0)
    call(hal, "command_buffer.copy_buffer", cmd, 0, 1, None, 0, None, 0, 16, 0)
    call(hal, "command_buffer.finalize", cmd)
    with pytest.raises(Trap, match="not in a recording state"):
        call(hal, "command_buffer.fill_buffer", cmd, None, 0, 4, 0, 0, 4, 0)
    for _ in range(2):  # reusable: each execution sees its own bindings
        a, b = alloc(hal, 32), alloc(hal, 16)
        call(hal, "device.queue.execute.indirect", dev, -1, None, None, cmd, 0, [(a, 8, 16), (b, 0, -1)])
        assert contents(a, np.uint32).tolist() == [0, 0, 7, 2, 3, 7, 0, 0]
        assert contents(b, np.uint32).tolist() == [7, 2, 3, 7]
    with pytest.raises(Trap, match="binding table has 1 bindings but the command buffer needs 2"):
        call(hal, "device.queue.execute.indirect", dev, -1, None, None, cmd, 0, [(alloc(hal, 16), 0, -1)])


def test_command_buffer_slot_and_state_errors(hal):
    dev = device(hal)
    cmd = call(hal, "command_buffer.create", dev, 1, 3, -1, 1)
    with pytest.raises(Trap, match="slot 3 is out of the command buffer's binding table capacity 1"):
        call(hal, "command_buffer.fill_buffer", cmd, None, 0, 4, 3, 0, 4, 0)
    call(hal, "command_buffer.begin_debug_group", cmd, text("group"))
    with pytest.raises(Trap, match="debug group 'group' was never ended"):
        call(hal, "command_buffer.finalize", cmd)
    call(hal, "command_buffer.end_debug_group", cmd)
    with pytest.raises(Trap, match="must be finalized before it is submitted"):
        call(hal, "device.queue.execute", dev, -1, None, None, cmd, 0)
    call(hal, "command_buffer.finalize", cmd)
    with pytest.raises(Trap, match="binding table has 0 bindings but the command buffer needs 1"):
        call(hal, "device.queue.execute.indirect", dev, -1, None, None, cmd, 0, [])


def test_negative_binding_slots_are_out_of_range_not_python_indices(hal):
    """Slots are IREE uint32s in VM i32s (found by the mutant campaign: a mutated slot of -1
    reached `table[-1]`, an IndexError or silently the last binding)."""
    dev = device(hal)
    cmd = call(hal, "command_buffer.create", dev, 1, 3, -1, 2)
    for slot in (-1, -2, -(1 << 31)):
        with pytest.raises(Trap, match=f"slot {slot & 0xFFFFFFFF} is out of the command buffer's binding "
                                       f"table capacity 2") as e:
            call(hal, "command_buffer.fill_buffer", cmd, None, 0, 4, slot, 0, 4, 0)
        assert status(e) == "OUT_OF_RANGE"
        with pytest.raises(Trap, match="out of the command buffer's binding table capacity"):
            call(hal, "command_buffer.copy_buffer", cmd, slot, 0, None, 0, None, 0, 4, 0)


def test_executables_need_a_known_format(hal):
    with pytest.raises(Trap, match="no executable loader registered for the executable format 'spirv-fb'") as e:
        call(hal, "executable.create", device(hal), -1, text("spirv-fb"), VmBuffer.from_bytes(b"\0" * 8), None)
    assert status(e) == "NOT_FOUND"


def test_collectives_are_unimplemented_on_one_device(hal):
    with pytest.raises(Trap, match="collective channels are not supported") as e:
        call(hal, "channel.create", device(hal), -1, 0, None, None, 0, 1)
    assert status(e) == "UNIMPLEMENTED"


def test_objects_keep_their_own_references(hal):
    """A backend may release (or move) its argument refs right after a call returns."""
    from jitvm.runtime.vm.objects import release

    buf = alloc(hal, 8)
    call(hal, "buffer.store", 0x55, buf, 0, 1)
    view = call(hal, "buffer_view.create", buf, 0, 8, I32, 1, [(2,)])
    cmd = call(hal, "command_buffer.create", device(hal), 0, 3, -1, 0)
    target = alloc(hal, 8)
    call(hal, "command_buffer.copy_buffer", cmd, 0, 0, buf, 0, target, 0, 8, 0)
    call(hal, "command_buffer.finalize", cmd)
    release(buf.detach())  # the caller's reference is gone; the view and the command keep theirs
    call(hal, "device.queue.execute", device(hal), -1, None, None, cmd, 0)
    assert call(hal, "buffer.load", call(hal, "buffer_view.buffer", view), 0, 1) == 0x55
    assert call(hal, "buffer.load", target, 0, 1) == 0x55
