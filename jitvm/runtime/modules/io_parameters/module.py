"""The `io_parameters` exports: load, gather and scatter, with IREE's calling conventions.

Programs compiled with `#flow.parameter.named<"scope"::"key">` globals call `load` in their
initializer with a table of keys and (parameter offset, buffer offset, length) spans. A file
entry whose span covers it from the start is imported: the device buffer aliases the mapped
file (read-only unless the file was opened writable), as IREE imports host allocations;
anything else is allocated and filled or read, on the device queue, between the fences.
"""

from __future__ import annotations

import struct

from ...native import layout
from ...vm.interface import NativeModule, export
from ...vm.objects import NativeObject, VmBuffer, VmList
from ..hal import types as t
from ..hal.buffer import ALLOCATION_ALIGNMENT, HalBuffer
from ..hal.device import HalDevice
from ..hal.errors import buffer_string, deref, deref_or_null, deref_vm_buffer, hal_error
from ..hal.fence import HalFence
from .index import ParameterEntry, ParameterProvider

IO_PARAMETERS_MODULE_VERSION = 0
_STRING_ENTRY = struct.Struct("<II")  # offset, length into the key data
_SPAN_ENTRY = struct.Struct("<QQQ")  # parameter offset, buffer offset, length
BUFFER_ELEMENT_TYPE = "!hal.buffer"  # load returns a !vm.list<!hal.buffer>


def _spans(key_table: VmBuffer, key_data: VmBuffer, spans: VmBuffer) -> list[tuple[str, int, int, int]]:
    """(key, parameter offset, buffer offset, length) per span, checked as IREE checks them."""
    if spans.length % _SPAN_ENTRY.size:
        raise hal_error("INVALID_ARGUMENT", "buffer span storage must be aligned to iree_io_parameters_span_entry_t")
    count = spans.length // _SPAN_ENTRY.size
    if key_table.length < count * _STRING_ENTRY.size:
        raise hal_error("INVALID_ARGUMENT", "key string table must have enough data to service all defined spans")
    table, data, span_bytes = key_table.view(), key_data.view(), spans.view()
    out = []
    for i in range(count):
        offset, length = _STRING_ENTRY.unpack_from(table, i * _STRING_ENTRY.size)
        if offset > len(data):
            raise hal_error("OUT_OF_RANGE", f"attempted to access an address off the end of the valid buffer range "
                                            f"(offset={offset}, length={length}, data_capacity={len(data)})")
        if length and offset + length > len(data):
            raise hal_error("OUT_OF_RANGE", f"attempted to access an address outside of the valid buffer range "
                                            f"(offset={offset}, length={length}, end(inc)={offset + length - 1}, "
                                            f"data_capacity={len(data)})")
        key = bytes(data[offset:offset + length]).decode("utf-8", "replace")
        out.append((key, *_SPAN_ENTRY.unpack_from(span_bytes, i * _SPAN_ENTRY.size)))
    return out


def _check_span(entry: ParameterEntry, parameter_offset: int, length: int) -> None:
    if parameter_offset > entry.length or length > entry.length - parameter_offset:
        raise hal_error("OUT_OF_RANGE", f"parameter '{entry.key}' span (offset={parameter_offset}, "
                                        f"length={length}) exceeds the {entry.length}-byte parameter")


def _requests(key_table, key_data, spans) -> list[tuple[str, int, int, int]]:
    return _spans(deref_vm_buffer(key_table, "key table"), deref_vm_buffer(key_data, "key data"),
                  deref_vm_buffer(spans, "spans"))


def _entries(provider: ParameterProvider, requests):
    """(entry, parameter offset, buffer offset, length) per request, each span checked."""
    for key, parameter_offset, buffer_offset, length in requests:
        entry = provider.index.lookup(key)
        _check_span(entry, parameter_offset, length)
        yield entry, parameter_offset, buffer_offset, length


class IoParametersModule(NativeModule):
    """Serves parameters from its providers, the first that handles a scope winning."""

    name = "io_parameters"
    version = IO_PARAMETERS_MODULE_VERSION

    def __init__(self, providers: list[ParameterProvider]):
        super().__init__()
        self.providers = list(providers)

    def provider(self, scope_ref) -> ParameterProvider:
        scope = "" if scope_ref is None else buffer_string(scope_ref, "scope")
        for p in self.providers:
            if p.handles(scope):
                return p
        raise hal_error("NOT_FOUND", f"no provider registered that handles scopes like '{scope}'")

    def _queue(self, device, wait, signal, what):
        return (deref(device, HalDevice, what), deref_or_null(wait, HalFence, f"{what} wait fence"),
                deref_or_null(signal, HalFence, f"{what} signal fence"))

    @export("load", "0rIrrrIiirrr_r")
    def load(self, device, affinity, wait, signal, source_scope, target_affinity, memory_types, usage,
             key_table, key_data, spans):
        dev, w, s = self._queue(device, wait, signal, "io_parameters.load")
        if source_scope is not None:
            deref_vm_buffer(source_scope, "io_parameters.load scope")
        provider = self.provider(source_scope)
        requests = _requests(key_table, key_data, spans)

        def run():
            out = VmList.allocate(BUFFER_ELEMENT_TYPE, len(requests))
            for entry, parameter_offset, buffer_offset, length in _entries(provider, requests):
                out.append(self._load_one(dev, entry, parameter_offset, buffer_offset, length, memory_types, usage))
            return out
        return dev.queue_op("io_parameters.load", w, s, run)

    @staticmethod
    def _load_one(dev: HalDevice, entry: ParameterEntry, parameter_offset: int, buffer_offset: int, length: int,
                  memory_types: int, usage: int):
        if entry.is_file and buffer_offset == 0 and entry.handle.readable and \
                (entry.handle.address + entry.offset + parameter_offset) % ALLOCATION_ALIGNMENT == 0:
            return _import(dev, entry, parameter_offset, length, memory_types, usage)
        buffer = dev.allocator.allocate(memory_types, usage, buffer_offset + length)
        buffer.payload.write(buffer_offset, entry.read(parameter_offset, length))
        return buffer

    @export("gather", "0rIrrrrrrr_v")
    def gather(self, device, affinity, wait, signal, source_scope, target_buffer, key_table, key_data, spans):
        dev, w, s = self._queue(device, wait, signal, "io_parameters.gather")
        provider = self.provider(source_scope)
        target = deref(target_buffer, HalBuffer, "io_parameters.gather target buffer")
        requests = _requests(key_table, key_data, spans)

        def run():
            for entry, parameter_offset, buffer_offset, length in _entries(provider, requests):
                target.write(buffer_offset, entry.read(parameter_offset, length))
        dev.queue_op("io_parameters.gather", w, s, run)

    @export("scatter", "0rIrrrrrrr_v")
    def scatter(self, device, affinity, wait, signal, source_buffer, target_scope, key_table, key_data, spans):
        dev, w, s = self._queue(device, wait, signal, "io_parameters.scatter")
        source = deref(source_buffer, HalBuffer, "io_parameters.scatter source buffer")
        provider = self.provider(target_scope)
        requests = _requests(key_table, key_data, spans)

        def run():
            for entry, parameter_offset, buffer_offset, length in _entries(provider, requests):
                if not entry.is_file or not entry.handle.writable:
                    raise hal_error("PERMISSION_DENIED", f"parameter '{entry.key}' is not writable")
                entry.view()[parameter_offset:parameter_offset + length] = source.view(buffer_offset, length)
        dev.queue_op("io_parameters.scatter", w, s, run)


class _Mapping(NativeObject):
    """A parameter file's mapping as a ref: the origin of every buffer aliasing it, so the
    mapping lives as long as the last of them (natively counted)."""

    type_name = "io_parameters.mapping"

    def __init__(self, handle):
        self.handle = handle


def _import(dev: HalDevice, entry: ParameterEntry, parameter_offset: int, length: int, memory_types: int,
            usage: int):
    """A device buffer aliasing the entry's bytes in the mapped file, imported by the device's
    allocator (hal.allocator.import's rules: read-only files for constant usage). Only where
    they start 64-byte aligned, as every device buffer does: code compiled for llvm-cpu loads
    bindings with aligned vector instructions (a .safetensors tensor may sit at any multiple
    of 8; it is copied instead)."""
    writable = entry.handle.writable
    flags = layout.BUFFER_ORIGIN_HOST | (layout.BUFFER_MUTABLE if writable else 0)
    address = entry.handle.address + entry.offset + parameter_offset if length else 0
    memory = VmBuffer.wrap_memory(address, length, flags, _Mapping.new(entry.handle))
    if not writable:
        usage |= t.USAGE_SHARING_IMMUTABLE
    return dev.allocator.import_buffer(memory_types, usage, memory, 0, length)
