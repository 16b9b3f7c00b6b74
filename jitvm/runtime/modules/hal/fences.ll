; Semaphores and hal.fence.* on the synchronous local device: a wait finds its timepoints
; reached, a failure to propagate, or nothing that will ever signal them (reported instead
; of blocking forever, as the Python HAL did).

; --- semaphores and fences ------------------------------------------------------------------

define internal ptr @timepoint(ptr %f, i64 %i) alwaysinline {
entry:
  %off = mul i64 %i, ${sizeof Timepoint}
  %base = getelementptr inbounds i8, ptr %f, i64 ${HalFence.timepoints}
  %tp = getelementptr inbounds i8, ptr %base, i64 %off
  ret ptr %tp
}

; Whether semaphore %s has reached %value and not failed.
define internal i1 @reached(ptr %s, i64 %value) {
entry:
${fields HalSemaphore %s s}
  %failed = load i32, ptr %s.failed
  %ok = icmp eq i32 %failed, 0
  %have = load i64, ptr %s.value
  %far = icmp uge i64 %have, %value
  %r = and i1 %ok, %far
  ret i1 %r
}

; The failure of the first failed semaphore of fence %f, or null.
define internal ptr @fence_failure(ptr %f) {
entry:
  %pc = getelementptr inbounds i8, ptr %f, i64 ${HalFence.count}
  %count = load i64, ptr %pc
  %any = icmp ne i64 %count, 0
  br i1 %any, label %loop, label %none
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %next ]
  %tp = call ptr @timepoint(ptr %f, i64 %i)
  %s = load ptr, ptr %tp
${fields HalSemaphore %s s}
  %failed = load i32, ptr %s.failed
  %is = icmp ne i32 %failed, 0
  br i1 %is, label %found, label %next
next:
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %count
  br i1 %more, label %loop, label %none
found:
  ret ptr %s.failure
none:
  ret ptr null
}

; Whether every timepoint of %f is reached.
define internal i1 @fence_reached(ptr %f) {
entry:
  %pc = getelementptr inbounds i8, ptr %f, i64 ${HalFence.count}
  %count = load i64, ptr %pc
  %any = icmp ne i64 %count, 0
  br i1 %any, label %loop, label %yes
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %next ]
  %tp = call ptr @timepoint(ptr %f, i64 %i)
  %s = load ptr, ptr %tp
  %pv = getelementptr inbounds i8, ptr %tp, i64 ${Timepoint.value}
  %v = load i64, ptr %pv
  %r = call i1 @reached(ptr %s, i64 %v)
  br i1 %r, label %next, label %no
next:
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %count
  br i1 %more, label %loop, label %yes
yes:
  ret i1 1
no:
  ret i1 0
}

; IREE's status of fence %f: OK when reached, DEFERRED while pending, else its failure's.
define i32 @jv_hal_fence_status(ptr %f) {
entry:
  %failure = call ptr @fence_failure(ptr %f)
  %failed = icmp ne ptr %failure, null
  br i1 %failed, label %code, label %pending
code:
  %status = load i32, ptr %failure
  ret i32 %status
pending:
  %r = call i1 @fence_reached(ptr %f)
  %s = select i1 %r, i32 0, i32 ${S_DEFERRED}
  ret i32 %s
}

; The unreached timepoints of %f as `semaphore at <value> awaiting <value>, ...` (owned).
define internal ptr @pending_text(ptr %f) {
entry:
  %pc = getelementptr inbounds i8, ptr %f, i64 ${HalFence.count}
  %count = load i64, ptr %pc
  %room0 = mul i64 %count, 72
  %room = add i64 %room0, 1
  %p = call ptr @malloc(i64 %room)
  %null = icmp eq ptr %p, null
  br i1 %null, label %done, label %start
start:
  store i8 0, ptr %p
  %any = icmp ne i64 %count, 0
  br i1 %any, label %loop, label %done
loop:
  %i = phi i64 [ 0, %start ], [ %i1, %next ]
  %at = phi i64 [ 0, %start ], [ %at1, %next ]
  %tp = call ptr @timepoint(ptr %f, i64 %i)
  %s = load ptr, ptr %tp
  %pv = getelementptr inbounds i8, ptr %tp, i64 ${Timepoint.value}
  %v = load i64, ptr %pv
  %r = call i1 @reached(ptr %s, i64 %v)
  br i1 %r, label %next, label %write
write:
  %first = icmp eq i64 %at, 0
  %fmt = select i1 %first, ptr @s.pending_first, ptr @s.pending_next
  %ps = getelementptr inbounds i8, ptr %s, i64 ${HalSemaphore.value}
  %have = load i64, ptr %ps
  %dst = getelementptr inbounds i8, ptr %p, i64 %at
  %left = sub i64 %room, %at
  %w = call i32 (ptr, i64, ptr, ...) @snprintf(ptr %dst, i64 %left, ptr %fmt, i64 %have, i64 %v)
  %w64 = sext i32 %w to i64
  %wrote = add i64 %at, %w64
  br label %next
next:
  %at1 = phi i64 [ %at, %loop ], [ %wrote, %write ]
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %count
  br i1 %more, label %loop, label %done
done:
  ret ptr %p
}

; Signals every timepoint of %f in order; a failed or already passed semaphore is a trap.
define i32 @jv_hal_fence_signal_all(ptr %f, ptr %t) {
entry:
  %pc = getelementptr inbounds i8, ptr %f, i64 ${HalFence.count}
  %count = load i64, ptr %pc
  %any = icmp ne i64 %count, 0
  br i1 %any, label %loop, label %done
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %next ]
  %tp = call ptr @timepoint(ptr %f, i64 %i)
  %s = load ptr, ptr %tp
  %pv = getelementptr inbounds i8, ptr %tp, i64 ${Timepoint.value}
  %v = load i64, ptr %pv
${fields HalSemaphore %s s}
  %failed = load i32, ptr %s.failed
  %is_failed = icmp ne i32 %failed, 0
  br i1 %is_failed, label %already, label %order
order:
  %have = load i64, ptr %s.value
  %later = icmp ugt i64 %v, %have
  br i1 %later, label %set, label %backwards
set:
  store i64 %v, ptr %s.value
  br label %next
next:
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %count
  br i1 %more, label %loop, label %done
done:
  ret i32 0
already:
  %sa = call i32 @trap(ptr %t, i32 ${S_ABORTED}, i32 ${K_ALREADY_FAILED}, i64 0, i64 0, i64 0, i64 0, ptr null)
  %copy = call ptr @calloc(i64 1, i64 ${sizeof Failure})
  %nomem = icmp eq ptr %copy, null
  br i1 %nomem, label %already_done, label %fill
fill:
  call void @jv_failure_copy(ptr %copy, ptr %s.failure)
  call void @set_inner(ptr %t, ptr %copy)
  br label %already_done
already_done:
  ret i32 %sa
backwards:
  %sb = call i32 @trap(ptr %t, i32 ${S_OUT_OF_RANGE}, i32 ${K_NOT_MONOTONIC}, i64 %have, i64 %v, i64 0, i64 0,
                       ptr null)
  ret i32 %sb
}

; Fails every semaphore of %f not failed yet with a copy of failure (or trap record) %src.
define void @jv_hal_fence_fail_with(ptr %f, ptr %src) {
entry:
  %pc = getelementptr inbounds i8, ptr %f, i64 ${HalFence.count}
  %count = load i64, ptr %pc
  %any = icmp ne i64 %count, 0
  br i1 %any, label %loop, label %done
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %next ]
  %tp = call ptr @timepoint(ptr %f, i64 %i)
  %s = load ptr, ptr %tp
${fields HalSemaphore %s s}
  %failed = load i32, ptr %s.failed
  %fresh = icmp eq i32 %failed, 0
  br i1 %fresh, label %fail, label %next
fail:
  call void @jv_failure_copy(ptr %s.failure, ptr %src)
  store i32 1, ptr %s.failed
  br label %next
next:
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %count
  br i1 %more, label %loop, label %done
done:
  ret void
}

; A queue operation's wait on fence %f (null: none) on the synchronous device: reached, or a
; trap saying `<what>: a waited-on fence failed: ...` or that nothing will signal it.
define i32 @jv_hal_wait(ptr %f, ptr %what, ptr %t) {
entry:
  %none = icmp eq ptr %f, null
  br i1 %none, label %ok, label %check
check:
  %failure = call ptr @fence_failure(ptr %f)
  %failed = icmp ne ptr %failure, null
  br i1 %failed, label %propagate, label %pending
pending:
  %r = call i1 @fence_reached(ptr %f)
  br i1 %r, label %ok, label %forever
ok:
  ret i32 0
propagate:
  %status = load i32, ptr %failure
  %sp = call i32 @trap(ptr %t, i32 %status, i32 ${K_WAIT_FAILED}, i64 0, i64 0, i64 0, i64 0, ptr %what)
  %copy = call ptr @calloc(i64 1, i64 ${sizeof Failure})
  %nomem = icmp eq ptr %copy, null
  br i1 %nomem, label %propagated, label %fill
fill:
  call void @jv_failure_copy(ptr %copy, ptr %failure)
  call void @set_inner(ptr %t, ptr %copy)
  br label %propagated
propagated:
  ret i32 %sp
forever:
  %text = call ptr @pending_text(ptr %f)
  %sf = call i32 @trap(ptr %t, i32 ${S_DEADLINE_EXCEEDED}, i32 ${K_WAIT_FOREVER}, i64 0, i64 0, i64 0, i64 0,
                       ptr %what)
  %inner = call ptr @detail(ptr %text)
  call void @set_inner(ptr %t, ptr %inner)
  ret i32 %sf
}

; A new fence of one new semaphore at 0, awaiting 1 (hal.fence.create); null without memory.
define ptr @jv_hal_fence_make() {
entry:
  %point = alloca [2 x i64]
  %s = call ptr @jv_hal_semaphore_new(i64 0)
  %nomem = icmp eq ptr %s, null
  br i1 %nomem, label %fail, label %fence
fence:
  store ptr %s, ptr %point
  %pv = getelementptr inbounds i8, ptr %point, i64 ${Timepoint.value}
  store i64 1, ptr %pv
  %f = call ptr @jv_hal_fence_new(i64 1, ptr %point)
  call void @jv_release(ptr %s)
  ret ptr %f
fail:
  ret ptr null
}

; --- hal.fence.* ----------------------------------------------------------------------------

; hal.fence.create(device, flags)    0rI_r
define i32 @jv_hal_fence_create(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %d = call ptr @ref_arg(ptr %args, i64 0)
  %ok = call i1 @is_a(ptr %d, i32 ${HAL_DEVICE})
  br i1 %ok, label %make, label %bad
make:
  %f = call ptr @jv_hal_fence_make()
  %nomem = icmp eq ptr %f, null
  br i1 %nomem, label %oom, label %give
give:
  store ptr %f, ptr %results
  ret i32 0
oom:
  %so = call i32 @out_of_memory(ptr %t)
  ret i32 %so
bad:
  %s = call i32 @mismatch(ptr %t, ptr @s.hal_fence_create, i32 ${HAL_DEVICE}, ptr %d)
  ret i32 %s
}

; Checks that the %count refs at %refs are fences or null (`<label> <index>` otherwise).
define internal i32 @check_fences(ptr %refs, i64 %count, ptr %label, ptr %t) {
entry:
  %any = icmp ne i64 %count, 0
  br i1 %any, label %loop, label %ok
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %next ]
  %p = getelementptr inbounds ptr, ptr %refs, i64 %i
  %f = load ptr, ptr %p
  %fine = call i1 @is_a_or_null(ptr %f, i32 ${HAL_FENCE})
  br i1 %fine, label %next, label %bad
next:
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %count
  br i1 %more, label %loop, label %ok
ok:
  ret i32 0
bad:
  %s = call i32 @mismatch_at(ptr %t, ptr %label, i32 ${HAL_FENCE}, ptr %f, i64 %i)
  ret i32 %s
}

; hal.fence.join(flags, fences...) -> their timepoints as one fence, null for none    0ICrD_r
define i32 @jv_hal_fence_join(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %count = call i64 @arg(ptr %args, i64 1)
  %refs = getelementptr inbounds i64, ptr %args, i64 2
  %s = call i32 @check_fences(ptr %refs, i64 %count, ptr @s.hal_fence_join_fence, ptr %t)
  %bad = icmp ne i32 %s, 0
  br i1 %bad, label %fail, label %tally
tally:
  %any = icmp ne i64 %count, 0
  br i1 %any, label %sum, label %empty
sum:
  %i = phi i64 [ 0, %tally ], [ %i1, %added ]
  %total = phi i64 [ 0, %tally ], [ %total1, %added ]
  %p = getelementptr inbounds ptr, ptr %refs, i64 %i
  %f = load ptr, ptr %p
  %isnull = icmp eq ptr %f, null
  br i1 %isnull, label %added, label %read_count
read_count:
  %pc = getelementptr inbounds i8, ptr %f, i64 ${HalFence.count}
  %c = load i64, ptr %pc
  br label %added
added:
  %c1 = phi i64 [ 0, %sum ], [ %c, %read_count ]
  %total1 = add i64 %total, %c1
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %count
  br i1 %more, label %sum, label %summed
summed:
  %none = icmp eq i64 %total1, 0
  br i1 %none, label %empty, label %gather
empty:
  store ptr null, ptr %results
  ret i32 0
gather:
  %bytes = mul i64 %total1, ${sizeof Timepoint}
  %points = call ptr @malloc(i64 %bytes)
  %nomem = icmp eq ptr %points, null
  br i1 %nomem, label %oom, label %copy
copy:
  %j = phi i64 [ 0, %gather ], [ %j1, %copied ]
  %at = phi i64 [ 0, %gather ], [ %at1, %copied ]
  %pj = getelementptr inbounds ptr, ptr %refs, i64 %j
  %g = load ptr, ptr %pj
  %gnull = icmp eq ptr %g, null
  br i1 %gnull, label %copied, label %copy_fence
copy_fence:
  %pgc = getelementptr inbounds i8, ptr %g, i64 ${HalFence.count}
  %gc = load i64, ptr %pgc
  %gbytes = mul i64 %gc, ${sizeof Timepoint}
  %from = getelementptr inbounds i8, ptr %g, i64 ${HalFence.timepoints}
  %aoff = mul i64 %at, ${sizeof Timepoint}
  %to = getelementptr inbounds i8, ptr %points, i64 %aoff
  call void @llvm.memcpy.p0.p0.i64(ptr %to, ptr %from, i64 %gbytes, i1 false)
  %moved = add i64 %at, %gc
  br label %copied
copied:
  %at1 = phi i64 [ %at, %copy ], [ %moved, %copy_fence ]
  %j1 = add i64 %j, 1
  %more_j = icmp ult i64 %j1, %count
  br i1 %more_j, label %copy, label %make
make:
  %joined = call ptr @jv_hal_fence_new(i64 %total1, ptr %points)
  call void @free(ptr %points)
  %fnull = icmp eq ptr %joined, null
  br i1 %fnull, label %oom, label %give
give:
  store ptr %joined, ptr %results
  ret i32 0
oom:
  %so = call i32 @out_of_memory(ptr %t)
  ret i32 %so
fail:
  ret i32 %s
}

; hal.fence.query(fence)    0r_i
define i32 @jv_hal_fence_query(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %f = call ptr @ref_arg(ptr %args, i64 0)
  %ok = call i1 @is_a(ptr %f, i32 ${HAL_FENCE})
  br i1 %ok, label %query, label %bad
query:
  %status = call i32 @jv_hal_fence_status(ptr %f)
  %r = zext i32 %status to i64
  call void @give(ptr %results, i64 0, i64 %r)
  ret i32 0
bad:
  %s = call i32 @mismatch(ptr %t, ptr @s.hal_fence_query, i32 ${HAL_FENCE}, ptr %f)
  ret i32 %s
}

; hal.fence.signal(fence)    0r_v
define i32 @jv_hal_fence_signal(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %f = call ptr @ref_arg(ptr %args, i64 0)
  %ok = call i1 @is_a(ptr %f, i32 ${HAL_FENCE})
  br i1 %ok, label %signal, label %bad
signal:
  %s = call i32 @jv_hal_fence_signal_all(ptr %f, ptr %t)
  ret i32 %s
bad:
  %sb = call i32 @mismatch(ptr %t, ptr @s.hal_fence_signal, i32 ${HAL_FENCE}, ptr %f)
  ret i32 %sb
}

; hal.fence.fail(fence, status): the semaphores fail with the status's code    0ri_v
define i32 @jv_hal_fence_fail(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %failure = alloca [${sizeof Failure} x i8]
  %f = call ptr @ref_arg(ptr %args, i64 0)
  %ok = call i1 @is_a(ptr %f, i32 ${HAL_FENCE})
  br i1 %ok, label %fail, label %bad
fail:
  call void @llvm.memset.p0.i64(ptr %failure, i8 0, i64 ${sizeof Failure}, i1 false)
${fields Failure %failure r}
  %status = call i32 @arg32(ptr %args, i64 1)
  %code = and i32 %status, ${STATUS_CODE_MASK}
  store i32 %code, ptr %r.status
  store i32 ${K_FAILED_BY_PROGRAM}, ptr %r.kind
  %code64 = zext i32 %code to i64
  store i64 %code64, ptr %r.args
  call void @jv_hal_fence_fail_with(ptr %f, ptr %failure)
  ret i32 0
bad:
  %s = call i32 @mismatch(ptr %t, ptr @s.hal_fence_fail, i32 ${HAL_FENCE}, ptr %f)
  ret i32 %s
}

; hal.fence.await(timeout_ms, flags, fences...) -> OK or DEADLINE_EXCEEDED    0iICrD_i
define i32 @jv_hal_fence_await(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %count = call i64 @arg(ptr %args, i64 2)
  %refs = getelementptr inbounds i64, ptr %args, i64 3
  %s = call i32 @check_fences(ptr %refs, i64 %count, ptr @s.hal_fence_await_fence, ptr %t)
  %bad = icmp ne i32 %s, 0
  br i1 %bad, label %fail, label %start
start:
  %any = icmp ne i64 %count, 0
  br i1 %any, label %loop, label %waited
loop:
  %i = phi i64 [ 0, %start ], [ %i1, %next ]
  %first = phi ptr [ null, %start ], [ %first1, %next ]
  %p = getelementptr inbounds ptr, ptr %refs, i64 %i
  %f = load ptr, ptr %p
  %isnull = icmp eq ptr %f, null
  br i1 %isnull, label %next_null, label %check
check:
  %failure = call ptr @fence_failure(ptr %f)
  %failed = icmp ne ptr %failure, null
  br i1 %failed, label %propagate, label %reach
reach:
  %r = call i1 @fence_reached(ptr %f)
  %seen = icmp ne ptr %first, null
  %keep = or i1 %r, %seen
  %first_here = select i1 %keep, ptr %first, ptr %f
  br label %next
next_null:
  br label %next
next:
  %first1 = phi ptr [ %first_here, %reach ], [ %first, %next_null ]
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %count
  br i1 %more, label %loop, label %waited
waited:
  %pending = phi ptr [ null, %start ], [ %first1, %next ]
  %all = icmp eq ptr %pending, null
  br i1 %all, label %done, label %timeout
done:
  call void @give(ptr %results, i64 0, i64 0)
  ret i32 0
timeout:
  %ms = call i32 @arg32(ptr %args, i64 0)
  %infinite = icmp eq i32 %ms, -1
  br i1 %infinite, label %forever, label %expired
expired:
  call void @give(ptr %results, i64 0, i64 ${S_DEADLINE_EXCEEDED})
  ret i32 0
forever:
  %text = call ptr @pending_text(ptr %pending)
  %sf = call i32 @trap_owned(ptr %t, i32 ${S_DEADLINE_EXCEEDED}, i32 ${K_AWAIT_FOREVER}, i64 0, i64 0, i64 0, i64 0,
                             ptr %text)
  ret i32 %sf
propagate:
  call void @jv_trap_from_failure(ptr %t, ptr %failure)
  %fs = load i32, ptr %failure
  ret i32 %fs
fail:
  ret i32 %s
}
