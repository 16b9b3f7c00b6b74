; What the HAL's exports share (runtime.modules.hal.native): argument slots, ref checks,
; trap records and the texts their messages need. Failures are recorded as trap kinds
; (hal.trap_kinds) with integer arguments; texts only the program or native code knows (an
; assert's message, a shape) travel as owned strings, formatted by Python when raised.
declare ptr @malloc(i64)
declare ptr @calloc(i64, i64)
declare void @free(ptr)
declare i64 @strlen(ptr)
declare i32 @snprintf(ptr, i64, ptr, ...)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
declare void @llvm.memmove.p0.p0.i64(ptr, ptr, i64, i1)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
declare void @jv_retain(ptr)
declare void @jv_release(ptr)
declare void @jv_object_init(ptr, i32, ptr)
declare ptr @jv_buffer_alloc(i64, i64, i32)
declare ptr @jv_buffer_alloc_uninitialized(i64, i64, i32)
declare ptr @jv_buffer_wrap(ptr, i64, i32, ptr)
declare void @jv_trap_set(ptr, i32, i32, i64, i64, i64, i64, ptr)
declare void @jv_failure_clear(ptr)
declare void @jv_failure_copy(ptr, ptr)
declare void @jv_trap_from_failure(ptr, ptr)

${strings}

; --- argument slots -------------------------------------------------------------------------

define internal i64 @arg(ptr %args, i64 %k) alwaysinline {
entry:
  %p = getelementptr inbounds i64, ptr %args, i64 %k
  %v = load i64, ptr %p
  ret i64 %v
}

define internal i32 @arg32(ptr %args, i64 %k) alwaysinline {
entry:
  %v = call i64 @arg(ptr %args, i64 %k)
  %w = trunc i64 %v to i32
  ret i32 %w
}

define internal ptr @ref_arg(ptr %args, i64 %k) alwaysinline {
entry:
  %p = getelementptr inbounds i64, ptr %args, i64 %k
  %v = load ptr, ptr %p
  ret ptr %v
}

; A result slot of a ref: an owned reference (retained here).
define internal void @give_ref(ptr %results, i64 %k, ptr %o) alwaysinline {
entry:
  call void @jv_retain(ptr %o)
  %p = getelementptr inbounds i64, ptr %results, i64 %k
  store ptr %o, ptr %p
  ret void
}

define internal void @give(ptr %results, i64 %k, i64 %v) alwaysinline {
entry:
  %p = getelementptr inbounds i64, ptr %results, i64 %k
  store i64 %v, ptr %p
  ret void
}

; --- refs -----------------------------------------------------------------------------------

; The runtime type of %o, 0 for null.
define internal i32 @type_of(ptr %o) alwaysinline {
entry:
  %null = icmp eq ptr %o, null
  br i1 %null, label %none, label %look
look:
  %p = getelementptr inbounds i8, ptr %o, i64 ${Object.type_id}
  %t = load i32, ptr %p
  ret i32 %t
none:
  ret i32 0
}

define internal i1 @is_a(ptr %o, i32 %type) alwaysinline {
entry:
  %t = call i32 @type_of(ptr %o)
  %same = icmp eq i32 %t, %type
  %some = icmp ne ptr %o, null
  %ok = and i1 %same, %some
  ret i1 %ok
}

; Whether %o is null or of %type (the nullable refs: fences, bindings).
define internal i1 @is_a_or_null(ptr %o, i32 %type) alwaysinline {
entry:
  %null = icmp eq ptr %o, null
  %a = call i1 @is_a(ptr %o, i32 %type)
  %ok = or i1 %null, %a
  ret i1 %ok
}

; IREE's *_check_deref failure: `<label>: expected !<type>, got <what %o is>`.
define internal i32 @mismatch(ptr %t, ptr %label, i32 %expected, ptr %o) {
entry:
  %have = call i32 @type_of(ptr %o)
  %e = zext i32 %expected to i64
  %h = zext i32 %have to i64
  call void @jv_trap_set(ptr %t, i32 ${S_INVALID_ARGUMENT}, i32 ${K_REF_MISMATCH}, i64 %e, i64 %h, i64 -1, i64 0,
                         ptr %label)
  ret i32 ${S_INVALID_ARGUMENT}
}

; The same for element %index of a list of refs (`<label> <index>: ...`).
define internal i32 @mismatch_at(ptr %t, ptr %label, i32 %expected, ptr %o, i64 %index) {
entry:
  %have = call i32 @type_of(ptr %o)
  %e = zext i32 %expected to i64
  %h = zext i32 %have to i64
  call void @jv_trap_set(ptr %t, i32 ${S_INVALID_ARGUMENT}, i32 ${K_REF_MISMATCH}, i64 %e, i64 %h, i64 %index,
                         i64 0, ptr %label)
  ret i32 ${S_INVALID_ARGUMENT}
}

; --- trap records ---------------------------------------------------------------------------

define internal i32 @trap(ptr %t, i32 %status, i32 %kind, i64 %a0, i64 %a1, i64 %a2, i64 %a3, ptr %msg) {
entry:
  call void @jv_trap_set(ptr %t, i32 %status, i32 %kind, i64 %a0, i64 %a1, i64 %a2, i64 %a3, ptr %msg)
  ret i32 %status
}

; A trap whose message %msg (may be null) the record now owns.
define internal i32 @trap_owned(ptr %t, i32 %status, i32 %kind, i64 %a0, i64 %a1, i64 %a2, i64 %a3, ptr %msg) {
entry:
  call void @jv_trap_set(ptr %t, i32 %status, i32 %kind, i64 %a0, i64 %a1, i64 %a2, i64 %a3, ptr %msg)
  %po = getelementptr inbounds i8, ptr %t, i64 ${Trap.message_owned}
  store i32 1, ptr %po
  ret i32 %status
}

; An owned Failure of kind FAIL saying %text (owned), for a trap's `inner`; null without memory.
define internal ptr @detail(ptr %text) {
entry:
  %f = call ptr @calloc(i64 1, i64 ${sizeof Failure})
  %null = icmp eq ptr %f, null
  br i1 %null, label %fail, label %fill
fill:
${fields Failure %f f}
  store i32 ${K_FAIL}, ptr %f.kind
  store ptr %text, ptr %f.message
  ret ptr %f
fail:
  call void @free(ptr %text)
  ret ptr null
}

define internal void @set_inner(ptr %t, ptr %inner) alwaysinline {
entry:
  %pi = getelementptr inbounds i8, ptr %t, i64 ${Trap.inner}
  store ptr %inner, ptr %pi
  ret void
}

define internal i32 @out_of_memory(ptr %t) {
entry:
  call void @jv_trap_set(ptr %t, i32 ${S_RESOURCE_EXHAUSTED}, i32 ${K_OUT_OF_MEMORY}, i64 0, i64 0, i64 0, i64 0,
                         ptr @s.oom)
  ret i32 ${S_RESOURCE_EXHAUSTED}
}

; --- texts ----------------------------------------------------------------------------------

; A vm.buffer's bytes as a NUL-terminated copy (IREE's iree_vm_buffer_as_string); null without memory.
define internal ptr @vm_text(ptr %b) {
entry:
  %pd = getelementptr inbounds i8, ptr %b, i64 ${Buffer.data}
  %data = load ptr, ptr %pd
  %pl = getelementptr inbounds i8, ptr %b, i64 ${Buffer.length}
  %len = load i64, ptr %pl
  %n = add i64 %len, 1
  %p = call ptr @malloc(i64 %n)
  %null = icmp eq ptr %p, null
  br i1 %null, label %done, label %copy
copy:
  call void @llvm.memcpy.p0.p0.i64(ptr %p, ptr %data, i64 %len, i1 false)
  %end = getelementptr inbounds i8, ptr %p, i64 %len
  store i8 0, ptr %end
  br label %done
done:
  ret ptr %p
}

; %count i64s at %dims as text: `2x3` (%tuple 0) or Python's tuple `(2, 3)`, `(2,)` (%tuple 1).
define internal ptr @dims_text(ptr %dims, i64 %count, i1 %tuple) {
entry:
  %room0 = mul i64 %count, 24
  %room = add i64 %room0, 8
  %p = call ptr @malloc(i64 %room)
  %null = icmp eq ptr %p, null
  br i1 %null, label %done, label %open
open:
  store i8 0, ptr %p
  %start = select i1 %tuple, i64 1, i64 0
  br i1 %tuple, label %paren, label %check
paren:
  store i8 40, ptr %p  ; (
  br label %check
check:
  %any = icmp ne i64 %count, 0
  br i1 %any, label %loop, label %close
loop:
  %i = phi i64 [ 0, %check ], [ %i1, %loop ]
  %at = phi i64 [ %start, %check ], [ %at2, %loop ]
  %pi = getelementptr inbounds i64, ptr %dims, i64 %i
  %d = load i64, ptr %pi
  %first = icmp eq i64 %i, 0
  %sep_tuple = select i1 %tuple, ptr @s.comma, ptr @s.times
  %sep = select i1 %first, ptr @s.empty, ptr %sep_tuple
  %dst = getelementptr inbounds i8, ptr %p, i64 %at
  %left = sub i64 %room, %at
  %w = call i32 (ptr, i64, ptr, ...) @snprintf(ptr %dst, i64 %left, ptr @s.sep_lld, ptr %sep, i64 %d)
  %w64 = sext i32 %w to i64
  %at2 = add i64 %at, %w64
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %count
  br i1 %more, label %loop, label %close
close:
  %end = phi i64 [ %start, %check ], [ %at2, %loop ]
  br i1 %tuple, label %tail, label %done
tail:
  %one = icmp eq i64 %count, 1
  %closing = select i1 %one, ptr @s.comma_paren, ptr @s.paren
  %dst2 = getelementptr inbounds i8, ptr %p, i64 %end
  %left2 = sub i64 %room, %end
  %w2 = call i32 (ptr, i64, ptr, ...) @snprintf(ptr %dst2, i64 %left2, ptr @s.str, ptr %closing)
  br label %done
done:
  ret ptr %p
}

; `; expected shape `<want>`, actual shape `<have>`` (buffer_view.assert's detail).
define internal ptr @shapes_text(ptr %want, i64 %want_rank, ptr %have, i64 %have_rank) {
entry:
  %w0 = call ptr @dims_text(ptr %want, i64 %want_rank, i1 false)
  %h0 = call ptr @dims_text(ptr %have, i64 %have_rank, i1 false)
  %wnull = icmp eq ptr %w0, null
  %w = select i1 %wnull, ptr @s.empty, ptr %w0
  %hnull = icmp eq ptr %h0, null
  %h = select i1 %hnull, ptr @s.empty, ptr %h0
  %wn = call i64 @strlen(ptr %w)
  %hn = call i64 @strlen(ptr %h)
  %n0 = add i64 %wn, %hn
  %n = add i64 %n0, 64
  %p = call ptr @malloc(i64 %n)
  %null = icmp eq ptr %p, null
  br i1 %null, label %done, label %fill
fill:
  %r = call i32 (ptr, i64, ptr, ...) @snprintf(ptr %p, i64 %n, ptr @s.shapes, ptr %w, ptr %h)
  br label %done
done:
  call void @free(ptr %w0)
  call void @free(ptr %h0)
  ret ptr %p
}
