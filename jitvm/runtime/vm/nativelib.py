"""The native half of the runtime: object lifetime and container storage, in LLVM IR.

Retain/release, destruction and the allocation of buffers and lists run in native code so
that JIT-compiled functions, worker threads and Python all share one implementation. The
IR is compiled once per process for the host; its entry points are registered as symbols
for JIT-compiled modules and exposed to Python through ctypes.
"""

from __future__ import annotations

import ctypes
import threading

import llvmlite.binding as llvm

from ..native import layout, mathlib
from . import semantics
from ..native.layout import field

BUFFER_TYPE_ID = 1
LIST_TYPE_ID = 2
NO_TYPE_ID = 0xFFFFFFFF  # what checked ref ops naming `!vm.opaque` or a value type expect: no object has it

_lock = threading.Lock()
_engine = None
_target_machine = None
ADDRESSES: dict[str, int] = {}

# libc entry points the native code (runtime and JIT-compiled) may call.
LIBC_SYMBOLS = ("malloc", "calloc", "free", "posix_memalign", "memset", "memcpy", "memmove", "memcmp")


def _o(struct: str, name: str) -> int:
    return field(struct, name).offset


def _cast_f32_ui64_body() -> str:
    if semantics.FLOAT_TO_INT_SATURATES:
        return """  %nan = fcmp uno float %r, %r
  %neg = fcmp ole float %r, 0.0
  %big = fcmp oge float %r, 0x43F0000000000000
  %u = fptoui float %r to i64
  %a = select i1 %big, i64 -1, i64 %u
  %b = select i1 %neg, i64 0, i64 %a
  %c = select i1 %nan, i64 0, i64 %b
  ret i64 %c"""
    # x86_64: clang's float -> u64 sequence, a = cvttss2si(r), b = cvttss2si(r - 2^63),
    # result a | (b & (a >> 63)); cvttss2si gives INT64_MIN for NaN and out of range. So
    # [2^63, 2^64) converts exactly, and NaN, +-inf, >= 2^64 and < -2^63 give INT64_MIN.
    return """  %lo = fcmp oge float %r, 0xC3E0000000000000
  %hi = fcmp olt float %r, 0x43E0000000000000
  %ok = and i1 %lo, %hi
  %safe = select i1 %ok, float %r, float 0.0
  %s = fptosi float %safe to i64
  %a = select i1 %ok, i64 %s, i64 -9223372036854775808
  %d = fsub float %r, 0x43E0000000000000
  %lo2 = fcmp oge float %d, 0xC3E0000000000000
  %hi2 = fcmp olt float %d, 0x43E0000000000000
  %ok2 = and i1 %lo2, %hi2
  %safe2 = select i1 %ok2, float %d, float 0.0
  %s2 = fptosi float %safe2 to i64
  %b = select i1 %ok2, i64 %s2, i64 -9223372036854775808
  %m = ashr i64 %a, 63
  %bm = and i64 %b, %m
  %c = or i64 %a, %bm
  ret i64 %c"""


def _ir_text() -> str:
    rc, tid, destroy = _o("Object", "refcount"), _o("Object", "type_id"), _o("Object", "destroy")
    b_data, b_len, b_access = _o("Buffer", "data"), _o("Buffer", "length"), _o("Buffer", "access")
    b_origin, b_alloc = _o("Buffer", "origin"), _o("Buffer", "allocation")
    l_mode, l_etype, l_esize = _o("List", "mode"), _o("List", "element_type"), _o("List", "element_size")
    l_size, l_cap, l_storage = _o("List", "size"), _o("List", "capacity"), _o("List", "storage")
    v_tag, v_bits, v_size = _o("Variant", "tag"), _o("Variant", "bits"), layout.sizeof("Variant")
    buffer_size, list_size = layout.sizeof("Buffer"), layout.sizeof("List")
    t_kind, t_args, t_message = _o("Trap", "kind"), _o("Trap", "args"), _o("Trap", "message")
    t_frame_count, t_frames = _o("Trap", "frame_count"), _o("Trap", "frames")
    f_function, f_pc, frame_size = _o("Frame", "function"), _o("Frame", "pc"), layout.sizeof("Frame")
    max_frames = layout.field("Trap", "frames").type[2]
    return f"""
declare ptr @malloc(i64)
declare ptr @calloc(i64, i64)
declare void @free(ptr)
declare i32 @posix_memalign(ptr, i64, i64)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)

define void @jv_retain(ptr %o) {{
entry:
  %null = icmp eq ptr %o, null
  br i1 %null, label %done, label %inc
inc:
  %old = atomicrmw add ptr %o, i64 1 monotonic
  br label %done
done:
  ret void
}}

define void @jv_release(ptr %o) {{
entry:
  %null = icmp eq ptr %o, null
  br i1 %null, label %done, label %dec
dec:
  %old = atomicrmw sub ptr %o, i64 1 acq_rel
  %last = icmp eq i64 %old, 1
  br i1 %last, label %destroy, label %done
destroy:
  %slot = getelementptr inbounds i8, ptr %o, i64 {destroy}
  %fn = load ptr, ptr %slot
  call void %fn(ptr %o)
  br label %done
done:
  ret void
}}

define void @jv_buffer_destroy(ptr %b) {{
entry:
  %pa = getelementptr inbounds i8, ptr %b, i64 {b_alloc}
  %alloc = load ptr, ptr %pa
  call void @free(ptr %alloc)
  %po = getelementptr inbounds i8, ptr %b, i64 {b_origin}
  %origin = load ptr, ptr %po
  call void @jv_release(ptr %origin)
  call void @free(ptr %b)
  ret void
}}

; Python-backed objects (runtime.vm.objects.NativeObject): a header (followed by the facts
; native code reads of some of them: %size bytes in all) whose destruction calls Python's
; hook (which drops the Python object) and then frees the memory. The hook is the
; same for every object; each creation stores it, so no separate set-up call is needed.
@python_destroy_hook = internal global ptr null

define ptr @jv_python_object_new(i32 %type, ptr %hook, i64 %size) {{
entry:
  store atomic ptr %hook, ptr @python_destroy_hook monotonic, align 8
  %o = call ptr @malloc(i64 %size)
  %null = icmp eq ptr %o, null
  br i1 %null, label %fail, label %init
init:
  call void @init_header(ptr %o, i32 %type, ptr @python_object_destroy)
  ret ptr %o
fail:
  ret ptr null
}}

define internal void @python_object_destroy(ptr %o) {{
entry:
  %hook = load atomic ptr, ptr @python_destroy_hook monotonic, align 8
  call void %hook(ptr %o)
  call void @free(ptr %o)
  ret void
}}

define internal void @init_header(ptr %o, i32 %type, ptr %destroy) {{
entry:
  store i64 1, ptr %o
  %pt = getelementptr inbounds i8, ptr %o, i64 {tid}
  store i32 %type, ptr %pt
  %pf = getelementptr inbounds i8, ptr %pt, i64 4
  store i32 0, ptr %pf
  %pd = getelementptr inbounds i8, ptr %o, i64 {destroy}
  store ptr %destroy, ptr %pd
  ret void
}}

; The fields of a new buffer object: its memory, what keeps it alive (%origin, a retained
; object, or %alloc, freed with the buffer).
define internal void @init_buffer(ptr %b, ptr %data, i64 %len, i32 %access, ptr %origin, ptr %alloc) {{
entry:
  call void @init_header(ptr %b, i32 {BUFFER_TYPE_ID}, ptr @jv_buffer_destroy)
  %pd = getelementptr inbounds i8, ptr %b, i64 {b_data}
  store ptr %data, ptr %pd
  %pl = getelementptr inbounds i8, ptr %b, i64 {b_len}
  store i64 %len, ptr %pl
  %pac = getelementptr inbounds i8, ptr %b, i64 {b_access}
  store i32 %access, ptr %pac
  %pr = getelementptr inbounds i8, ptr %pac, i64 4
  store i32 0, ptr %pr
  %po = getelementptr inbounds i8, ptr %b, i64 {b_origin}
  store ptr %origin, ptr %po
  %pa = getelementptr inbounds i8, ptr %b, i64 {b_alloc}
  store ptr %alloc, ptr %pa
  ret void
}}

; A zeroed buffer of %len bytes aligned to %align (a power of two); null when out of memory.
define ptr @jv_buffer_alloc(i64 %len, i64 %align, i32 %access) {{
entry:
  %b = call ptr @buffer_alloc(i64 %len, i64 %align, i32 %access, i1 true)
  ret ptr %b
}}

; For memory its creator overwrites in full at once (marshalled inputs): no zeroing.
define ptr @jv_buffer_alloc_uninitialized(i64 %len, i64 %align, i32 %access) {{
entry:
  %b = call ptr @buffer_alloc(i64 %len, i64 %align, i32 %access, i1 false)
  ret ptr %b
}}

define internal ptr @buffer_alloc(i64 %len, i64 %align, i32 %access, i1 %zero) {{
entry:
  %small = icmp ult i64 %align, 16
  %a = select i1 %small, i64 16, i64 %align
  %b = call ptr @malloc(i64 {buffer_size})
  %bnull = icmp eq ptr %b, null
  br i1 %bnull, label %fail, label %data
data:
  %slot = alloca ptr
  %empty = icmp eq i64 %len, 0
  %n = select i1 %empty, i64 1, i64 %len
  %default_align = icmp eq i64 %a, 16
  %use_calloc = and i1 %default_align, %zero
  br i1 %use_calloc, label %zeroed, label %aligned
zeroed:
  ; malloc's alignment is 16 here (x86_64, aarch64): calloc hands large buffers over as
  ; fresh zero pages instead of writing zeros over gigabytes.
  %z = call ptr @calloc(i64 %n, i64 1)
  %znull = icmp eq ptr %z, null
  br i1 %znull, label %free_header, label %init
aligned:
  %rc = call i32 @posix_memalign(ptr %slot, i64 %a, i64 %n)
  %bad = icmp ne i32 %rc, 0
  br i1 %bad, label %free_header, label %got
got:
  %m = load ptr, ptr %slot
  br i1 %zero, label %clear, label %init
clear:
  call void @llvm.memset.p0.i64(ptr %m, i8 0, i64 %n, i1 false)
  br label %init
free_header:
  call void @free(ptr %b)
  br label %fail
init:
  %d = phi ptr [ %z, %zeroed ], [ %m, %clear ], [ %m, %got ]
  call void @init_buffer(ptr %b, ptr %d, i64 %len, i32 %access, ptr null, ptr %d)
  ret ptr %b
fail:
  ret ptr null
}}

; A buffer over memory owned by %origin (retained; may be null for static memory).
define ptr @jv_buffer_wrap(ptr %data, i64 %len, i32 %access, ptr %origin) {{
entry:
  %b = call ptr @malloc(i64 {buffer_size})
  %bnull = icmp eq ptr %b, null
  br i1 %bnull, label %fail, label %init
init:
  call void @jv_retain(ptr %origin)
  call void @init_buffer(ptr %b, ptr %data, i64 %len, i32 %access, ptr %origin, ptr null)
  ret ptr %b
fail:
  ret ptr null
}}

; Releases the refs held in elements [%from, %to) and zeroes them.
define internal void @list_reset_range(ptr %l, i32 %from, i32 %to) {{
entry:
  %pm = getelementptr inbounds i8, ptr %l, i64 {l_mode}
  %mode = load i32, ptr %pm
  %pe = getelementptr inbounds i8, ptr %l, i64 {l_esize}
  %esize32 = load i32, ptr %pe
  %esize = zext i32 %esize32 to i64
  %ps = getelementptr inbounds i8, ptr %l, i64 {l_storage}
  %storage = load ptr, ptr %ps
  %any = icmp ult i32 %from, %to
  br i1 %any, label %loop, label %zero
loop:
  %i = phi i32 [ %from, %entry ], [ %next, %step ]
  %i64 = zext i32 %i to i64
  %off = mul i64 %i64, %esize
  %elem = getelementptr inbounds i8, ptr %storage, i64 %off
  switch i32 %mode, label %step [ i32 {layout.LIST_REF}, label %ref
                                   i32 {layout.LIST_VARIANT}, label %variant ]
ref:
  %r = load ptr, ptr %elem
  call void @jv_release(ptr %r)
  br label %step
variant:
  %tag = load i32, ptr %elem
  %isref = icmp eq i32 %tag, {layout.VARIANT_REF}
  br i1 %isref, label %variant_ref, label %step
variant_ref:
  %pb = getelementptr inbounds i8, ptr %elem, i64 {v_bits}
  %vr = load ptr, ptr %pb
  call void @jv_release(ptr %vr)
  br label %step
step:
  %next = add i32 %i, 1
  %more = icmp ult i32 %next, %to
  br i1 %more, label %loop, label %zero
zero:
  br i1 %any, label %do_zero, label %done
do_zero:
  %from64 = zext i32 %from to i64
  %to64 = zext i32 %to to i64
  %start = mul i64 %from64, %esize
  %count = sub i64 %to64, %from64
  %bytes = mul i64 %count, %esize
  %p = getelementptr inbounds i8, ptr %storage, i64 %start
  call void @llvm.memset.p0.i64(ptr %p, i8 0, i64 %bytes, i1 false)
  br label %done
done:
  ret void
}}

define void @jv_list_destroy(ptr %l) {{
entry:
  %psz = getelementptr inbounds i8, ptr %l, i64 {l_size}
  %size = load i32, ptr %psz
  call void @list_reset_range(ptr %l, i32 0, i32 %size)
  %ps = getelementptr inbounds i8, ptr %l, i64 {l_storage}
  %storage = load ptr, ptr %ps
  call void @free(ptr %storage)
  call void @free(ptr %l)
  ret void
}}

; An empty list with room for %capacity elements; null when out of memory.
define ptr @jv_list_alloc(i32 %mode, i32 %etype, i32 %esize, i32 %capacity) {{
entry:
  %l = call ptr @malloc(i64 {list_size})
  %lnull = icmp eq ptr %l, null
  br i1 %lnull, label %fail, label %storage
storage:
  %cap64 = zext i32 %capacity to i64
  %es64 = zext i32 %esize to i64
  %bytes0 = mul i64 %cap64, %es64
  %empty = icmp eq i64 %bytes0, 0
  %bytes = select i1 %empty, i64 8, i64 %bytes0
  %s = call ptr @malloc(i64 %bytes)
  %snull = icmp eq ptr %s, null
  br i1 %snull, label %free_list, label %init
free_list:
  call void @free(ptr %l)
  br label %fail
init:
  call void @llvm.memset.p0.i64(ptr %s, i8 0, i64 %bytes, i1 false)
  call void @init_header(ptr %l, i32 {LIST_TYPE_ID}, ptr @jv_list_destroy)
  %pm = getelementptr inbounds i8, ptr %l, i64 {l_mode}
  store i32 %mode, ptr %pm
  %pt = getelementptr inbounds i8, ptr %l, i64 {l_etype}
  store i32 %etype, ptr %pt
  %pe = getelementptr inbounds i8, ptr %l, i64 {l_esize}
  store i32 %esize, ptr %pe
  %psz = getelementptr inbounds i8, ptr %l, i64 {l_size}
  store i32 0, ptr %psz
  %pc = getelementptr inbounds i8, ptr %l, i64 {l_cap}
  store i32 %capacity, ptr %pc
  %pr = getelementptr inbounds i8, ptr %pc, i64 4
  store i32 0, ptr %pr
  %ps = getelementptr inbounds i8, ptr %l, i64 {l_storage}
  store ptr %s, ptr %ps
  ret ptr %l
fail:
  ret ptr null
}}

; Grows capacity to at least %minimum; 0 on success, 8 (RESOURCE_EXHAUSTED) without memory.
define i32 @jv_list_reserve(ptr %l, i32 %minimum) {{
entry:
  %pc = getelementptr inbounds i8, ptr %l, i64 {l_cap}
  %cap = load i32, ptr %pc
  %enough = icmp ule i32 %minimum, %cap
  br i1 %enough, label %ok, label %grow
grow:
  %pe = getelementptr inbounds i8, ptr %l, i64 {l_esize}
  %esize32 = load i32, ptr %pe
  %esize = zext i32 %esize32 to i64
  %min64 = zext i32 %minimum to i64
  %bytes = mul i64 %min64, %esize
  %s = call ptr @malloc(i64 %bytes)
  %snull = icmp eq ptr %s, null
  br i1 %snull, label %oom, label %copy
copy:
  call void @llvm.memset.p0.i64(ptr %s, i8 0, i64 %bytes, i1 false)
  %ps = getelementptr inbounds i8, ptr %l, i64 {l_storage}
  %old = load ptr, ptr %ps
  %psz = getelementptr inbounds i8, ptr %l, i64 {l_size}
  %size = load i32, ptr %psz
  %size64 = zext i32 %size to i64
  %used = mul i64 %size64, %esize
  call void @llvm.memcpy.p0.p0.i64(ptr %s, ptr %old, i64 %used, i1 false)
  call void @free(ptr %old)
  store ptr %s, ptr %ps
  store i32 %minimum, ptr %pc
  br label %ok
ok:
  ret i32 0
oom:
  ret i32 8
}}

; (uint64_t)roundf(x) as IREE's runtime computes vm.cast.f32.ui64 on this host: on x86_64
; as clang compiles the conversion (exact in [0, 2^64) except NaN/inf/overflow, which give
; INT64_MIN; negatives wrap); on aarch64 the conversion saturates (NaN and negatives give
; 0). Explicit, so no optimizer folds an out-of-range conversion differently.
declare float @llvm.round.f32(float)
define i64 @jv_cast_f32_ui64(float %x) {{
entry:
  %r = call float @llvm.round.f32(float %x)
{_cast_f32_ui64_body()}
}}

; Records a trap: status, kind and its integer arguments, optional message; no frames yet.
define void @jv_trap_set(ptr %t, i32 %status, i32 %kind, i64 %a0, i64 %a1, i64 %a2, i64 %a3, ptr %msg) {{
entry:
  store i32 %status, ptr %t
  %pk = getelementptr inbounds i8, ptr %t, i64 {t_kind}
  store i32 %kind, ptr %pk
  %pa = getelementptr inbounds i8, ptr %t, i64 {t_args}
  store i64 %a0, ptr %pa
  %pa1 = getelementptr inbounds i64, ptr %pa, i64 1
  store i64 %a1, ptr %pa1
  %pa2 = getelementptr inbounds i64, ptr %pa, i64 2
  store i64 %a2, ptr %pa2
  %pa3 = getelementptr inbounds i64, ptr %pa, i64 3
  store i64 %a3, ptr %pa3
  %pm = getelementptr inbounds i8, ptr %t, i64 {t_message}
  store ptr %msg, ptr %pm
  %pf = getelementptr inbounds i8, ptr %t, i64 {t_frame_count}
  store i32 0, ptr %pf
  ret void
}}

; Appends a frame (innermost first) while there is room.
define void @jv_trap_push_frame(ptr %t, ptr %state, i32 %fn, i32 %pc) {{
entry:
  %pf = getelementptr inbounds i8, ptr %t, i64 {t_frame_count}
  %n = load i32, ptr %pf
  %room = icmp ult i32 %n, {max_frames}
  br i1 %room, label %push, label %done
push:
  %n64 = zext i32 %n to i64
  %off = mul i64 %n64, {frame_size}
  %base = getelementptr inbounds i8, ptr %t, i64 {t_frames}
  %fr = getelementptr inbounds i8, ptr %base, i64 %off
  store ptr %state, ptr %fr
  %pfn = getelementptr inbounds i8, ptr %fr, i64 {f_function}
  store i32 %fn, ptr %pfn
  %ppc = getelementptr inbounds i8, ptr %fr, i64 {f_pc}
  store i32 %pc, ptr %ppc
  %n1 = add i32 %n, 1
  store i32 %n1, ptr %pf
  br label %done
done:
  ret void
}}

; Sets the size, releasing refs beyond a smaller size and zeroing new elements.
define i32 @jv_list_resize(ptr %l, i32 %new_size) {{
entry:
  %psz = getelementptr inbounds i8, ptr %l, i64 {l_size}
  %size = load i32, ptr %psz
  %shrink = icmp ult i32 %new_size, %size
  br i1 %shrink, label %do_shrink, label %do_grow
do_shrink:
  call void @list_reset_range(ptr %l, i32 %new_size, i32 %size)
  store i32 %new_size, ptr %psz
  ret i32 0
do_grow:
  %rc = call i32 @jv_list_reserve(ptr %l, i32 %new_size)
  %bad = icmp ne i32 %rc, 0
  br i1 %bad, label %fail, label %set
set:
  store i32 %new_size, ptr %psz
  ret i32 0
fail:
  ret i32 %rc
}}
"""


# Name -> ctypes prototype of every exported runtime function.
PROTOTYPES = {
    "jv_retain": ctypes.CFUNCTYPE(None, ctypes.c_void_p),
    "jv_release": ctypes.CFUNCTYPE(None, ctypes.c_void_p),
    "jv_python_object_new": ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint64),
    "jv_buffer_destroy": ctypes.CFUNCTYPE(None, ctypes.c_void_p),
    "jv_list_destroy": ctypes.CFUNCTYPE(None, ctypes.c_void_p),
    "jv_buffer_alloc": ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint32),
    "jv_buffer_alloc_uninitialized": ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64,
                                                      ctypes.c_uint32),
    "jv_buffer_wrap": ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32,
                                       ctypes.c_void_p),
    "jv_list_alloc": ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32,
                                      ctypes.c_uint32),
    "jv_list_reserve": ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_uint32),
    "jv_list_resize": ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_uint32),
    "jv_cast_f32_ui64": ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_float),
    "jv_trap_set": ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32, ctypes.c_int64,
                                    ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p),
    "jv_trap_push_frame": ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32,
                                           ctypes.c_int32),
}


def _siphash_callback(ptr, length):
    from .hashing import siphash24

    return siphash24(ctypes.string_at(ptr, length) if length else b"")


# Runtime functions implemented in Python, reachable from native code as plain symbols
# (used only off hot paths).
CALLBACKS = {
    "jv_siphash24": (ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_uint64), _siphash_callback),
}
_callback_objects: dict[str, object] = {}


def prototype(name: str):
    """The ctypes prototype of a native runtime function or callback, or None."""
    if name in PROTOTYPES:
        return PROTOTYPES[name]
    if name in CALLBACKS:
        return CALLBACKS[name][0]
    return None


def initialize_llvm() -> None:
    """Initializes LLVM's native target once per process (idempotent)."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()


def host_target_machine():
    """The runtime engine's target machine (created once; that engine owns it)."""
    global _target_machine
    if _target_machine is None:
        _target_machine = new_host_target_machine(2)
    return _target_machine


def new_host_target_machine(opt: int):
    """A target machine of its own for another engine (an engine frees its machine)."""
    initialize_llvm()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
        opt=opt, reloc="default", codemodel="jitdefault")


def _register_libc() -> None:
    libc = ctypes.CDLL(None)
    for name in LIBC_SYMBOLS:
        addr = ctypes.cast(getattr(libc, name), ctypes.c_void_p).value
        llvm.add_symbol(name, addr)
        ADDRESSES[name] = addr


def load() -> dict[str, object]:
    """Compiles the runtime's native functions (once) and returns name -> ctypes function."""
    global _engine
    from . import listops  # noqa: F401  (registers its callbacks)

    with _lock:
        if _engine is None:
            initialize_llvm()
            _register_libc()
            mathlib.register_symbols()
            mod = llvm.parse_assembly(_ir_text())
            mod.triple = llvm.get_process_triple()
            mod.verify()
            engine = llvm.create_mcjit_compiler(mod, host_target_machine())
            engine.finalize_object()
            for name in PROTOTYPES:
                addr = engine.get_function_address(name)
                ADDRESSES[name] = addr
                llvm.add_symbol(name, addr)
            for name, (proto, impl) in CALLBACKS.items():
                cb = _callback_objects[name] = proto(impl)
                ADDRESSES[name] = ctypes.cast(cb, ctypes.c_void_p).value
                llvm.add_symbol(name, ADDRESSES[name])
            _engine = engine
    return {name: proto(ADDRESSES[name]) for name, proto in PROTOTYPES.items()}


class _Lazy:
    """Module-level access to the compiled functions: `nativelib.fn.jv_retain(addr)`."""

    _fns: dict | None = None

    def __getattr__(self, name):  # only on first use of a name: it is cached as an attribute
        if _Lazy._fns is None:
            _Lazy._fns = load()
        f = _Lazy._fns[name]
        setattr(self, name, f)
        return f


fn = _Lazy()
