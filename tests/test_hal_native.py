"""The HAL's native exports (runtime.modules.hal.native) against what the Python HAL did.

EXPECTED holds each case's outcome under the Python implementation the native code replaced
(commit 71390d5): results, and for failures IREE's status and the message, word for word
(many tests and users compare messages). Every case runs through the native import ABI as
a program's calls do. A compiled program handed wrong views then fails the same way under
the JIT and the interpreter, and the calls leave their arguments' reference counts as they
found them.
"""

from __future__ import annotations

import numpy as np
import pytest

import jitvm
from jitvm import Trap
from jitvm.errors import STATUS_NAMES
from jitvm.runtime.native import layout
from jitvm.runtime.modules import HalModule
from jitvm.runtime.modules.hal import native
from jitvm.runtime.modules.hal import types as t
from jitvm.runtime.vm.interface import NativeFunction
from jitvm.runtime.vm.objects import Ref, VmBuffer

F32 = t.element_type(t.NUMERICAL_FLOAT_IEEE, 32)
I32 = t.element_type(t.NUMERICAL_INTEGER, 32)
SI32 = t.element_type(t.NUMERICAL_INTEGER_SIGNED, 32)
DL = t.MEMORY_TYPE_DEVICE_LOCAL
U = t.USAGE_DEFAULT


def text(s):
    return VmBuffer.from_bytes(s.encode(), access=layout.BUFFER_ORIGIN_MODULE)


def caller(hal):
    """Calls export `name` of `hal` with plain values: its one result, a tuple, or None."""
    def call(name, *args):
        out = hal.lookup(name).call(list(args))
        return out[0] if len(out) == 1 else (tuple(out) if out else None)
    return call


def objects(hal) -> dict:
    """The refs the cases use, made through the exports (`c` calls one)."""
    c = caller(hal)
    o = {"c": c, "dev": c("devices.get", 0)}
    o["alloc"] = c("device.allocator", o["dev"])
    o["buf"] = c("allocator.allocate", o["alloc"], -1, DL, U, 64)
    o["tbuf"] = c("allocator.allocate", o["alloc"], -1, DL, t.USAGE_TRANSFER, 16)
    o["sub"] = c("buffer.subspan", o["buf"], 8, 16)
    o["view"] = c("buffer_view.create", o["buf"], 0, 24, I32, 1, [(2,), (3,)])
    o["scalar"] = c("buffer_view.create", o["buf"], 0, 4, F32, 1, [])
    o["opaque"] = c("buffer_view.create", o["buf"], 0, 24, I32, 0, [(6,)])
    o["msg"] = text("input0")
    o["src"] = VmBuffer.from_bytes(bytes(range(16)))
    o["ro"] = VmBuffer.wrap_memory(o["src"].data_address, 16, layout.BUFFER_ORIGIN_MODULE, o["src"])
    o["const"] = c("allocator.import", o["alloc"], 0, -1, DL, U | t.USAGE_SHARING_IMMUTABLE, o["ro"], 0, -1)
    o["f1"], o["f2"] = c("fence.create", o["dev"], 0), c("fence.create", o["dev"], 0)
    o["done"] = c("fence.create", o["dev"], 0)
    c("fence.signal", o["done"])
    o["failed"] = c("fence.create", o["dev"], 0)
    c("fence.fail", o["failed"], 10)
    o["zero_failed"] = c("fence.create", o["dev"], 0)
    c("fence.fail", o["zero_failed"], 0)
    return o


# name -> (export, the arguments from `objects`)
CASES = {
 # buffers
 "length": ("buffer.length", lambda o: [o["buf"]]),
 "length_null": ("buffer.length", lambda o: [None]),
 "length_view": ("buffer.length", lambda o: [o["view"]]),
 "assert_ok": ("buffer.assert", lambda o: [o["buf"], o["msg"], o["alloc"], 64, DL, U]),
 "assert_short": ("buffer.assert", lambda o: [o["buf"], o["msg"], o["alloc"], 65, 0, 0]),
 "assert_type": ("buffer.assert", lambda o: [o["buf"], o["msg"], o["alloc"], 0, t.MEMORY_TYPE_HOST_CACHED, 0]),
 "assert_usage": ("buffer.assert", lambda o: [o["tbuf"], o["msg"], o["alloc"], 0, 0, t.USAGE_DISPATCH_STORAGE]),
 "assert_usage2": ("buffer.assert", lambda o: [o["tbuf"], o["msg"], o["alloc"], 0, 0, 0x40000000]),
 "assert_null_msg": ("buffer.assert", lambda o: [o["buf"], None, o["alloc"], 0, 0, 0]),
 "assert_msg_view": ("buffer.assert", lambda o: [o["buf"], o["view"], o["alloc"], 0, 0, 0]),
 "assert_alloc_dev": ("buffer.assert", lambda o: [o["buf"], o["msg"], o["dev"], 0, 0, 0]),
 "assert_not_buf": ("buffer.assert", lambda o: [o["view"], o["msg"], o["alloc"], 0, 0, 0]),
 "subspan_ok": ("buffer.subspan", lambda o: [o["buf"], 4, 8]),
 "subspan_whole": ("buffer.subspan", lambda o: [o["buf"], 0, -1]),
 "subspan_rest": ("buffer.subspan", lambda o: [o["sub"], 4, -1]),
 "subspan_out": ("buffer.subspan", lambda o: [o["buf"], 8, 64]),
 "subspan_off_end": ("buffer.subspan", lambda o: [o["buf"], 65, 1]),
 "subspan_off_end_neg": ("buffer.subspan", lambda o: [o["buf"], -3, -2]),
 "subspan_huge": ("buffer.subspan", lambda o: [o["buf"], 8, -2]),
 "load1": ("buffer.load", lambda o: [o["buf"], 0, 1]),
 "load0": ("buffer.load", lambda o: [o["buf"], 0, 0]),
 "load_len": ("buffer.load", lambda o: [o["buf"], 0, 8]),
 "load_neg_len": ("buffer.load", lambda o: [o["buf"], 0, -1]),
 "load_out": ("buffer.load", lambda o: [o["buf"], 62, 4]),
 "load_off_end": ("buffer.load", lambda o: [o["buf"], 65, 0]),
 "store_ok": ("buffer.store", lambda o: [-1, o["buf"], 4, 2]),
 "store_len": ("buffer.store", lambda o: [1, o["buf"], 4, 5]),
 "store_out": ("buffer.store", lambda o: [1, o["buf"], 62, 4]),
 "store_huge": ("buffer.store", lambda o: [1, o["buf"], -1, 4]),
 "store_const": ("buffer.store", lambda o: [1, o["const"], 0, 1]),
 "store_const0": ("buffer.store", lambda o: [1, o["const"], 0, 0]),
 "preserve": ("buffer.allocation.preserve", lambda o: [o["sub"]]),
 "discard": ("buffer.allocation.discard", lambda o: [o["buf"]]),
 "terminal": ("buffer.allocation.is_terminal", lambda o: [o["buf"]]),
 "preserve_bad": ("buffer.allocation.preserve", lambda o: [o["dev"]]),
 # views
 "vcreate_neg": ("buffer_view.create", lambda o: [o["buf"], 0, 8, F32, 1, [(2,), (-1,)]]),
 "vcreate_neg1": ("buffer_view.create", lambda o: [o["buf"], 0, 8, F32, 1, [(-5,)]]),
 "vcreate_out": ("buffer_view.create", lambda o: [o["buf"], 48, 24, F32, 1, [(6,)]]),
 "vcreate_off_end": ("buffer_view.create", lambda o: [o["buf"], 70, 0, F32, 1, [(6,)]]),
 "vcreate_bad": ("buffer_view.create", lambda o: [o["view"], 0, 8, F32, 1, [(2,)]]),
 "vassert_ok": ("buffer_view.assert", lambda o: [o["view"], o["msg"], I32, 1, [(2,), (3,)]]),
 "vassert_si": ("buffer_view.assert", lambda o: [o["view"], o["msg"], SI32, 1, [(2,), (3,)]]),
 "vassert_et": ("buffer_view.assert", lambda o: [o["view"], o["msg"], F32, 1, [(2,), (3,)]]),
 "vassert_dim": ("buffer_view.assert", lambda o: [o["view"], o["msg"], I32, 1, [(2,), (4,)]]),
 "vassert_dim_neg": ("buffer_view.assert", lambda o: [o["view"], o["msg"], I32, 1, [(-2,), (3,)]]),
 "vassert_rank0": ("buffer_view.assert", lambda o: [o["view"], o["msg"], I32, 1, []]),
 "vassert_rank_scalar": ("buffer_view.assert", lambda o: [o["scalar"], o["msg"], F32, 1, [(1,)]]),
 "vassert_rank3": ("buffer_view.assert", lambda o: [o["view"], o["msg"], I32, 1, [(2,), (3,), (1,)]]),
 "vassert_enc": ("buffer_view.assert", lambda o: [o["view"], o["msg"], I32, 2, [(2,), (3,)]]),
 "vassert_opaque": ("buffer_view.assert", lambda o: [o["opaque"], o["msg"], I32, 7, [(6,)]]),
 "vassert_null": ("buffer_view.assert", lambda o: [None, o["msg"], I32, 1, []]),
 "vassert_msg": ("buffer_view.assert", lambda o: [o["view"], None, I32, 1, []]),
 "vdim": ("buffer_view.dim", lambda o: [o["view"], 1]),
 "vdim_out": ("buffer_view.dim", lambda o: [o["view"], 2]),
 "vdim_neg": ("buffer_view.dim", lambda o: [o["view"], -1]),
 "vrank": ("buffer_view.rank", lambda o: [o["view"]]),
 "vet": ("buffer_view.element_type", lambda o: [o["view"]]),
 "venc": ("buffer_view.encoding_type", lambda o: [o["view"]]),
 "vbuffer_bad": ("buffer_view.buffer", lambda o: [o["buf"]]),
 "venc_bad": ("buffer_view.encoding_type", lambda o: [None]),
 # allocators
 "alloc_big": ("allocator.allocate", lambda o: [o["alloc"], -1, DL, U, 1 << 41]),
 "alloc_neg": ("allocator.allocate", lambda o: [o["alloc"], -1, DL, U, -1]),
 "alloc_bad": ("allocator.allocate", lambda o: [o["dev"], -1, DL, U, 4]),
 "import_ok": ("allocator.import", lambda o: [o["alloc"], 0, -1, DL, U, o["src"], 4, 8]),
 "import_out": ("allocator.import", lambda o: [o["alloc"], 0, -1, DL, U, o["src"], 8, 16]),
 "import_off": ("allocator.import", lambda o: [o["alloc"], 0, -1, DL, U, o["src"], 20, -1]),
 "import_ro": ("allocator.import", lambda o: [o["alloc"], 0, -1, DL, U, o["ro"], 0, -1]),
 "import_src_bad": ("allocator.import", lambda o: [o["alloc"], 0, -1, DL, U, o["buf"], 0, -1]),
 "dev_alloc_bad": ("device.allocator", lambda o: [o["msg"]]),
 # fences
 "fcreate_bad": ("fence.create", lambda o: [o["buf"], 0]),
 "fquery": ("fence.query", lambda o: [o["f1"]]),
 "fquery_done": ("fence.query", lambda o: [o["done"]]),
 "fquery_failed": ("fence.query", lambda o: [o["failed"]]),
 "fquery_zero": ("fence.query", lambda o: [o["zero_failed"]]),
 "fjoin_none": ("fence.join", lambda o: [0, [(None,)]]),
 "fjoin_bad": ("fence.join", lambda o: [0, [(o["f1"],), (o["buf"],)]]),
 "fawait_bad": ("fence.await", lambda o: [-1, 0, [(None,), (o["view"],)]]),
 "fawait_done": ("fence.await", lambda o: [-1, 0, [(o["done"],), (None,)]]),
 "fawait_timeout": ("fence.await", lambda o: [0, 0, [(o["f1"],)]]),
 "fawait_forever": ("fence.await", lambda o: [-1, 0, [(o["done"],), (o["f1"],)]]),
 "fawait_failed": ("fence.await", lambda o: [-1, 0, [(o["f1"],), (o["failed"],)]]),
 "fsignal_done": ("fence.signal", lambda o: [o["done"]]),
 "fsignal_failed": ("fence.signal", lambda o: [o["failed"]]),
 "ffail_bad": ("fence.fail", lambda o: [None, 3]),
 # queue
 "alloca_pool": ("device.queue.alloca", lambda o: [o["dev"], -1, None, None, 1, DL, U, 16, 0]),
 "alloca_bad_wait": ("device.queue.alloca", lambda o: [o["dev"], -1, o["buf"], None, 0, DL, U, 16, 0]),
 "alloca_bad_signal": ("device.queue.alloca", lambda o: [o["dev"], -1, None, o["view"], 0, DL, U, 16, 0]),
 "alloca_bad_dev": ("device.queue.alloca", lambda o: [o["alloc"], -1, None, None, 0, DL, U, 16, 0]),
 "alloca_wait_forever": ("device.queue.alloca", lambda o: [o["dev"], -1, o["f1"], None, 0, DL, U, 16, 0]),
 "alloca_wait_failed": ("device.queue.alloca", lambda o: [o["dev"], -1, o["failed"], None, 0, DL, U, 16, 0]),
 "alloca_signal_done": ("device.queue.alloca", lambda o: [o["dev"], -1, None, o["done"], 0, DL, U, 16, 0]),
 "alloca_signal_failed": ("device.queue.alloca", lambda o: [o["dev"], -1, None, o["failed"], 0, DL, U, 16, 0]),
 "alloca_big": ("device.queue.alloca", lambda o: [o["dev"], -1, None, None, 0, DL, U, 1 << 40, 0]),
 "dealloca_bad": ("device.queue.dealloca", lambda o: [o["dev"], -1, None, None, None, 0]),
 "fill_pattern": ("device.queue.fill", lambda o: [o["dev"], -1, None, None, o["buf"], 0, 8, 0, 3, 0]),
 "fill_unaligned": ("device.queue.fill", lambda o: [o["dev"], -1, None, None, o["buf"], 2, 8, 0, 4, 0]),
 "fill_out": ("device.queue.fill", lambda o: [o["dev"], -1, None, None, o["buf"], 60, 8, 0, 4, 0]),
 "fill_const": ("device.queue.fill", lambda o: [o["dev"], -1, None, None, o["const"], 0, 4, 0, 4, 0]),
 "fill_ok": ("device.queue.fill", lambda o: [o["dev"], -1, None, None, o["buf"], 4, 8, 0xBEEF, 2, 0]),
 "fill_bad_target": ("device.queue.fill", lambda o: [o["dev"], -1, None, None, None, 4, 8, 0, 2, 0]),
 "update_src": ("device.queue.update", lambda o: [o["dev"], -1, None, None, o["src"], 12, o["buf"], 0, 8, 0]),
 "update_src_bad": ("device.queue.update", lambda o: [o["dev"], -1, None, None, o["buf"], 0, o["buf"], 0, 8, 0]),
 "update_out": ("device.queue.update", lambda o: [o["dev"], -1, None, None, o["src"], 0, o["buf"], 60, 8, 0]),
 "update_target_bad": ("device.queue.update", lambda o: [o["dev"], -1, None, None, o["src"], 0, None, 60, 8, 0]),
 "copy_overlap": ("device.queue.copy", lambda o: [o["dev"], -1, None, None, o["buf"], 0, o["sub"], 0, 16, 0]),
 "copy_out": ("device.queue.copy", lambda o: [o["dev"], -1, None, None, o["buf"], 60, o["tbuf"], 0, 8, 0]),
 "copy_whole_off_end": ("device.queue.copy", lambda o: [o["dev"], -1, None, None, o["buf"], 70, o["tbuf"], 0, -1, 0]),
 "copy_const": ("device.queue.copy", lambda o: [o["dev"], -1, None, None, o["buf"], 0, o["const"], 0, 4, 0]),
 "copy_ok": ("device.queue.copy", lambda o: [o["dev"], -1, None, None, o["buf"], 0, o["tbuf"], 0, 16, 0]),
 "copy_bad": ("device.queue.copy", lambda o: [o["dev"], -1, None, None, o["buf"], 0, o["view"], 0, 16, 0]),
 "barrier_forever": ("device.queue.barrier", lambda o: [o["dev"], -1, o["f2"], None, 0]),
 "flush_bad": ("device.queue.flush", lambda o: [None, -1]),
 "execute_bad": ("device.queue.execute", lambda o: [o["dev"], -1, None, None, o["buf"], 0]),
 "execute_null": ("device.queue.execute", lambda o: [o["dev"], -1, None, None, None, 0]),
}

EXPECTED = {
    'alloc_bad': ('INVALID_ARGUMENT', 'hal.allocator.allocate: expected !hal.allocator, got !hal.device (ref type mismatch)'),
    'alloc_big': ('RESOURCE_EXHAUSTED', 'failed to allocate buffer of length 2199023255552'),
    'alloc_neg': ('RESOURCE_EXHAUSTED', 'failed to allocate buffer of length -1'),
    'alloca_bad_dev': ('INVALID_ARGUMENT', 'hal.device.queue.alloca: expected !hal.device, got !hal.allocator (ref type mismatch)'),
    'alloca_bad_signal': ('INVALID_ARGUMENT', 'hal.device.queue.alloca signal fence: expected !hal.fence, got !hal.buffer_view (ref type mismatch)'),
    'alloca_bad_wait': ('INVALID_ARGUMENT', 'hal.device.queue.alloca wait fence: expected !hal.fence, got !hal.buffer (ref type mismatch)'),
    'alloca_big': ('RESOURCE_EXHAUSTED', 'failed to allocate buffer of length 1099511627776'),
    'alloca_pool': ('UNIMPLEMENTED', 'VM queue allocation pools are not supported'),
    'alloca_signal_done': ('OUT_OF_RANGE', 'semaphore values must be monotonically increasing; current value 1, new value 1'),
    'alloca_signal_failed': ('ABORTED', 'semaphore was already failed: fence failed by the program with status 10'),
    'alloca_wait_failed': ('ABORTED', 'queue.alloca: a waited-on fence failed: fence failed by the program with status 10'),
    'alloca_wait_forever': ('DEADLINE_EXCEEDED', 'queue.alloca waits on a fence nothing will signal (semaphore at 0 awaiting 1); the synchronous local device would block forever'),
    'assert_alloc_dev': ('INVALID_ARGUMENT', 'hal.buffer.assert allocator: expected !hal.allocator, got !hal.device (ref type mismatch)'),
    'assert_msg_view': ('INVALID_ARGUMENT', 'hal.buffer.assert message: expected !vm.buffer, got !hal.buffer_view (ref type mismatch)'),
    'assert_not_buf': ('INVALID_ARGUMENT', 'hal.buffer.assert: expected !hal.buffer, got !hal.buffer_view (ref type mismatch)'),
    'assert_null_msg': ('INVALID_ARGUMENT', 'hal.buffer.assert message: expected !vm.buffer, got null (ref type mismatch)'),
    'assert_ok': ('ok', None),
    'assert_short': ('INVALID_ARGUMENT', 'input0 buffer byte length 64 less than expected minimum 65'),
    'assert_type': ('PERMISSION_DENIED', 'input0 buffer memory type is not compatible; buffer has DEVICE_LOCAL|HOST_VISIBLE, operation requires HOST_CACHED'),
    'assert_usage': ('PERMISSION_DENIED', 'input0 requested usage was not specified when the buffer was allocated; buffer allows TRANSFER_SOURCE|TRANSFER_TARGET|MAPPING_SCOPED|MAPPING_PERSISTENT|MAPPING_ACCESS_RANDOM, operation requires DISPATCH_STORAGE_READ|DISPATCH_STORAGE_WRITE'),
    'assert_usage2': ('PERMISSION_DENIED', 'input0 requested usage was not specified when the buffer was allocated; buffer allows TRANSFER_SOURCE|TRANSFER_TARGET|MAPPING_SCOPED|MAPPING_PERSISTENT|MAPPING_ACCESS_RANDOM, operation requires 0x40000000'),
    'barrier_forever': ('DEADLINE_EXCEEDED', 'queue.barrier waits on a fence nothing will signal (semaphore at 0 awaiting 1); the synchronous local device would block forever'),
    'copy_bad': ('INVALID_ARGUMENT', 'hal.device.queue.copy target: expected !hal.buffer, got !hal.buffer_view (ref type mismatch)'),
    'copy_const': ('PERMISSION_DENIED', 'buffer does not support the requested access type; buffer allows READ, operation requires WRITE'),
    'copy_ok': ('ok', None),
    'copy_out': ('OUT_OF_RANGE', 'attempted to access an address outside of the valid buffer range (offset=60, adjusted_length=8, end=67, buffer byte_length=64)'),
    'copy_overlap': ('INVALID_ARGUMENT', 'source and target ranges must not overlap within the same buffer'),
    'copy_whole_off_end': ('OUT_OF_RANGE', 'attempted to access an address off the end of the valid buffer range (offset=70, length=-6, buffer byte_length=64)'),
    'dealloca_bad': ('INVALID_ARGUMENT', 'hal.device.queue.dealloca buffer: expected !hal.buffer, got null (ref type mismatch)'),
    'dev_alloc_bad': ('INVALID_ARGUMENT', 'hal.device.allocator: expected !hal.device, got !vm.buffer (ref type mismatch)'),
    'discard': ('ok', 1),
    'execute_bad': ('INVALID_ARGUMENT', 'hal.device.queue.execute command buffer: expected !hal.command_buffer, got !hal.buffer (ref type mismatch)'),
    'execute_null': ('INVALID_ARGUMENT', 'hal.device.queue.execute command buffer: expected !hal.command_buffer, got null (ref type mismatch)'),
    'fawait_bad': ('INVALID_ARGUMENT', 'hal.fence.await fence 1: expected !hal.fence, got !hal.buffer_view (ref type mismatch)'),
    'fawait_done': ('ok', 0),
    'fawait_failed': ('ABORTED', 'fence failed by the program with status 10'),
    'fawait_forever': ('DEADLINE_EXCEEDED', 'hal.fence.await waits forever on a fence nothing will signal (semaphore at 0 awaiting 1)'),
    'fawait_timeout': ('ok', 4),
    'fcreate_bad': ('INVALID_ARGUMENT', 'hal.fence.create: expected !hal.device, got !hal.buffer (ref type mismatch)'),
    'ffail_bad': ('INVALID_ARGUMENT', 'hal.fence.fail: expected !hal.fence, got null (ref type mismatch)'),
    'fill_bad_target': ('INVALID_ARGUMENT', 'hal.device.queue.fill target: expected !hal.buffer, got null (ref type mismatch)'),
    'fill_const': ('PERMISSION_DENIED', 'buffer does not support the requested access type; buffer allows READ, operation requires WRITE'),
    'fill_ok': ('ok', None),
    'fill_out': ('OUT_OF_RANGE', 'attempted to access an address outside of the valid buffer range (offset=60, adjusted_length=8, end=67, buffer byte_length=64)'),
    'fill_pattern': ('INVALID_ARGUMENT', 'fill patterns must be 1, 2, 4 or 8 bytes (got 3)'),
    'fill_unaligned': ('INVALID_ARGUMENT', 'attempting to fill a range with 4 byte values that is not aligned (offset=2, length=8)'),
    'fjoin_bad': ('INVALID_ARGUMENT', 'hal.fence.join fence 1: expected !hal.fence, got !hal.buffer (ref type mismatch)'),
    'fjoin_none': ('ok', None),
    'flush_bad': ('INVALID_ARGUMENT', 'hal.device.queue.flush: expected !hal.device, got null (ref type mismatch)'),
    'fquery': ('ok', 17),
    'fquery_done': ('ok', 0),
    'fquery_failed': ('ok', 10),
    'fquery_zero': ('ok', 0),
    'fsignal_done': ('OUT_OF_RANGE', 'semaphore values must be monotonically increasing; current value 1, new value 1'),
    'fsignal_failed': ('ABORTED', 'semaphore was already failed: fence failed by the program with status 10'),
    'import_off': ('INVALID_ARGUMENT', 'byte range out of bounds (requested 20-35 of available 16)'),
    'import_ok': ('ok', 'hal.buffer'),
    'import_out': ('INVALID_ARGUMENT', 'byte range out of bounds (requested 8-23 of available 16)'),
    'import_ro': ('PERMISSION_DENIED', 'source buffer is immutable and can only be imported for constant usage'),
    'import_src_bad': ('INVALID_ARGUMENT', 'hal.allocator.import source: expected !vm.buffer, got !hal.buffer (ref type mismatch)'),
    'length': ('ok', 64),
    'length_null': ('INVALID_ARGUMENT', 'hal.buffer.length: expected !hal.buffer, got null (ref type mismatch)'),
    'length_view': ('INVALID_ARGUMENT', 'hal.buffer.length: expected !hal.buffer, got !hal.buffer_view (ref type mismatch)'),
    'load0': ('ok', 0),
    'load1': ('ok', 0),
    'load_len': ('INVALID_ARGUMENT', 'load length byte count 8 exceeds max'),
    'load_neg_len': ('INVALID_ARGUMENT', 'load length byte count -1 exceeds max'),
    'load_off_end': ('OUT_OF_RANGE', 'attempted to access an address off the end of the valid buffer range (offset=65, length=0, buffer byte_length=64)'),
    'load_out': ('OUT_OF_RANGE', 'attempted to access an address outside of the valid buffer range (offset=62, adjusted_length=4, end=65, buffer byte_length=64)'),
    'preserve': ('ok', None),
    'preserve_bad': ('INVALID_ARGUMENT', 'hal.buffer.allocation.preserve: expected !hal.buffer, got !hal.device (ref type mismatch)'),
    'store_const': ('PERMISSION_DENIED', 'buffer does not support the requested access type; buffer allows READ, operation requires WRITE'),
    'store_const0': ('ok', None),
    'store_huge': ('OUT_OF_RANGE', 'store out of bounds (target_offset=18446744073709551615, length=4 into max 64)'),
    'store_len': ('INVALID_ARGUMENT', 'store length byte count 5 exceeds max'),
    'store_ok': ('ok', None),
    'store_out': ('OUT_OF_RANGE', 'store out of bounds (target_offset=62, length=4 into max 64)'),
    'subspan_huge': ('OUT_OF_RANGE', 'attempted to access an address outside of the valid buffer range (offset=8, adjusted_length=18446744073709551614, end=18446744073709551621, buffer byte_length=64); invalid subspan of an existing buffer (source_offset=8, length=-2)'),
    'subspan_off_end': ('OUT_OF_RANGE', 'attempted to access an address off the end of the valid buffer range (offset=65, length=1, buffer byte_length=64); invalid subspan of an existing buffer (source_offset=65, length=1)'),
    'subspan_off_end_neg': ('OUT_OF_RANGE', 'attempted to access an address off the end of the valid buffer range (offset=18446744073709551613, length=-2, buffer byte_length=64); invalid subspan of an existing buffer (source_offset=-3, length=-2)'),
    'subspan_ok': ('ok', 'hal.buffer'),
    'subspan_out': ('OUT_OF_RANGE', 'attempted to access an address outside of the valid buffer range (offset=8, adjusted_length=64, end=71, buffer byte_length=64); invalid subspan of an existing buffer (source_offset=8, length=64)'),
    'subspan_rest': ('ok', 'hal.buffer'),
    'subspan_whole': ('ok', 'hal.buffer'),
    'terminal': ('ok', 1),
    'update_out': ('OUT_OF_RANGE', 'attempted to access an address outside of the valid buffer range (offset=60, adjusted_length=8, end=67, buffer byte_length=64)'),
    'update_src': ('OUT_OF_RANGE', 'source range (offset=12, length=8) exceeds the 16-byte buffer'),
    'update_src_bad': ('INVALID_ARGUMENT', 'hal.device.queue.update source: expected !vm.buffer, got !hal.buffer (ref type mismatch)'),
    'update_target_bad': ('INVALID_ARGUMENT', 'hal.device.queue.update target: expected !hal.buffer, got null (ref type mismatch)'),
    'vassert_dim': ('INVALID_ARGUMENT', 'input0 shape dimension 1 mismatch; expected 4 but have 3; expected shape `2x4`, actual shape `2x3`'),
    'vassert_dim_neg': ('INVALID_ARGUMENT', 'input0 shape dimension 0 mismatch; expected -2 but have 2; expected shape `-2x3`, actual shape `2x3`'),
    'vassert_enc': ('INVALID_ARGUMENT', 'input0 encoding mismatch; expected 00000002 but have 00000001'),
    'vassert_et': ('INVALID_ARGUMENT', 'input0 element type mismatch; expected f32 (21000020) but have i32 (10000020)'),
    'vassert_msg': ('INVALID_ARGUMENT', 'hal.buffer_view.assert message: expected !vm.buffer, got null (ref type mismatch)'),
    'vassert_null': ('INVALID_ARGUMENT', 'hal.buffer_view.assert: expected !hal.buffer_view, got null (ref type mismatch)'),
    'vassert_ok': ('ok', None),
    'vassert_opaque': ('ok', None),
    'vassert_rank0': ('INVALID_ARGUMENT', 'input0 shape rank mismatch; expected 0 (scalar) but have 2; expected shape ``, actual shape `2x3`'),
    'vassert_rank3': ('INVALID_ARGUMENT', 'input0 shape rank mismatch; expected 3 but have 2; expected shape `2x3x1`, actual shape `2x3`'),
    'vassert_rank_scalar': ('INVALID_ARGUMENT', 'input0 shape rank mismatch; expected 1 but have 0 (scalar); expected shape `1`, actual shape ``'),
    'vassert_si': ('ok', None),
    'vbuffer_bad': ('INVALID_ARGUMENT', 'hal.buffer_view.buffer: expected !hal.buffer_view, got !hal.buffer (ref type mismatch)'),
    'vcreate_bad': ('INVALID_ARGUMENT', 'hal.buffer_view.create: expected !hal.buffer, got !hal.buffer_view (ref type mismatch)'),
    'vcreate_neg': ('INVALID_ARGUMENT', 'buffer view shape (2, -1) has a negative dimension'),
    'vcreate_neg1': ('INVALID_ARGUMENT', 'buffer view shape (-5,) has a negative dimension'),
    'vcreate_off_end': ('OUT_OF_RANGE', 'attempted to access an address off the end of the valid buffer range (offset=70, length=0, buffer byte_length=64)'),
    'vcreate_out': ('OUT_OF_RANGE', 'attempted to access an address outside of the valid buffer range (offset=48, adjusted_length=24, end=71, buffer byte_length=64)'),
    'vdim': ('ok', 3),
    'vdim_neg': ('OUT_OF_RANGE', 'dimension -1 out of range for a rank-2 buffer view'),
    'vdim_out': ('OUT_OF_RANGE', 'dimension 2 out of range for a rank-2 buffer view'),
    'venc': ('ok', 1),
    'venc_bad': ('INVALID_ARGUMENT', 'hal.buffer_view.encoding_type: expected !hal.buffer_view, got null (ref type mismatch)'),
    'vet': ('ok', 268435488),
    'vrank': ('ok', 2),
}


def describe(v):
    if v is None or isinstance(v, (int, float)):
        return v
    if isinstance(v, tuple):
        return [describe(x) for x in v]
    return v.type_name


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_export_answers_as_the_python_hal_did(name):
    export, args = CASES[name]
    hal = HalModule(None)
    o = objects(hal)
    assert isinstance(hal.lookup(export), NativeFunction)
    try:
        outcome = ("ok", describe(o["c"](export, *args(o))))
    except Trap as e:
        outcome = (STATUS_NAMES[e.status], e.message)
    assert outcome == EXPECTED[name]


def test_every_native_export_is_bound_and_called_directly():
    hal = HalModule(None)
    for name in native.EXPORTS:
        fn = hal.lookup(name)
        assert isinstance(fn, NativeFunction), name
        assert fn.native_entry() == (native.address(native.symbol(name)), 0)
    covered = {export for export, _ in CASES.values()}
    assert covered >= set(native.EXPORTS) - {"device.queue.execute.indirect"}  # tests/test_hal_objects.py


def test_calls_keep_their_arguments_reference_counts():
    """Arguments are borrowed: success or failure, a call leaves their counts as they were,
    and a result ref carries exactly the caller's one new reference."""
    hal = HalModule(None)
    o = objects(hal)
    held = [o[k] for k in ("dev", "alloc", "buf", "sub", "view", "msg", "src", "f1", "failed", "done")]
    before = [r.refcount for r in held]
    for name in sorted(CASES):
        export, args = CASES[name]
        try:
            o["c"](export, *args(o))
        except Trap:
            pass
    assert [r.refcount for r in held] == before
    view = o["c"]("buffer_view.create", o["buf"], 0, 8, F32, 1, [(2,)])
    assert view.refcount == 1 and Ref.wrap(view.addr).refcount == 2


@pytest.mark.parametrize("bad", ["shape", "rank", "element_type"])
def test_compiled_and_interpreted_host_code_report_the_same_errors(corpus_module, bad):
    """A raw call of a compiled function with a wrong buffer view fails in its
    hal.buffer_view.assert: the JIT raises what the interpreter raises, message (naming the
    program's input) and backtrace included."""
    from jitvm.api.marshal import array_to_view

    vmfb = str(corpus_module("mlir/matmul").vmfb)
    a = {"shape": np.zeros((4, 7), np.float32), "rank": np.zeros((32,), np.float32),
         "element_type": np.zeros((4, 8), np.int32)}[bad]
    b = np.zeros((8, 5), np.float32)
    outcomes = []
    for backend in ("jit", "interp"):
        fn = jitvm.load(vmfb, backend=backend).function("matmul_4x8x5")
        hal = fn.module.hal
        views = [array_to_view(hal, x, t.ELEMENT_OF_NUMPY[x.dtype]) for x in (a, b)]
        with pytest.raises(jitvm.Trap) as e:
            fn.vm_function.call(views)
        outcomes.append((e.value.status, str(e.value)))
    assert outcomes[0] == outcomes[1]
    assert "input0" in outcomes[0][1] or "input 0" in outcomes[0][1]
