"""The HAL objects of iree.runtime: devices, allocators, buffers, buffer views, fences.

Enumerations carry IREE's values (they are the ABI compiled programs use). A device is a
jitvm local CPU device: "local-task" runs dispatches on every core, "local-sync" on one
thread; both give the same bits. Devices are cached per URI, as iree.runtime caches them.
"""

from __future__ import annotations

import enum
import os
import threading

import numpy as np

from ...errors import ArgumentError, Error, STATUS_CODES, Trap
from ...runtime.exec.dispatch import runner_for
from ...runtime.modules.hal import types as t
from ...runtime.modules.hal.buffer import HalBuffer as _Buffer
from ...runtime.modules.hal import native as _hal
from ...runtime.modules.hal.buffer_view import HalBufferView as _View
from ...runtime.modules.hal.device import HalDevice as _Device
from ...runtime.modules.hal.fence import HalFence as _Fence
from ...runtime.modules.hal.fence import Semaphore, wait_all
from .. import DRIVERS, EmbeddedLoader, get_backend, lazy_jit
from .. import marshal
from .refs import RefBacked, api_class


class MemoryType(enum.IntFlag):
    NONE = 0
    OPTIMAL = t.MEMORY_TYPE_OPTIMAL
    HOST_VISIBLE = t.MEMORY_TYPE_HOST_VISIBLE
    HOST_COHERENT = t.MEMORY_TYPE_HOST_COHERENT
    HOST_CACHED = t.MEMORY_TYPE_HOST_CACHED
    HOST_LOCAL = t.MEMORY_TYPE_HOST_LOCAL
    DEVICE_VISIBLE = t.MEMORY_TYPE_DEVICE_VISIBLE
    DEVICE_LOCAL = t.MEMORY_TYPE_DEVICE_LOCAL


BufferUsage = enum.IntFlag("BufferUsage", {"NONE": 0, **t.USAGE_BITS, "TRANSFER": t.USAGE_TRANSFER,
                                           "DISPATCH_STORAGE": t.USAGE_DISPATCH_STORAGE,
                                           "DISPATCH_IMAGE": 0x3000, "MAPPING": t.USAGE_MAPPING,
                                           "DEFAULT": t.USAGE_DEFAULT})


class MemoryAccess(enum.IntFlag):
    NONE = 0
    READ = t.ACCESS_READ
    WRITE = t.ACCESS_WRITE
    DISCARD = t.ACCESS_DISCARD
    DISCARD_WRITE = t.ACCESS_WRITE | t.ACCESS_DISCARD
    ALL = t.ACCESS_ALL


class BufferCompatibility(enum.IntFlag):
    NONE = 0
    ALLOCATABLE = 1
    IMPORTABLE = 2
    EXPORTABLE = 4
    QUEUE_TRANSFER = 0x400
    QUEUE_DISPATCH = 0x800


def _et(numerical: int, bits: int) -> int:
    return t.element_type(numerical, bits)


class HalElementType(enum.IntEnum):
    NONE = 0
    OPAQUE_8, OPAQUE_16, OPAQUE_32, OPAQUE_64 = 8, 16, 32, 64
    BOOL_8 = _et(t.NUMERICAL_BOOLEAN, 8)
    INT_4, INT_8, INT_16, INT_32, INT_64 = (_et(t.NUMERICAL_INTEGER, b) for b in (4, 8, 16, 32, 64))
    SINT_4, SINT_8, SINT_16, SINT_32, SINT_64 = (_et(t.NUMERICAL_INTEGER_SIGNED, b) for b in (4, 8, 16, 32, 64))
    UINT_4, UINT_8, UINT_16, UINT_32, UINT_64 = (_et(t.NUMERICAL_INTEGER_UNSIGNED, b) for b in (4, 8, 16, 32, 64))
    FLOAT_16, FLOAT_32, FLOAT_64 = (_et(t.NUMERICAL_FLOAT_IEEE, b) for b in (16, 32, 64))
    BFLOAT_16 = _et(t.NUMERICAL_FLOAT_BRAIN, 16)
    COMPLEX_64, COMPLEX_128 = _et(t.NUMERICAL_FLOAT_COMPLEX, 64), _et(t.NUMERICAL_FLOAT_COMPLEX, 128)
    FLOAT_8_E5M2 = _et(t.NUMERICAL_FLOAT_8_E5M2, 8)
    FLOAT_8_E4M3_FN = _et(t.NUMERICAL_FLOAT_8_E4M3_FN, 8)
    FLOAT_8_E5M2_FNUZ = _et(t.NUMERICAL_FLOAT_8_E5M2_FNUZ, 8)
    FLOAT_8_E4M3_FNUZ = _et(t.NUMERICAL_FLOAT_8_E4M3_FNUZ, 8)
    FLOAT_8_E8M0_FNU = _et(t.NUMERICAL_FLOAT_8_E8M0_FNU, 8)

    @staticmethod
    def map_to_dtype(element_type) -> np.dtype:
        dtype = t.NUMPY_OF_ELEMENT.get(int(element_type))
        if dtype is None:
            raise ArgumentError(f"no numpy dtype for element type {t.element_type_name(int(element_type))}")
        return dtype

    @staticmethod
    def is_byte_aligned(element_type) -> bool:
        return t.bit_count(int(element_type)) % 8 == 0

    @staticmethod
    def dense_byte_count(element_type) -> int:
        return t.dense_byte_count(int(element_type))


class Shape(list):
    """A list of dimensions (iree.runtime's Shape)."""


class MappedMemory:
    """A host mapping of a buffer (host memory here: the buffer's own bytes)."""

    def __init__(self, buffer: "HalBuffer"):
        self._buffer = buffer

    def asarray(self, shape, dtype) -> np.ndarray:
        """The mapped bytes as an array of `shape` and `dtype`, sharing the memory."""
        buf: _Buffer = self._buffer._ref.payload
        dtype = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
        n = count * dtype.itemsize
        if n > buf.byte_length:
            raise ArgumentError(f"mapping of {buf.byte_length} bytes is too small for {tuple(shape)} x {dtype}")
        if n == 0:
            return np.empty(shape, dtype)
        view = _View.new(self._buffer._ref, tuple(shape), t.element_type(t.NUMERICAL_UNKNOWN, 8 * dtype.itemsize),
                         t.ENCODING_DENSE_ROW_MAJOR)
        return view.payload.mapped_numpy(view, dtype)


@api_class("hal.buffer")
class HalBuffer(RefBacked):
    def allowed_usage(self) -> int:
        return BufferUsage(self._ref.payload.allowed_usage)

    def memory_type(self) -> int:
        return MemoryType(self._ref.payload.memory_type)

    def byte_length(self) -> int:
        return self._ref.payload.byte_length

    def create_view(self, shape, element_type) -> "HalBufferView":
        return HalBufferView(self, shape, element_type)

    def fill_zero(self, byte_offset: int, byte_length: int) -> None:
        self._ref.payload.fill(byte_offset, byte_length, 0, 1)

    def map(self) -> MappedMemory:
        return MappedMemory(self)

    def __repr__(self):
        b = self._ref.payload
        return (f"<HalBuffer {b.byte_length} bytes (at offset {b.byte_offset} into {b.allocated.byte_length}), "
                f"memory_type={t.format_bits(b.memory_type, t.MEMORY_TYPE_BITS)}, "
                f"allowed_access={t.format_bits(b.allowed_access, t.ACCESS_BITS)}, "
                f"allowed_usage={t.format_bits(b.allowed_usage, t.USAGE_BITS)}>")


@api_class("hal.buffer_view")
class HalBufferView(RefBacked):
    def __init__(self, buffer: HalBuffer, shape, element_type):
        super().__init__(_View.new(buffer._ref, tuple(int(d) for d in shape), int(element_type),
                                   t.ENCODING_DENSE_ROW_MAJOR))

    @property
    def _view(self) -> _View:
        return self._ref.payload

    def get_buffer(self) -> HalBuffer:
        return HalBuffer._wrap(self._view.buffer_ref)

    def map(self) -> MappedMemory:
        return MappedMemory(self.get_buffer())

    @property
    def element_type(self) -> HalElementType:
        try:
            return HalElementType(self._view.element_type)
        except ValueError:
            return self._view.element_type

    @property
    def shape(self) -> list[int]:
        return list(self._view.shape)

    @property
    def byte_length(self) -> int:
        return self._view.byte_length

    def __repr__(self):
        v, b = self._view, self._view.buffer
        return (f"<HalBufferView ({', '.join(map(str, v.shape))}), element_type=0x{v.element_type:x}, "
                f"{b.byte_length} bytes (at offset {b.byte_offset} into {b.allocated.byte_length}), "
                f"memory_type={t.format_bits(b.memory_type, t.MEMORY_TYPE_BITS)}, "
                f"allowed_access={t.format_bits(b.allowed_access, t.ACCESS_BITS)}, "
                f"allowed_usage={t.format_bits(b.allowed_usage, t.USAGE_BITS)}>")


class HalSemaphore:
    """A timeline semaphore of the synchronous device."""

    def __init__(self, semaphore: Semaphore):
        self._semaphore = semaphore

    def query(self) -> int:
        s = self._semaphore
        if s.failure is not None:
            raise s.failure
        return s.value

    def signal(self, new_value: int) -> None:
        self._semaphore.signal(new_value)

    def fail(self, message: str) -> None:
        self._semaphore.fail(Trap(STATUS_CODES["ABORTED"], message))

    def wait(self, payload: int, timeout=None, deadline=None) -> None:
        HalFence.create_at(self, payload).wait(timeout, deadline)


@api_class("hal.fence")
class HalFence(RefBacked):
    def __init__(self, capacity: int = 0):
        super().__init__(_Fence.new([]))

    @staticmethod
    def create_at(sem: HalSemaphore, value: int) -> "HalFence":
        return HalFence._wrap(_Fence.new([(sem._semaphore, value)]))

    @staticmethod
    def join(fences) -> "HalFence":
        return HalFence._wrap(_Fence.new([tp for f in fences for tp in f._ref.payload.timepoints]))

    def insert(self, sem: HalSemaphore, value: int) -> None:
        self._ref = self._ref.payload.joined([(sem._semaphore, value)])

    def extend(self, from_fence: "HalFence") -> None:
        self._ref = self._ref.payload.joined(from_fence._ref.payload.timepoints)

    def signal(self) -> None:
        self._ref.payload.signal()

    def fail(self, message: str) -> None:
        self._ref.payload.fail(Trap(STATUS_CODES["ABORTED"], message))

    def wait(self, timeout=None, deadline=None) -> None:
        """Returns once reached; raises the failure, or DEADLINE_EXCEEDED where nothing can
        signal it any more (every queue operation here completes before returning)."""
        wait_all([self._ref.payload], "HalFence.wait")

    @property
    def timepoint_count(self) -> int:
        return len(self._ref.payload.timepoints)


class HalAllocator:
    def __init__(self, device: "HalDevice"):
        self._device = device

    @property
    def _allocator(self):
        return self._device._ref.payload.allocator

    def allocate_buffer(self, memory_type, allowed_usage, allocation_size: int) -> HalBuffer:
        return HalBuffer._wrap(self._allocator.allocate(int(memory_type), int(allowed_usage), int(allocation_size)))

    def allocate_buffer_copy(self, memory_type, allowed_usage, device=None, buffer=None, element_type=None):
        """A new buffer holding a copy of `buffer` (anything with the buffer protocol); a
        view of it when `element_type` is given (shape from the array)."""
        arr = np.asarray(buffer)
        data = arr if arr.flags.c_contiguous else np.array(arr, order="C")
        ref = self._allocator.allocate(int(memory_type), int(allowed_usage), data.nbytes, zeroed=False)
        ref.payload.write(0, data.reshape(-1).view(np.uint8))
        if element_type is None:
            return HalBuffer._wrap(ref)
        return HalBufferView(HalBuffer._wrap(ref), data.shape, element_type)

    def query_buffer_compatibility(self, memory_type, allowed_usage, intended_usage, allocation_size) -> int:
        return int(BufferCompatibility.ALLOCATABLE | BufferCompatibility.QUEUE_TRANSFER
                   | BufferCompatibility.QUEUE_DISPATCH)

    def trim(self) -> None:
        pass

    @property
    def has_statistics(self) -> bool:
        return True

    @property
    def statistics(self) -> dict:
        return {"host_bytes_allocated": self._allocator.bytes_allocated}

    @property
    def formatted_statistics(self) -> str:
        return f"host allocated {self._allocator.bytes_allocated} bytes"


def _fence(value) -> _Fence | None:
    """A queue call's semaphore list: a HalFence or [(semaphore, value), ...]."""
    if value is None:
        return None
    if isinstance(value, HalFence):
        return value._ref.payload
    return _Fence.new([(s._semaphore, v) for s, v in value])


@api_class("hal.device")
class HalDevice(RefBacked):
    @property
    def allocator(self) -> HalAllocator:
        return HalAllocator(self)

    def create_semaphore(self, initial_value: int) -> HalSemaphore:
        return HalSemaphore(Semaphore(initial_value))

    def queue_copy(self, source_buffer, target_buffer, wait_semaphores, signal_semaphores) -> None:
        src, dst = source_buffer._ref, target_buffer._ref
        _hal.call_export("device.queue.copy", self._ref, -1, _fence(wait_semaphores), _fence(signal_semaphores),
                         src, 0, dst, 0, src.payload.byte_length, 0)

    def queue_alloca(self, allocation_size: int, wait_semaphores, signal_semaphores) -> HalBuffer:
        return HalBuffer._wrap(_hal.call_export("device.queue.alloca", self._ref, -1, _fence(wait_semaphores),
                                                _fence(signal_semaphores), 0, t.MEMORY_TYPE_DEVICE_LOCAL,
                                                t.USAGE_DEFAULT, int(allocation_size), 0)[0])

    def queue_dealloca(self, buffer, wait_semaphores, signal_semaphores) -> None:
        _hal.call_export("device.queue.barrier", self._ref, -1, _fence(wait_semaphores), _fence(signal_semaphores),
                         0)

    def begin_profiling(self, mode=None) -> None:
        pass

    def end_profiling(self) -> None:
        pass

    def flush_profiling(self) -> None:
        pass

    def __repr__(self):
        return self._ref.payload.device_id


class HalDriver:
    """A driver of local CPU devices ("local-sync", "local-task")."""

    def __init__(self, name: str):
        self.name = name

    @staticmethod
    def query() -> list[str]:
        return list(DRIVERS)

    def create_default_device(self, allocators=None) -> HalDevice:
        return create_device(self.name)

    def create_device_by_uri(self, device_uri: str, allocators=None) -> HalDevice:
        return create_device(device_uri)

    def query_available_devices(self) -> list[dict]:
        return [{"device_id": 0, "path": "", "name": self.name}]


def _driver_name(uri: str) -> str:
    name = uri.split("://", 1)[0]
    if name not in DRIVERS:
        raise ArgumentError(f"could not create HAL driver: {uri!r} (available: {', '.join(DRIVERS)})")
    return name


def device_backend(driver: str):
    """The backend a device's executables run on: JITVM_BACKEND (jit or interp, default jit;
    compiled lazily in JITVM_TIER's tier, as jitvm.load does); one dispatch thread for
    local-sync."""
    name = os.environ.get("JITVM_BACKEND", "jit")
    if name == "jit":
        return lazy_jit(1 if driver == "local-sync" else None)
    return get_backend(name)


def create_device(uri: str) -> HalDevice:
    name = _driver_name(uri)
    backend = device_backend(name)
    return HalDevice._wrap(_Device.new(EmbeddedLoader(backend), runner_for(backend), device_id=name))


_devices: dict[str, HalDevice] = {}
_lock = threading.RLock()


def get_driver(device_uri: str) -> HalDriver:
    return HalDriver(_driver_name(device_uri))


def get_device(device_uri: str, cache: bool = True) -> HalDevice:
    with _lock:
        if cache and device_uri in _devices:
            return _devices[device_uri]
        device = get_driver(device_uri).create_device_by_uri(device_uri)
        if cache:
            _devices[device_uri] = device
        return device


DEFAULT_DRIVER_NAMES = "local-task"


def get_first_device(device_uris=None, cache: bool = True) -> HalDevice:
    if device_uris is None:
        device_uris = [s.strip() for s in os.environ.get("IREE_DEFAULT_DEVICE", DEFAULT_DRIVER_NAMES).split(",")]
    for uri in device_uris:
        try:
            return get_device(uri, cache)
        except ArgumentError:
            continue
    raise ArgumentError(f"No device found from list {list(device_uris)}")


def query_available_drivers() -> list[str]:
    return list(DRIVERS)


def as_array_argument(device: HalDevice, value) -> "HalBufferView":
    """An array or numpy scalar as a new device-local buffer view (iree.runtime's implicit
    conversion of ndarray arguments)."""
    return HalBufferView._wrap(marshal.numpy_to_view(_HalShim(device), value, "argument"))


class _HalShim:
    """What marshal needs of a hal module: `.device` (the jitvm device object)."""

    def __init__(self, device: HalDevice):
        self.device = device._ref.payload


__all__ = ["BufferCompatibility", "BufferUsage", "Error", "HalAllocator", "HalBuffer", "HalBufferView",
           "HalDevice", "HalDriver", "HalElementType", "HalFence", "HalSemaphore", "MappedMemory", "MemoryAccess",
           "MemoryType", "Shape", "get_device", "get_driver", "get_first_device", "query_available_drivers"]
