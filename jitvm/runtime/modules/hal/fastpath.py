"""Native fast paths for the HAL queries a compiled host function makes on every call.

A model call's host code asks, per argument and result, `hal.buffer_view.assert`,
`hal.buffer_view.buffer`, `hal.buffer.assert` and `hal.device.allocator`: questions about
facts fixed when the objects were made. Through Python each costs a ctypes callback, a Ref
per argument and a few lookups, 5-10 us; with the facts copied next to the object's header
(runtime.native.layout `Hal*Facts`, written by the classes' `write_facts`) native code answers the
ordinary case directly.

Each function has the uniform import ABI (runtime.vm.abi) and its ctx is the Python
implementation's trampoline: anything but the plain case (a null or foreign ref, a check
that fails, an element type that only IREE's compatibility rule accepts, more dims than the
facts hold, bits a sign-extending Python check would read differently) is handed to it with
the same arguments, so errors, messages and edge cases stay exactly the Python
implementation's. The interpreter calls the Python implementations directly.
"""

from __future__ import annotations

import os
import threading

import llvmlite.binding as llvm

from ...native import layout
from ...vm import nativelib
from ...vm.objects import register_type
from . import types as t

_lock = threading.Lock()
_addresses: dict[str, int] | None = None
_engine = None
# JITVM_HAL_FAST_PATHS=0: compiled code calls the Python implementations (comparisons, bisection).
enabled = os.environ.get("JITVM_HAL_FAST_PATHS", "1") != "0"


def _o(struct: str, name: str) -> int:
    return layout.field(struct, name).offset


# Queries `0r_r` answered with a ref an object holds: name -> (its type, facts struct, field).
HELD = {
    "jv_hal_buffer_view_buffer": ("hal.buffer_view", "HalBufferViewFacts", "buffer"),  # hal.buffer_view.buffer
    "jv_hal_device_allocator": ("hal.device", "HalDeviceFacts", "allocator"),  # hal.device.allocator
}


def _held_getter(name: str, type_id: int, offset: int) -> str:
    """IR of `name`: the ref at byte `offset` of an object's facts, retained, for objects of
    `type_id`; anything else goes to Python."""
    return f"""define i32 @{name}(ptr %python, ptr %args, ptr %results, ptr %trap) {{
entry:
  %o = call ptr @ref_arg(ptr %args, i64 0)
  %ok = call i1 @is_a(ptr %o, i32 {type_id})
  br i1 %ok, label %fast, label %slow
fast:
  %p = getelementptr inbounds i8, ptr %o, i64 {offset}
  %held = load ptr, ptr %p
  call void @jv_retain(ptr %held)
  store ptr %held, ptr %results
  ret i32 0
slow:
  %s = call i32 %python(ptr null, ptr %args, ptr %results, ptr %trap)
  ret i32 %s
}}
"""


def _ir() -> str:
    tid = _o("Object", "type_id")
    view, buffer = register_type("hal.buffer_view"), register_type("hal.buffer")
    allocator = register_type("hal.allocator")
    v_etype = _o("HalBufferViewFacts", "element_type")
    v_enc, v_rank, v_dims = (_o("HalBufferViewFacts", "encoding_type"), _o("HalBufferViewFacts", "rank"),
                             _o("HalBufferViewFacts", "dims"))
    b_len, b_mem, b_usage = (_o("HalBufferFacts", "byte_length"), _o("HalBufferFacts", "memory_type"),
                             _o("HalBufferFacts", "allowed_usage"))
    held = "\n".join(_held_getter(name, register_type(type_name), _o(facts, fact))
                     for name, (type_name, facts, fact) in HELD.items())
    return f"""
declare void @jv_retain(ptr)

; Whether %o is a non-null object of runtime type %type.
define internal i1 @is_a(ptr %o, i32 %type) alwaysinline {{
entry:
  %null = icmp eq ptr %o, null
  br i1 %null, label %no, label %look
look:
  %p = getelementptr inbounds i8, ptr %o, i64 {tid}
  %t = load i32, ptr %p
  %same = icmp eq i32 %t, %type
  ret i1 %same
no:
  ret i1 false
}}

define internal i64 @arg(ptr %args, i64 %k) alwaysinline {{
entry:
  %p = getelementptr inbounds i64, ptr %args, i64 %k
  %v = load i64, ptr %p
  ret i64 %v
}}

define internal ptr @ref_arg(ptr %args, i64 %k) alwaysinline {{
entry:
  %p = getelementptr inbounds i64, ptr %args, i64 %k
  %v = load ptr, ptr %p
  ret ptr %v
}}

{held}
; hal.buffer.assert(buffer, message, allocator, minimum_length, memory_types, usage)    0rrrIii_v
define i32 @jv_hal_buffer_assert(ptr %python, ptr %args, ptr %results, ptr %trap) {{
entry:
  %b = call ptr @ref_arg(ptr %args, i64 0)
  %m = call ptr @ref_arg(ptr %args, i64 1)
  %a = call ptr @ref_arg(ptr %args, i64 2)
  %ok_b = call i1 @is_a(ptr %b, i32 {buffer})
  %ok_m = call i1 @is_a(ptr %m, i32 {nativelib.BUFFER_TYPE_ID})
  %ok_a = call i1 @is_a(ptr %a, i32 {allocator})
  %ok_bm = and i1 %ok_b, %ok_m
  %refs = and i1 %ok_bm, %ok_a
  br i1 %refs, label %check, label %slow
check:
  %min = call i64 @arg(ptr %args, i64 3)
  %types64 = call i64 @arg(ptr %args, i64 4)
  %usage64 = call i64 @arg(ptr %args, i64 5)
  %types = trunc i64 %types64 to i32
  %usage = trunc i64 %usage64 to i32
  %pl = getelementptr inbounds i8, ptr %b, i64 {b_len}
  %len = load i64, ptr %pl
  %pm = getelementptr inbounds i8, ptr %b, i64 {b_mem}
  %mem = load i32, ptr %pm
  %pu = getelementptr inbounds i8, ptr %b, i64 {b_usage}
  %allowed = load i32, ptr %pu
  %long = icmp uge i64 %len, %min
  ; Python reads the i32 bit sets sign-extended: a set top bit goes to Python
  %tops = or i32 %types, %usage
  %plain = icmp sge i32 %tops, 0
  %nmem = xor i32 %mem, -1
  %miss_t = and i32 %types, %nmem
  %nallowed = xor i32 %allowed, -1
  %miss_u = and i32 %usage, %nallowed
  %miss = or i32 %miss_t, %miss_u
  %none = icmp eq i32 %miss, 0
  %ok1 = and i1 %long, %plain
  %ok = and i1 %ok1, %none
  br i1 %ok, label %done, label %slow
done:
  ret i32 0
slow:
  %s = call i32 %python(ptr null, ptr %args, ptr %results, ptr %trap)
  ret i32 %s
}}

; hal.buffer_view.assert(view, message, element_type, encoding_type, dims...)    0rriiCID_v
define i32 @jv_hal_buffer_view_assert(ptr %python, ptr %args, ptr %results, ptr %trap) {{
entry:
  %v = call ptr @ref_arg(ptr %args, i64 0)
  %m = call ptr @ref_arg(ptr %args, i64 1)
  %ok_v = call i1 @is_a(ptr %v, i32 {view})
  %ok_m = call i1 @is_a(ptr %m, i32 {nativelib.BUFFER_TYPE_ID})
  %refs = and i1 %ok_v, %ok_m
  br i1 %refs, label %types, label %slow
types:
  %et64 = call i64 @arg(ptr %args, i64 2)
  %enc64 = call i64 @arg(ptr %args, i64 3)
  %et = trunc i64 %et64 to i32
  %enc = trunc i64 %enc64 to i32
  %pe = getelementptr inbounds i8, ptr %v, i64 {v_etype}
  %have_et = load i32, ptr %pe
  %pn = getelementptr inbounds i8, ptr %v, i64 {v_enc}
  %have_enc = load i32, ptr %pn
  %opaque = icmp eq i32 %have_enc, {t.ENCODING_OPAQUE}
  %same_enc = icmp eq i32 %have_enc, %enc
  %enc_ok = or i1 %opaque, %same_enc
  %et_ok = icmp eq i32 %have_et, %et
  %pr = getelementptr inbounds i8, ptr %v, i64 {v_rank}
  %rank = load i32, ptr %pr
  %rank64 = zext i32 %rank to i64
  %count = call i64 @arg(ptr %args, i64 4)
  %rank_ok = icmp eq i64 %rank64, %count
  %ok1 = and i1 %enc_ok, %et_ok
  %ok2 = and i1 %ok1, %rank_ok
  br i1 %ok2, label %dims, label %slow
dims:
  %k = phi i64 [ 0, %types ], [ %k1, %same ]
  %more = icmp ult i64 %k, %count
  br i1 %more, label %dim, label %done
dim:
  %slot = add i64 %k, 5
  %want = call i64 @arg(ptr %args, i64 %slot)
  %pd = getelementptr inbounds i8, ptr %v, i64 {v_dims}
  %pk = getelementptr inbounds i64, ptr %pd, i64 %k
  %have = load i64, ptr %pk
  %k1 = add i64 %k, 1
  %eq = icmp eq i64 %have, %want
  br i1 %eq, label %same, label %slow
same:
  br label %dims
done:
  ret i32 0
slow:
  %s = call i32 %python(ptr null, ptr %args, ptr %results, ptr %trap)
  ret i32 %s
}}
"""


NAMES = (*HELD, "jv_hal_buffer_assert", "jv_hal_buffer_view_assert")


def address(name: str) -> int:
    """The native fast path `name` (compiled once per process, with the runtime's types)."""
    global _addresses, _engine
    with _lock:
        if _addresses is None:
            nativelib.load()  # jv_retain and the LLVM target
            mod = llvm.parse_assembly(_ir())
            mod.triple = llvm.get_process_triple()
            mod.verify()
            # Code generation without optimisation: a few straight-line functions, compiled
            # in 7 ms instead of 21 ms at each process's first load.
            engine = llvm.create_mcjit_compiler(mod, nativelib.new_host_target_machine(0))
            engine.finalize_object()
            _addresses = {n: engine.get_function_address(n) for n in NAMES}
            _engine = engine  # keeps the code alive
    return _addresses[name]


def of(name: str):
    """An export's `native_fast_path`: the address of `name` when fast paths are enabled as
    the import is bound, else 0 (the Python implementation is called directly)."""
    return lambda: address(name) if enabled else 0
