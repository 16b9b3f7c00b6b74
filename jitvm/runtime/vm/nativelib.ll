; The runtime's native half (runtime.vm.nativelib): object lifetime, buffers, lists, traps.
declare ptr @malloc(i64)
declare ptr @calloc(i64, i64)
declare void @free(ptr)
declare i32 @posix_memalign(ptr, i64, i64)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
declare i64 @strlen(ptr)

define void @jv_retain(ptr %o) {
entry:
  %null = icmp eq ptr %o, null
  br i1 %null, label %done, label %inc
inc:
  %old = atomicrmw add ptr %o, i64 1 monotonic
  br label %done
done:
  ret void
}

define void @jv_release(ptr %o) {
entry:
  %null = icmp eq ptr %o, null
  br i1 %null, label %done, label %dec
dec:
  %old = atomicrmw sub ptr %o, i64 1 acq_rel
  %last = icmp eq i64 %old, 1
  br i1 %last, label %destroy, label %done
destroy:
  %slot = getelementptr inbounds i8, ptr %o, i64 ${Object.destroy}
  %fn = load ptr, ptr %slot
  call void %fn(ptr %o)
  br label %done
done:
  ret void
}

define void @jv_buffer_destroy(ptr %b) {
entry:
  %pa = getelementptr inbounds i8, ptr %b, i64 ${Buffer.allocation}
  %alloc = load ptr, ptr %pa
  call void @free(ptr %alloc)
  %po = getelementptr inbounds i8, ptr %b, i64 ${Buffer.origin}
  %origin = load ptr, ptr %po
  call void @jv_release(ptr %origin)
  call void @free(ptr %b)
  ret void
}

; Python-backed objects (runtime.vm.objects.NativeObject): a header (followed by the facts
; native code reads of some of them: %size bytes in all) whose destruction calls Python's
; hook (which drops the Python object) and then frees the memory. The hook is the
; same for every object; each creation stores it, so no separate set-up call is needed.
@python_destroy_hook = internal global ptr null

define ptr @jv_python_object_new(i32 %type, ptr %hook, i64 %size) {
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
}

define internal void @python_object_destroy(ptr %o) {
entry:
  %hook = load atomic ptr, ptr @python_destroy_hook monotonic, align 8
  call void %hook(ptr %o)
  call void @free(ptr %o)
  ret void
}

; A new object's header: one reference, its type and how it is destroyed (for native code
; outside this module that makes objects: the HAL's).
define void @jv_object_init(ptr %o, i32 %type, ptr %destroy) {
entry:
  call void @init_header(ptr %o, i32 %type, ptr %destroy)
  ret void
}

define internal void @init_header(ptr %o, i32 %type, ptr %destroy) {
entry:
  store i64 1, ptr %o
  %pt = getelementptr inbounds i8, ptr %o, i64 ${Object.type_id}
  store i32 %type, ptr %pt
  %pf = getelementptr inbounds i8, ptr %pt, i64 4
  store i32 0, ptr %pf
  %pd = getelementptr inbounds i8, ptr %o, i64 ${Object.destroy}
  store ptr %destroy, ptr %pd
  ret void
}

; The fields of a new buffer object: its memory, what keeps it alive (%origin, a retained
; object, or %alloc, freed with the buffer).
define internal void @init_buffer(ptr %b, ptr %data, i64 %len, i32 %access, ptr %origin, ptr %alloc) {
entry:
  call void @init_header(ptr %b, i32 ${BUFFER_TYPE_ID}, ptr @jv_buffer_destroy)
  %pd = getelementptr inbounds i8, ptr %b, i64 ${Buffer.data}
  store ptr %data, ptr %pd
  %pl = getelementptr inbounds i8, ptr %b, i64 ${Buffer.length}
  store i64 %len, ptr %pl
  %pac = getelementptr inbounds i8, ptr %b, i64 ${Buffer.access}
  store i32 %access, ptr %pac
  %pr = getelementptr inbounds i8, ptr %pac, i64 4
  store i32 0, ptr %pr
  %po = getelementptr inbounds i8, ptr %b, i64 ${Buffer.origin}
  store ptr %origin, ptr %po
  %pa = getelementptr inbounds i8, ptr %b, i64 ${Buffer.allocation}
  store ptr %alloc, ptr %pa
  ret void
}

; A zeroed buffer of %len bytes aligned to %align (a power of two); null when out of memory.
define ptr @jv_buffer_alloc(i64 %len, i64 %align, i32 %access) {
entry:
  %b = call ptr @buffer_alloc(i64 %len, i64 %align, i32 %access, i1 true)
  ret ptr %b
}

; For memory its creator overwrites in full at once (marshalled inputs): no zeroing.
define ptr @jv_buffer_alloc_uninitialized(i64 %len, i64 %align, i32 %access) {
entry:
  %b = call ptr @buffer_alloc(i64 %len, i64 %align, i32 %access, i1 false)
  ret ptr %b
}

define internal ptr @buffer_alloc(i64 %len, i64 %align, i32 %access, i1 %zero) {
entry:
  %small = icmp ult i64 %align, 16
  %a = select i1 %small, i64 16, i64 %align
  %b = call ptr @malloc(i64 ${sizeof Buffer})
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
}

; A buffer over memory owned by %origin (retained; may be null for static memory).
define ptr @jv_buffer_wrap(ptr %data, i64 %len, i32 %access, ptr %origin) {
entry:
  %b = call ptr @malloc(i64 ${sizeof Buffer})
  %bnull = icmp eq ptr %b, null
  br i1 %bnull, label %fail, label %init
init:
  call void @jv_retain(ptr %origin)
  call void @init_buffer(ptr %b, ptr %data, i64 %len, i32 %access, ptr %origin, ptr null)
  ret ptr %b
fail:
  ret ptr null
}

; Releases the refs held in elements [%from, %to) and zeroes them.
define internal void @list_reset_range(ptr %l, i32 %from, i32 %to) {
entry:
  %pm = getelementptr inbounds i8, ptr %l, i64 ${List.mode}
  %mode = load i32, ptr %pm
  %pe = getelementptr inbounds i8, ptr %l, i64 ${List.element_size}
  %esize32 = load i32, ptr %pe
  %esize = zext i32 %esize32 to i64
  %ps = getelementptr inbounds i8, ptr %l, i64 ${List.storage}
  %storage = load ptr, ptr %ps
  %any = icmp ult i32 %from, %to
  br i1 %any, label %loop, label %zero
loop:
  %i = phi i32 [ %from, %entry ], [ %next, %step ]
  %i64 = zext i32 %i to i64
  %off = mul i64 %i64, %esize
  %elem = getelementptr inbounds i8, ptr %storage, i64 %off
  switch i32 %mode, label %step [ i32 ${LIST_REF}, label %ref
                                   i32 ${LIST_VARIANT}, label %variant ]
ref:
  %r = load ptr, ptr %elem
  call void @jv_release(ptr %r)
  br label %step
variant:
  %tag = load i32, ptr %elem
  %isref = icmp eq i32 %tag, ${VARIANT_REF}
  br i1 %isref, label %variant_ref, label %step
variant_ref:
  %pb = getelementptr inbounds i8, ptr %elem, i64 ${Variant.bits}
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
}

define void @jv_list_destroy(ptr %l) {
entry:
  %psz = getelementptr inbounds i8, ptr %l, i64 ${List.size}
  %size = load i32, ptr %psz
  call void @list_reset_range(ptr %l, i32 0, i32 %size)
  %ps = getelementptr inbounds i8, ptr %l, i64 ${List.storage}
  %storage = load ptr, ptr %ps
  call void @free(ptr %storage)
  call void @free(ptr %l)
  ret void
}

; An empty list with room for %capacity elements; null when out of memory.
define ptr @jv_list_alloc(i32 %mode, i32 %etype, i32 %esize, i32 %capacity) {
entry:
  %l = call ptr @malloc(i64 ${sizeof List})
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
  call void @init_header(ptr %l, i32 ${LIST_TYPE_ID}, ptr @jv_list_destroy)
  %pm = getelementptr inbounds i8, ptr %l, i64 ${List.mode}
  store i32 %mode, ptr %pm
  %pt = getelementptr inbounds i8, ptr %l, i64 ${List.element_type}
  store i32 %etype, ptr %pt
  %pe = getelementptr inbounds i8, ptr %l, i64 ${List.element_size}
  store i32 %esize, ptr %pe
  %psz = getelementptr inbounds i8, ptr %l, i64 ${List.size}
  store i32 0, ptr %psz
  %pc = getelementptr inbounds i8, ptr %l, i64 ${List.capacity}
  store i32 %capacity, ptr %pc
  %pr = getelementptr inbounds i8, ptr %pc, i64 4
  store i32 0, ptr %pr
  %ps = getelementptr inbounds i8, ptr %l, i64 ${List.storage}
  store ptr %s, ptr %ps
  ret ptr %l
fail:
  ret ptr null
}

; Grows capacity to at least %minimum; 0 on success, 8 (RESOURCE_EXHAUSTED) without memory.
define i32 @jv_list_reserve(ptr %l, i32 %minimum) {
entry:
  %pc = getelementptr inbounds i8, ptr %l, i64 ${List.capacity}
  %cap = load i32, ptr %pc
  %enough = icmp ule i32 %minimum, %cap
  br i1 %enough, label %ok, label %grow
grow:
  %pe = getelementptr inbounds i8, ptr %l, i64 ${List.element_size}
  %esize32 = load i32, ptr %pe
  %esize = zext i32 %esize32 to i64
  %min64 = zext i32 %minimum to i64
  %bytes = mul i64 %min64, %esize
  %s = call ptr @malloc(i64 %bytes)
  %snull = icmp eq ptr %s, null
  br i1 %snull, label %oom, label %copy
copy:
  call void @llvm.memset.p0.i64(ptr %s, i8 0, i64 %bytes, i1 false)
  %ps = getelementptr inbounds i8, ptr %l, i64 ${List.storage}
  %old = load ptr, ptr %ps
  %psz = getelementptr inbounds i8, ptr %l, i64 ${List.size}
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
}

; (uint64_t)roundf(x) as IREE's runtime computes vm.cast.f32.ui64 on this host: on x86_64
; as clang compiles the conversion (exact in [0, 2^64) except NaN/inf/overflow, which give
; INT64_MIN; negatives wrap); on aarch64 the conversion saturates (NaN and negatives give
; 0). Explicit, so no optimizer folds an out-of-range conversion differently.
declare float @llvm.round.f32(float)
define i64 @jv_cast_f32_ui64(float %x) {
entry:
  %r = call float @llvm.round.f32(float %x)
${cast_f32_ui64}
}

; Records a trap: status, kind and its integer arguments, optional message; no frames yet.
define void @jv_trap_set(ptr %t, i32 %status, i32 %kind, i64 %a0, i64 %a1, i64 %a2, i64 %a3, ptr %msg) {
entry:
  store i32 %status, ptr %t
  %pk = getelementptr inbounds i8, ptr %t, i64 ${Trap.kind}
  store i32 %kind, ptr %pk
  %pa = getelementptr inbounds i8, ptr %t, i64 ${Trap.args}
  store i64 %a0, ptr %pa
  %pa1 = getelementptr inbounds i64, ptr %pa, i64 1
  store i64 %a1, ptr %pa1
  %pa2 = getelementptr inbounds i64, ptr %pa, i64 2
  store i64 %a2, ptr %pa2
  %pa3 = getelementptr inbounds i64, ptr %pa, i64 3
  store i64 %a3, ptr %pa3
  %pm = getelementptr inbounds i8, ptr %t, i64 ${Trap.message}
  store ptr %msg, ptr %pm
  %pi = getelementptr inbounds i8, ptr %t, i64 ${Trap.inner}
  store ptr null, ptr %pi
  %po = getelementptr inbounds i8, ptr %t, i64 ${Trap.message_owned}
  store i32 0, ptr %po
  %pf = getelementptr inbounds i8, ptr %t, i64 ${Trap.frame_count}
  store i32 0, ptr %pf
  ret void
}

; --- failures: what a trap record says, kept (a failed semaphore's) -------------------------
; A Failure and the first fields of a Trap share one layout (runtime.native.layout), so these
; take either where they read one.

; Frees what failure %f owns (its message, the failure it wraps) and zeroes it.
define void @jv_failure_clear(ptr %f) {
entry:
${fields Failure %f f}
  %msg = load ptr, ptr %f.message
  call void @free(ptr %msg)
  %inner = load ptr, ptr %f.inner
  %has_inner = icmp ne ptr %inner, null
  br i1 %has_inner, label %nested, label %zero
nested:
  call void @jv_failure_clear(ptr %inner)
  call void @free(ptr %inner)
  br label %zero
zero:
  call void @llvm.memset.p0.i64(ptr %f, i8 0, i64 ${sizeof Failure}, i1 false)
  ret void
}

; A copy of NUL-terminated %s in new memory (null for null, or without memory).
define ptr @jv_strdup(ptr %s) {
entry:
  %none = icmp eq ptr %s, null
  br i1 %none, label %null, label %copy
copy:
  %n = call i64 @strlen(ptr %s)
  %n1 = add i64 %n, 1
  %d = call ptr @malloc(i64 %n1)
  %nomem = icmp eq ptr %d, null
  br i1 %nomem, label %null, label %fill
fill:
  call void @llvm.memcpy.p0.p0.i64(ptr %d, ptr %s, i64 %n1, i1 false)
  ret ptr %d
null:
  ret ptr null
}

; Failure %dst (holding nothing) becomes a deep copy of the failure or trap record %src.
define void @jv_failure_copy(ptr %dst, ptr %src) {
entry:
${fields Failure %src s}
${fields Failure %dst d}
  %status = load i32, ptr %s.status
  store i32 %status, ptr %d.status
  %kind = load i32, ptr %s.kind
  store i32 %kind, ptr %d.kind
  call void @llvm.memcpy.p0.p0.i64(ptr %d.args, ptr %s.args, i64 32, i1 false)
  %msg = load ptr, ptr %s.message
  %dup = call ptr @jv_strdup(ptr %msg)
  store ptr %dup, ptr %d.message
  %inner = load ptr, ptr %s.inner
  %has_inner = icmp ne ptr %inner, null
  br i1 %has_inner, label %nested, label %none
nested:
  %copy = call ptr @calloc(i64 1, i64 ${sizeof Failure})
  %nomem = icmp eq ptr %copy, null
  br i1 %nomem, label %none, label %fill
fill:
  call void @jv_failure_copy(ptr %copy, ptr %inner)
  br label %none
none:
  %to = phi ptr [ null, %entry ], [ null, %nested ], [ %copy, %fill ]
  store ptr %to, ptr %d.inner
  ret void
}

; Failure %f (holding nothing) says `status`, kind FAIL and a copy of text %text.
define void @jv_failure_set_text(ptr %f, i32 %status, i32 %kind, ptr %text) {
entry:
${fields Failure %f f}
  call void @llvm.memset.p0.i64(ptr %f, i8 0, i64 ${sizeof Failure}, i1 false)
  store i32 %status, ptr %f.status
  store i32 %kind, ptr %f.kind
  %dup = call ptr @jv_strdup(ptr %text)
  store ptr %dup, ptr %f.message
  ret void
}

; Frees what trap record %t owns (an owned message, the failure it wraps).
define void @jv_trap_clear(ptr %t) {
entry:
${fields Trap %t t}
  %owned = load i32, ptr %t.message_owned
  %is_owned = icmp ne i32 %owned, 0
  br i1 %is_owned, label %free_message, label %inner
free_message:
  %msg = load ptr, ptr %t.message
  call void @free(ptr %msg)
  store ptr null, ptr %t.message
  br label %inner
inner:
  store i32 0, ptr %t.message_owned
  %f = load ptr, ptr %t.inner
  %has = icmp ne ptr %f, null
  br i1 %has, label %nested, label %done
nested:
  call void @jv_failure_clear(ptr %f)
  call void @free(ptr %f)
  store ptr null, ptr %t.inner
  br label %done
done:
  ret void
}

; Records failure %f in trap record %t (status, kind, arguments, owned copies), no frames yet.
define void @jv_trap_from_failure(ptr %t, ptr %f) {
entry:
  call void @jv_trap_clear(ptr %t)
  call void @jv_failure_copy(ptr %t, ptr %f)
${fields Trap %t t}
  store i32 1, ptr %t.message_owned
  store i32 0, ptr %t.frame_count
  ret void
}

; Appends a frame (innermost first) while there is room.
define void @jv_trap_push_frame(ptr %t, ptr %state, i32 %fn, i32 %pc) {
entry:
  %pf = getelementptr inbounds i8, ptr %t, i64 ${Trap.frame_count}
  %n = load i32, ptr %pf
  %room = icmp ult i32 %n, ${MAX_FRAMES}
  br i1 %room, label %push, label %done
push:
  %n64 = zext i32 %n to i64
  %off = mul i64 %n64, ${sizeof Frame}
  %base = getelementptr inbounds i8, ptr %t, i64 ${Trap.frames}
  %fr = getelementptr inbounds i8, ptr %base, i64 %off
  store ptr %state, ptr %fr
  %pfn = getelementptr inbounds i8, ptr %fr, i64 ${Frame.function}
  store i32 %fn, ptr %pfn
  %ppc = getelementptr inbounds i8, ptr %fr, i64 ${Frame.pc}
  store i32 %pc, ptr %ppc
  %n1 = add i32 %n, 1
  store i32 %n1, ptr %pf
  br label %done
done:
  ret void
}

; Sets the size, releasing refs beyond a smaller size and zeroing new elements.
define i32 @jv_list_resize(ptr %l, i32 %new_size) {
entry:
  %psz = getelementptr inbounds i8, ptr %l, i64 ${List.size}
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
}
