"""The HAL's native code, rendered and compiled once per process into one module.

objects.ll makes and destroys the HAL's objects (their structs are runtime.native.layout's
Hal*); common.ll, buffers.ll, fences.ll and queues.ll are the exports a program's calls
reach, with the import ABI (runtime.vm.abi), so compiled host code and the interpreter call
them directly; execute.ll runs finalized command buffers (hal.program). The Python classes (hal.buffer, hal.buffer_view, hal.fence, ...) are views
that call the same functions through ctypes. Type ids, status codes and trap kinds are this
process's, filled in when the text is rendered; the texts messages name (`@s.<name>`) are
the table below.
"""

from __future__ import annotations

import ctypes
import threading

from ....errors import STATUS_CODES
from ...exec.nativecode import native as native_executor
from ...native import engine, layout, template
from ...native.layout import TrapT
from ...vm import nativelib, traps
from ...vm.interface import NativeFunction
from ...vm.objects import register_type
from . import trap_kinds
from . import types as t

ALLOCATION_ALIGNMENT = 64  # IREE's heap buffers are 64-byte aligned
MAX_ALLOCATION = 1 << 40  # larger requests fail as out of memory instead of being attempted
STATUS_CODE_MASK = 0x1F

# The ref types native code checks or makes: template name -> type name.
TYPES = {
    "VM_BUFFER": "vm.buffer", "HAL_ALLOCATOR": "hal.allocator", "HAL_BUFFER": "hal.buffer",
    "HAL_BUFFER_VIEW": "hal.buffer_view", "HAL_SEMAPHORE": "hal.semaphore", "HAL_FENCE": "hal.fence",
    "HAL_DEVICE": "hal.device", "HAL_COMMAND_BUFFER": "hal.command_buffer",
}

# The hal module's functions implemented here: name -> calling convention (IREE's hal module
# ABI version 7); the symbol is jv_hal_<name with dots as underscores>.
EXPORTS = {
    "buffer.assert": "0rrrIii_v", "buffer.allocation.preserve": "0r_v", "buffer.allocation.discard": "0r_i",
    "buffer.allocation.is_terminal": "0r_i", "buffer.subspan": "0rII_r", "buffer.length": "0r_I",
    "buffer.load": "0rIi_i", "buffer.store": "0irIi_v",
    "buffer_view.create": "0rIIiiCID_r", "buffer_view.assert": "0rriiCID_v", "buffer_view.buffer": "0r_r",
    "buffer_view.element_type": "0r_i", "buffer_view.encoding_type": "0r_i", "buffer_view.rank": "0r_i",
    "buffer_view.dim": "0ri_I",
    "fence.create": "0rI_r", "fence.join": "0ICrD_r", "fence.query": "0r_i", "fence.signal": "0r_v",
    "fence.fail": "0ri_v", "fence.await": "0iICrD_i",
    "device.allocator": "0r_r", "allocator.allocate": "0rIiiI_r", "allocator.import": "0riIiirII_r",
    "device.queue.alloca": "0rIrrIiiII_r", "device.queue.dealloca": "0rIrrrI_v",
    "device.queue.fill": "0rIrrrIIIiI_v", "device.queue.update": "0rIrrrIrIII_v",
    "device.queue.copy": "0rIrrrIrIII_v", "device.queue.barrier": "0rIrrI_v", "device.queue.flush": "0rI_v",
    "device.queue.execute": "0rIrrrI_v", "device.queue.execute.indirect": "0rIrrrICrIID_v",
}


def symbol(name: str) -> str:
    return "jv_hal_" + name.replace(".", "_")


# The kinds of a native program's commands (layout `Command.kind`, hal.program) and what its
# execution calls back into Python for (jv_hal_py_call's first argument, hal.command_buffer).
CODES = {"COMMAND_FILL": 1, "COMMAND_UPDATE": 2, "COMMAND_COPY": 3, "COMMAND_SEGMENT": 4, "COMMAND_PYTHON": 5,
         "RUN_COMMAND": 1, "RUN_SEGMENT": 2, "RELEASE_SEGMENT": 3, "SEGMENT_FAILURE": 4}

# The operations of the device queue done natively (each has a wait and a signal fence).
QUEUE_OPS = ("alloca", "dealloca", "fill", "update", "copy", "barrier", "execute", "execute.indirect")


def _strings() -> dict[str, str]:
    """Global name (`@s.<name>`) -> text of every string the native HAL uses."""
    labels = ["hal.buffer.assert", "hal.buffer.assert message", "hal.buffer.assert allocator",
              "hal.buffer.allocation.preserve", "hal.buffer.allocation.discard",
              "hal.buffer.allocation.is_terminal", "hal.buffer.subspan", "hal.buffer.length", "hal.buffer.load",
              "hal.buffer.store", "hal.buffer_view.create", "hal.buffer_view.assert",
              "hal.buffer_view.assert message", "hal.buffer_view.buffer", "hal.buffer_view.element_type",
              "hal.buffer_view.encoding_type", "hal.buffer_view.rank", "hal.buffer_view.dim",
              "hal.fence.create", "hal.fence.join fence", "hal.fence.query", "hal.fence.signal", "hal.fence.fail",
              "hal.fence.await fence", "hal.device.allocator", "hal.allocator.allocate", "hal.allocator.import",
              "hal.allocator.import source", "hal.device.queue.flush", "hal.device.queue.dealloca buffer",
              "hal.device.queue.fill target", "hal.device.queue.update source", "hal.device.queue.update target",
              "hal.device.queue.copy source", "hal.device.queue.copy target",
              "hal.device.queue.execute command buffer", "hal.device.queue.execute.indirect command buffer",
              "hal.device.queue.execute.indirect binding"]
    for op in QUEUE_OPS:
        labels += [f"hal.device.queue.{op}", f"hal.device.queue.{op} wait fence",
                   f"hal.device.queue.{op} signal fence"]
    out = {label.replace(".", "_").replace(" ", "_"): label for label in labels}
    out.update({f"queue_{op}": f"queue.{op}" for op in QUEUE_OPS if op != "execute.indirect"})
    out.update(fill_target="fill target", update_target="update target", copy_source="copy source",
               copy_target="copy target")
    out.update(oom="allocating HAL objects", empty="", comma=", ", times="x", paren=")", comma_paren=",)",
               str="%s", sep_lld="%s%lld", shapes="; expected shape `%s`, actual shape `%s`",
               pending_first="semaphore at %llu awaiting %llu", pending_next=", semaphore at %llu awaiting %llu")
    return out


# How each byte appears in an LLVM string constant: printable ASCII as itself, but for `"`
# and `\`; everything else as \XX.
_STRING_BYTE = [chr(c) if 32 <= c < 127 and c not in (34, 92) else f"\\{c:02X}" for c in range(256)]


def _string_global(name: str, text: str) -> str:
    data = text.encode() + b"\0"
    body = "".join([_STRING_BYTE[c] for c in data])
    return f'@s.{name} = private unnamed_addr constant [{len(data)} x i8] c"{body}"'


def _values() -> dict[str, object]:
    """What the templates are rendered with (each takes the names it uses)."""
    values = {key: register_type(name) for key, name in TYPES.items()}
    values.update({f"S_{name}": code for name, code in STATUS_CODES.items()})
    values.update(trap_kinds.template_values())
    values.update(
        ALLOCATION_ALIGNMENT=ALLOCATION_ALIGNMENT, MAX_ALLOCATION=MAX_ALLOCATION, STATUS_CODE_MASK=STATUS_CODE_MASK,
        HOST_MEMORY=layout.BUFFER_MUTABLE | layout.BUFFER_ORIGIN_HOST,
        HOST_MUTABLE=layout.BUFFER_MUTABLE | layout.BUFFER_ORIGIN_HOST, HOST_READ_ONLY=layout.BUFFER_ORIGIN_HOST,
        BUFFER_MUTABLE=layout.BUFFER_MUTABLE, ACCESS_READ=t.ACCESS_READ, ACCESS_WRITE=t.ACCESS_WRITE,
        ACCESS_READ_WRITE=t.ACCESS_READ | t.ACCESS_WRITE, ACCESS_ALL=t.ACCESS_ALL,
        MEMORY_TYPE_OPTIMAL=t.MEMORY_TYPE_OPTIMAL, MEMORY_TYPE_HOST_VISIBLE=t.MEMORY_TYPE_HOST_VISIBLE,
        NOT_MEMORY_TYPE_OPTIMAL=~t.MEMORY_TYPE_OPTIMAL & 0xFFFFFFFF, USAGE_DEFAULT=t.USAGE_DEFAULT,
        USAGE_HEAP=t.USAGE_MAPPING_SCOPED | t.USAGE_MAPPING_PERSISTENT | t.USAGE_MAPPING_ACCESS_RANDOM | t.USAGE_TRANSFER,
        USAGE_SHARING_IMMUTABLE=t.USAGE_SHARING_IMMUTABLE, ENCODING_OPAQUE=t.ENCODING_OPAQUE,
        NUMERICAL_INTEGER=t.NUMERICAL_INTEGER, **{name: code for name, code in CODES.items()},
        strings="\n".join(_string_global(n, s) for n, s in _strings().items()))
    values["view_queries"] = "".join(
        template.render(__package__, "view_query.ll", name=name, offset=layout.field("HalBufferView", name).offset,
                        wide=name == "rank", HAL_BUFFER_VIEW=values["HAL_BUFFER_VIEW"])
        for name in ("element_type", "encoding_type", "rank"))
    return values


PARTS = ("common.ll", "objects.ll", "buffers.ll", "fences.ll", "queues.ll", "execute.ll")


def ir_text() -> str:
    values = _values()
    return "\n".join(template.render_from(__package__, part, values) for part in PARTS)


# --- Python's side -------------------------------------------------------------------------------

_P, _U64, _U32, _I32 = ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_int32
PROTOTYPES = {
    "jv_hal_allocator_new": ctypes.CFUNCTYPE(_P),
    "jv_hal_buffer_new": ctypes.CFUNCTYPE(_P, _P, _U64, _U64, _U32, _U32, _U32, _P),
    "jv_hal_buffer_allocate": ctypes.CFUNCTYPE(_P, _U64, _U32, _U32, _U32, _U32),
    "jv_hal_buffer_view_new": ctypes.CFUNCTYPE(_P, _P, _U64, _P, _U32, _U32),
    "jv_hal_semaphore_new": ctypes.CFUNCTYPE(_P, _U64),
    "jv_hal_fence_new": ctypes.CFUNCTYPE(_P, _U64, _P),
    "jv_hal_fence_make": ctypes.CFUNCTYPE(_P),
    "jv_hal_fence_status": ctypes.CFUNCTYPE(_I32, _P),
    "jv_hal_fence_signal_all": ctypes.CFUNCTYPE(_I32, _P, _P),
    "jv_hal_fence_fail_with": ctypes.CFUNCTYPE(None, _P, _P),
    "jv_hal_wait": ctypes.CFUNCTYPE(_I32, _P, ctypes.c_char_p, _P),
    "jv_hal_allocate": ctypes.CFUNCTYPE(_I32, _P, _U32, _U32, _U64, ctypes.c_bool, _P, _P),
    "jv_hal_buffer_fill": ctypes.CFUNCTYPE(_I32, _P, _U64, _U64, _U64, _U32, _P),
    "jv_hal_buffer_write": ctypes.CFUNCTYPE(_I32, _P, _U64, _P, _U64, _P),
    "jv_hal_buffer_copy": ctypes.CFUNCTYPE(_I32, _P, _U64, _P, _U64, _U64, _P),
    "jv_hal_map_range": ctypes.CFUNCTYPE(_I32, _P, _U64, _U64, _U32, _P, _P, _P),
    "jv_hal_execute": ctypes.CFUNCTYPE(_I32, _P, _U64, _P, _P),
}

# The Python callback native execution calls when it cannot go on alone: jv_hal_py_call(what,
# command buffer, index, replica, binding count, bindings, trap) -> status (the function
# hal.command_buffer sets: call_from_native says what each `what` asks for).
_CALL = ctypes.CFUNCTYPE(_I32, _I32, _P, _U64, ctypes.c_int64, _U64, _P, _P)
_callback = None


def set_callback(callback) -> None:
    global _callback
    _callback = callback


@_CALL
def _call(what, command_buffer, index, replica, count, table, trap):
    return _callback(what, command_buffer, index, replica, count, table, trap)


_lock = threading.Lock()
_code = None


def code() -> engine.JitModule:
    """The HAL's compiled native module (once per process)."""
    global _code
    with _lock:
        if _code is None:
            nativelib.load()
            native_executor()  # jv_run_sequence
            engine.provide({"jv_hal_py_call": ctypes.cast(_call, ctypes.c_void_p).value})
            # jitvm.api.plan's native calls make inputs and await fences with these
            _code = engine.jit_module(ir_text(), export=("jv_hal_allocate", "jv_hal_buffer_view_new",
                                                                     "jv_hal_fence_make", "jv_hal_wait"))
    return _code


def zero_transients(on: bool = True) -> None:
    """Whether queue allocations (hal.device.queue.alloca) are zero-filled in this process.
    IREE leaves their contents undefined and so does jitvm by default (queues.ll); a program
    that reads bytes no dispatch wrote (a mutant) reads the same under every backend with it."""
    ctypes.c_int32.from_address(code().global_address("jv_hal_zero_transients")).value = int(on)


def address(name: str) -> int:
    return code().address(name)


def exports() -> dict[str, tuple[str, int]]:
    """The native exports for a NativeModule: name -> (calling convention, address)."""
    return {name: (cconv, address(symbol(name))) for name, cconv in EXPORTS.items()}


_export_functions: dict = {}


def call_export(name: str, *args) -> list:
    """Export `name` called from Python with plain values (refs as Refs); its results."""
    f = _export_functions.get(name)
    if f is None:
        f = _export_functions[name] = NativeFunction(f"hal.{name}", EXPORTS[name], address(symbol(name)))
    return f.call(list(args))


def checked(name: str, *args) -> None:
    """Calls native function `name(*args, trap)`; raises the trap it records."""
    rec = TrapT()
    if getattr(fn, name)(*args, ctypes.addressof(rec)):
        raise traps.take_exception(rec, traps.no_module_frame)


class _Functions:
    """`native.fn.jv_hal_buffer_new(...)`: the compiled functions as ctypes callables."""

    def __getattr__(self, name):
        f = code().function(name, PROTOTYPES[name])
        setattr(self, name, f)
        return f


fn = _Functions()
