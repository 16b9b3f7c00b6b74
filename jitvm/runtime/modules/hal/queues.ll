; hal.device.allocator, hal.allocator.allocate/import and the device queue (local-sync):
; every queue operation waits (its wait fence must already be reached), runs to
; completion, then signals its signal fence, or fails it with the operation's error.

; --- allocation -----------------------------------------------------------------------------

; IREE's heap allocation from allocator %a: params canonicalized (every buffer host-visible
; and mappable), zero-filled unless %zeroed is false; the buffer in %out.
define i32 @jv_hal_allocate(ptr %a, i32 %memory_types, i32 %usage, i64 %size, i1 %zeroed, ptr %out, ptr %t) {
entry:
  %huge = icmp uge i64 %size, ${MAX_ALLOCATION}
  br i1 %huge, label %too_large, label %params
params:
  %no_type = icmp eq i32 %memory_types, 0
  %mt0 = select i1 %no_type, i32 ${MEMORY_TYPE_OPTIMAL}, i32 %memory_types
  %mt1 = or i32 %mt0, ${MEMORY_TYPE_HOST_VISIBLE}
  %mt = and i32 %mt1, ${NOT_MEMORY_TYPE_OPTIMAL}
  %no_usage = icmp eq i32 %usage, 0
  %u0 = select i1 %no_usage, i32 ${USAGE_DEFAULT}, i32 %usage
  %u = or i32 %u0, ${USAGE_HEAP}
  %pb = getelementptr inbounds i8, ptr %a, i64 ${HalAllocator.bytes_allocated}
  %old = atomicrmw add ptr %pb, i64 %size monotonic
  %z = zext i1 %zeroed to i32
  %b = call ptr @jv_hal_buffer_allocate(i64 %size, i32 %mt, i32 %u, i32 ${ACCESS_ALL}, i32 %z)
  %nomem = icmp eq ptr %b, null
  br i1 %nomem, label %oom, label %made
made:
  store ptr %b, ptr %out
  ret i32 0
oom:
  %so = call i32 @out_of_memory(ptr %t)
  ret i32 %so
too_large:
  %s = call i32 @trap(ptr %t, i32 ${S_RESOURCE_EXHAUSTED}, i32 ${K_ALLOCATION_TOO_LARGE}, i64 %size, i64 0, i64 0,
                      i64 0, ptr null)
  ret i32 %s
}

; hal.device.allocator(device)    0r_r
define i32 @jv_hal_device_allocator(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %d = call ptr @ref_arg(ptr %args, i64 0)
  %ok = call i1 @is_a(ptr %d, i32 ${HAL_DEVICE})
  br i1 %ok, label %give, label %bad
give:
  %pa = getelementptr inbounds i8, ptr %d, i64 ${HalDevice.allocator}
  %a = load ptr, ptr %pa
  call void @give_ref(ptr %results, i64 0, ptr %a)
  ret i32 0
bad:
  %s = call i32 @mismatch(ptr %t, ptr @s.hal_device_allocator, i32 ${HAL_DEVICE}, ptr %d)
  ret i32 %s
}

; hal.allocator.allocate(allocator, affinity, memory_types, usage, size)    0rIiiI_r
define i32 @jv_hal_allocator_allocate(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %a = call ptr @ref_arg(ptr %args, i64 0)
  %ok = call i1 @is_a(ptr %a, i32 ${HAL_ALLOCATOR})
  br i1 %ok, label %allocate, label %bad
allocate:
  %mt = call i32 @arg32(ptr %args, i64 2)
  %usage = call i32 @arg32(ptr %args, i64 3)
  %size = call i64 @arg(ptr %args, i64 4)
  %s = call i32 @jv_hal_allocate(ptr %a, i32 %mt, i32 %usage, i64 %size, i1 true, ptr %results, ptr %t)
  ret i32 %s
bad:
  %sb = call i32 @mismatch(ptr %t, ptr @s.hal_allocator_allocate, i32 ${HAL_ALLOCATOR}, ptr %a)
  ret i32 %sb
}

; hal.allocator.import(allocator, try, affinity, memory_types, usage, source, offset, length):
; aliases the vm.buffer's bytes (read-only sources only for constant usage)    0riIiirII_r
define i32 @jv_hal_allocator_import(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %a = call ptr @ref_arg(ptr %args, i64 0)
  %ok = call i1 @is_a(ptr %a, i32 ${HAL_ALLOCATOR})
  br i1 %ok, label %source, label %bad
source:
  %src = call ptr @ref_arg(ptr %args, i64 5)
  %ok_src = call i1 @is_a(ptr %src, i32 ${VM_BUFFER})
  br i1 %ok_src, label %range, label %bad_src
range:
  %offset = call i64 @arg(ptr %args, i64 6)
  %length0 = call i64 @arg(ptr %args, i64 7)
  %pl = getelementptr inbounds i8, ptr %src, i64 ${Buffer.length}
  %available = load i64, ptr %pl
  %whole = icmp eq i64 %length0, -1
  %length = select i1 %whole, i64 %available, i64 %length0
  %off_end = icmp ugt i64 %offset, %available
  %room = sub i64 %available, %offset
  %too_long = icmp ugt i64 %length, %room
  %outside = or i1 %off_end, %too_long
  br i1 %outside, label %bad_range, label %access
access:
  %usage0 = call i32 @arg32(ptr %args, i64 4)
  %pac = getelementptr inbounds i8, ptr %src, i64 ${Buffer.access}
  %src_access = load i32, ptr %pac
  %mutable_bit = and i32 %src_access, ${BUFFER_MUTABLE}
  %mutable = icmp ne i32 %mutable_bit, 0
  %immutable_bit = and i32 %usage0, ${USAGE_SHARING_IMMUTABLE}
  %constant = icmp ne i32 %immutable_bit, 0
  %refused0 = xor i1 %mutable, 1
  %refused1 = xor i1 %constant, 1
  %refused = and i1 %refused0, %refused1
  br i1 %refused, label %immutable, label %wrap
wrap:
  %writable = and i1 %mutable, %refused1
  %access_bits = select i1 %writable, i32 ${ACCESS_READ_WRITE}, i32 ${ACCESS_READ}
  %flags = select i1 %writable, i32 ${HOST_MUTABLE}, i32 ${HOST_READ_ONLY}
  %mt0 = call i32 @arg32(ptr %args, i64 3)
  %no_type = icmp eq i32 %mt0, 0
  %mt1 = select i1 %no_type, i32 ${MEMORY_TYPE_OPTIMAL}, i32 %mt0
  %mt2 = or i32 %mt1, ${MEMORY_TYPE_HOST_VISIBLE}
  %mt = and i32 %mt2, ${NOT_MEMORY_TYPE_OPTIMAL}
  %no_usage = icmp eq i32 %usage0, 0
  %u0 = select i1 %no_usage, i32 ${USAGE_DEFAULT}, i32 %usage0
  %usage = or i32 %u0, ${USAGE_HEAP}
  %pd = getelementptr inbounds i8, ptr %src, i64 ${Buffer.data}
  %data = load ptr, ptr %pd
  %at = getelementptr i8, ptr %data, i64 %offset
  %memory = call ptr @jv_buffer_wrap(ptr %at, i64 %length, i32 %flags, ptr %src)
  %mnull = icmp eq ptr %memory, null
  br i1 %mnull, label %oom, label %buffer
buffer:
  %b = call ptr @jv_hal_buffer_new(ptr %memory, i64 0, i64 %length, i32 %mt, i32 %access_bits, i32 %usage, ptr null)
  call void @jv_release(ptr %memory)
  %bnull = icmp eq ptr %b, null
  br i1 %bnull, label %oom, label %give
give:
  store ptr %b, ptr %results
  ret i32 0
oom:
  %so = call i32 @out_of_memory(ptr %t)
  ret i32 %so
immutable:
  %si = call i32 @trap(ptr %t, i32 ${S_PERMISSION_DENIED}, i32 ${K_IMPORT_IMMUTABLE}, i64 0, i64 0, i64 0, i64 0,
                       ptr null)
  ret i32 %si
bad_range:
  %sr = call i32 @trap(ptr %t, i32 ${S_INVALID_ARGUMENT}, i32 ${K_IMPORT_OUT_OF_BOUNDS}, i64 %offset, i64 %length,
                       i64 %available, i64 0, ptr null)
  ret i32 %sr
bad_src:
  %ss = call i32 @mismatch(ptr %t, ptr @s.hal_allocator_import_source, i32 ${VM_BUFFER}, ptr %src)
  ret i32 %ss
bad:
  %sb = call i32 @mismatch(ptr %t, ptr @s.hal_allocator_import, i32 ${HAL_ALLOCATOR}, ptr %a)
  ret i32 %sb
}

; --- the queue ------------------------------------------------------------------------------

; A queue operation's device (arg 0), wait fence (arg 2) and signal fence (arg 3), checked.
define internal i32 @queue_refs(ptr %args, ptr %device_label, ptr %wait_label, ptr %signal_label, ptr %t) {
entry:
  %d = call ptr @ref_arg(ptr %args, i64 0)
  %ok_d = call i1 @is_a(ptr %d, i32 ${HAL_DEVICE})
  br i1 %ok_d, label %wait, label %bad_d
wait:
  %w = call ptr @ref_arg(ptr %args, i64 2)
  %ok_w = call i1 @is_a_or_null(ptr %w, i32 ${HAL_FENCE})
  br i1 %ok_w, label %signal, label %bad_w
signal:
  %s = call ptr @ref_arg(ptr %args, i64 3)
  %ok_s = call i1 @is_a_or_null(ptr %s, i32 ${HAL_FENCE})
  br i1 %ok_s, label %ok, label %bad_s
ok:
  ret i32 0
bad_d:
  %sd = call i32 @mismatch(ptr %t, ptr %device_label, i32 ${HAL_DEVICE}, ptr %d)
  ret i32 %sd
bad_w:
  %sw = call i32 @mismatch(ptr %t, ptr %wait_label, i32 ${HAL_FENCE}, ptr %w)
  ret i32 %sw
bad_s:
  %ss = call i32 @mismatch(ptr %t, ptr %signal_label, i32 ${HAL_FENCE}, ptr %s)
  ret i32 %ss
}

; After the operation (status %status): its signal fence (arg 3, may be null) is signalled,
; or failed with the trap the operation recorded.
define internal i32 @queue_finish(ptr %args, i32 %status, ptr %t) {
entry:
  %s = call ptr @ref_arg(ptr %args, i64 3)
  %none = icmp eq ptr %s, null
  %failed = icmp ne i32 %status, 0
  br i1 %failed, label %fail, label %signal
fail:
  br i1 %none, label %failed_done, label %fail_fence
fail_fence:
  call void @jv_hal_fence_fail_with(ptr %s, ptr %t)
  br label %failed_done
failed_done:
  ret i32 %status
signal:
  br i1 %none, label %ok, label %signal_fence
signal_fence:
  %r = call i32 @jv_hal_fence_signal_all(ptr %s, ptr %t)
  ret i32 %r
ok:
  ret i32 0
}

; Fills %n bytes at %dst with the low %width (1, 2, 4 or 8) bytes of %pattern, repeated.
define internal void @fill_bytes(ptr %dst, i64 %n, i64 %pattern, i32 %width) {
entry:
  switch i32 %width, label %w1 [ i32 2, label %w2  i32 4, label %w4  i32 8, label %w8 ]
w1:
  %byte = trunc i64 %pattern to i8
  call void @llvm.memset.p0.i64(ptr %dst, i8 %byte, i64 %n, i1 false)
  ret void
w2:
  %p2 = trunc i64 %pattern to i16
  %n2 = lshr i64 %n, 1
  br label %loop2
loop2:
  %i2 = phi i64 [ 0, %w2 ], [ %i2.1, %body2 ]
  %more2 = icmp ult i64 %i2, %n2
  br i1 %more2, label %body2, label %done
body2:
  %q2 = getelementptr inbounds i16, ptr %dst, i64 %i2
  store i16 %p2, ptr %q2, align 1
  %i2.1 = add i64 %i2, 1
  br label %loop2
w4:
  %p4 = trunc i64 %pattern to i32
  %n4 = lshr i64 %n, 2
  br label %loop4
loop4:
  %i4 = phi i64 [ 0, %w4 ], [ %i4.1, %body4 ]
  %more4 = icmp ult i64 %i4, %n4
  br i1 %more4, label %body4, label %done
body4:
  %q4 = getelementptr inbounds i32, ptr %dst, i64 %i4
  store i32 %p4, ptr %q4, align 1
  %i4.1 = add i64 %i4, 1
  br label %loop4
w8:
  %n8 = lshr i64 %n, 3
  br label %loop8
loop8:
  %i8 = phi i64 [ 0, %w8 ], [ %i8.1, %body8 ]
  %more8 = icmp ult i64 %i8, %n8
  br i1 %more8, label %body8, label %done
body8:
  %q8 = getelementptr inbounds i64, ptr %dst, i64 %i8
  store i64 %pattern, ptr %q8, align 1
  %i8.1 = add i64 %i8, 1
  br label %loop8
done:
  ret void
}

; IREE's iree_hal_buffer_map_fill of [%offset, %offset + %length) of buffer %b.
define i32 @jv_hal_buffer_fill(ptr %b, i64 %offset, i64 %length, i64 %pattern, i32 %width, ptr %t) {
entry:
  %addr = alloca ptr
  %n = alloca i64
  %adjusted = alloca i64
  switch i32 %width, label %bad_width [ i32 1, label %empty_check  i32 2, label %empty_check
                                        i32 4, label %empty_check  i32 8, label %empty_check ]
empty_check:
  %empty = icmp eq i64 %length, 0
  br i1 %empty, label %done, label %range
range:
  %pl = getelementptr inbounds i8, ptr %b, i64 ${HalBuffer.byte_length}
  %len = load i64, ptr %pl
  %s1 = call i32 @calculate_range(i64 %len, i64 %offset, i64 %length, ptr %adjusted, i32 ${K_RANGE_OFF_END}, ptr %t)
  %bad1 = icmp ne i32 %s1, 0
  br i1 %bad1, label %fail, label %aligned
aligned:
  %adj = load i64, ptr %adjusted
  %w64 = zext i32 %width to i64
  %mask = sub i64 %w64, 1
  %or = or i64 %offset, %adj
  %rest = and i64 %or, %mask
  %misaligned = icmp ne i64 %rest, 0
  br i1 %misaligned, label %unaligned, label %map
map:
  %s2 = call i32 @jv_hal_map_range(ptr %b, i64 %offset, i64 %adj, i32 ${ACCESS_WRITE}, ptr %addr, ptr %n, ptr %t)
  %bad2 = icmp ne i32 %s2, 0
  br i1 %bad2, label %fail, label %write
write:
  %dst = load ptr, ptr %addr
  %count = load i64, ptr %n
  call void @fill_bytes(ptr %dst, i64 %count, i64 %pattern, i32 %width)
  br label %done
done:
  ret i32 0
fail:
  %s = phi i32 [ %s1, %range ], [ %s2, %map ]
  ret i32 %s
unaligned:
  %su = call i32 @trap(ptr %t, i32 ${S_INVALID_ARGUMENT}, i32 ${K_FILL_UNALIGNED}, i64 %w64, i64 %offset, i64 %adj,
                       i64 0, ptr null)
  ret i32 %su
bad_width:
  %wd = sext i32 %width to i64
  %sw = call i32 @trap(ptr %t, i32 ${S_INVALID_ARGUMENT}, i32 ${K_FILL_PATTERN}, i64 %wd, i64 0, i64 0, i64 0, ptr null)
  ret i32 %sw
}

; Writes %n bytes from %src at %offset of buffer %b (IREE's iree_hal_buffer_map_write).
define i32 @jv_hal_buffer_write(ptr %b, i64 %offset, ptr %src, i64 %n, ptr %t) {
entry:
  %addr = alloca ptr
  %len = alloca i64
  %empty = icmp eq i64 %n, 0
  br i1 %empty, label %done, label %map
map:
  %s = call i32 @jv_hal_map_range(ptr %b, i64 %offset, i64 %n, i32 ${ACCESS_WRITE}, ptr %addr, ptr %len, ptr %t)
  %bad = icmp ne i32 %s, 0
  br i1 %bad, label %fail, label %write
write:
  %dst = load ptr, ptr %addr
  call void @llvm.memmove.p0.p0.i64(ptr %dst, ptr %src, i64 %n, i1 false)
  br label %done
done:
  ret i32 0
fail:
  ret i32 %s
}

; IREE's iree_hal_buffer_map_copy: checked, and overlapping ranges of one allocation refused.
define i32 @jv_hal_buffer_copy(ptr %src, i64 %src_offset, ptr %dst, i64 %dst_offset, i64 %length0, ptr %t) {
entry:
  %from = alloca ptr
  %to = alloca ptr
  %n = alloca i64
  %m = alloca i64
  %empty = icmp eq i64 %length0, 0
  br i1 %empty, label %done, label %resolve
resolve:
  %whole = icmp eq i64 %length0, -1
  %psl = getelementptr inbounds i8, ptr %src, i64 ${HalBuffer.byte_length}
  %src_len = load i64, ptr %psl
  %rest = sub i64 %src_len, %src_offset
  %length = select i1 %whole, i64 %rest, i64 %length0
  %root_a = call ptr @allocation_of(ptr %src)
  %root_b = call ptr @allocation_of(ptr %dst)
  %same = icmp eq ptr %root_a, %root_b
  %some = icmp ne i64 %length, 0
  %check = and i1 %same, %some
  br i1 %check, label %overlap, label %map
overlap:
  %pao = getelementptr inbounds i8, ptr %src, i64 ${HalBuffer.byte_offset}
  %ao = load i64, ptr %pao
  %pbo = getelementptr inbounds i8, ptr %dst, i64 ${HalBuffer.byte_offset}
  %bo = load i64, ptr %pbo
  %ao128 = zext i64 %ao to i128
  %bo128 = zext i64 %bo to i128
  %so128 = zext i64 %src_offset to i128
  %to128 = zext i64 %dst_offset to i128
  %l128 = zext i64 %length to i128
  %lo_a = add i128 %ao128, %so128
  %lo_b = add i128 %bo128, %to128
  %hi_a = add i128 %lo_a, %l128
  %hi_b = add i128 %lo_b, %l128
  %c1 = icmp ult i128 %lo_a, %hi_b
  %c2 = icmp ult i128 %lo_b, %hi_a
  %overlaps = and i1 %c1, %c2
  br i1 %overlaps, label %refuse, label %map
map:
  %s1 = call i32 @jv_hal_map_range(ptr %src, i64 %src_offset, i64 %length, i32 ${ACCESS_READ}, ptr %from, ptr %n, ptr %t)
  %bad1 = icmp ne i32 %s1, 0
  br i1 %bad1, label %fail, label %map_dst
map_dst:
  %s2 = call i32 @jv_hal_map_range(ptr %dst, i64 %dst_offset, i64 %length, i32 ${ACCESS_WRITE}, ptr %to, ptr %m, ptr %t)
  %bad2 = icmp ne i32 %s2, 0
  br i1 %bad2, label %fail, label %copy
copy:
  %a = load ptr, ptr %from
  %b = load ptr, ptr %to
  %count = load i64, ptr %m
  call void @llvm.memmove.p0.p0.i64(ptr %b, ptr %a, i64 %count, i1 false)
  br label %done
done:
  ret i32 0
fail:
  %s = phi i32 [ %s1, %map ], [ %s2, %map_dst ]
  ret i32 %s
refuse:
  %sr = call i32 @trap(ptr %t, i32 ${S_INVALID_ARGUMENT}, i32 ${K_COPY_OVERLAP}, i64 0, i64 0, i64 0, i64 0, ptr null)
  ret i32 %sr
}

; The wait of a queue operation on its wait fence (arg 2): %what names the operation.
define internal i32 @queue_wait(ptr %args, ptr %what, ptr %t) alwaysinline {
entry:
  %w = call ptr @ref_arg(ptr %args, i64 2)
  %s = call i32 @jv_hal_wait(ptr %w, ptr %what, ptr %t)
  ret i32 %s
}

; Nonzero: queue allocations are zero-filled after all (hal.native.zero_transients): the
; differential fuzzing runs mutants that read transient bytes no dispatch wrote, which must
; then read the same under both backends.
@jv_hal_zero_transients = global i32 0

; hal.device.queue.alloca(device, affinity, wait, signal, pool, memory_types, usage, size, flags): a
; transient buffer, not zero-filled (unless @jv_hal_zero_transients says so). Its contents are
; undefined in IREE and the compiler writes every byte a later dispatch reads; IREE's local-task
; device does not clear them either, and a weight-dequantising model's 16 MB transient took
; 0.5 ms of serial memset per call, a quarter of its two-thread call (issue 22)    0rIrrIiiII_r
define i32 @jv_hal_device_queue_alloca(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %s0 = call i32 @queue_refs(ptr %args, ptr @s.hal_device_queue_alloca, ptr @s.hal_device_queue_alloca_wait_fence,
                             ptr @s.hal_device_queue_alloca_signal_fence, ptr %t)
  %bad0 = icmp ne i32 %s0, 0
  br i1 %bad0, label %fail, label %pool
pool:
  %p = call i64 @arg(ptr %args, i64 4)
  %pooled = icmp ne i64 %p, 0
  br i1 %pooled, label %bad_pool, label %wait
wait:
  %s1 = call i32 @queue_wait(ptr %args, ptr @s.queue_alloca, ptr %t)
  %bad1 = icmp ne i32 %s1, 0
  br i1 %bad1, label %fail, label %body
body:
  %d = call ptr @ref_arg(ptr %args, i64 0)
  %pa = getelementptr inbounds i8, ptr %d, i64 ${HalDevice.allocator}
  %a = load ptr, ptr %pa
  %mt = call i32 @arg32(ptr %args, i64 5)
  %usage = call i32 @arg32(ptr %args, i64 6)
  %size = call i64 @arg(ptr %args, i64 7)
  %zero_flag = load i32, ptr @jv_hal_zero_transients
  %zeroed = icmp ne i32 %zero_flag, 0
  %status = call i32 @jv_hal_allocate(ptr %a, i32 %mt, i32 %usage, i64 %size, i1 %zeroed, ptr %results, ptr %t)
  %s = call i32 @queue_finish(ptr %args, i32 %status, ptr %t)
  ret i32 %s
bad_pool:
  %sp = call i32 @trap(ptr %t, i32 ${S_UNIMPLEMENTED}, i32 ${K_POOLS_UNSUPPORTED}, i64 0, i64 0, i64 0, i64 0, ptr null)
  ret i32 %sp
fail:
  %sf = phi i32 [ %s0, %entry ], [ %s1, %wait ]
  ret i32 %sf
}

; hal.device.queue.dealloca(device, affinity, wait, signal, buffer, flags): heap buffers are
; freed with their last reference, so only the ordering is kept    0rIrrrI_v
define i32 @jv_hal_device_queue_dealloca(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %s0 = call i32 @queue_refs(ptr %args, ptr @s.hal_device_queue_dealloca, ptr @s.hal_device_queue_dealloca_wait_fence,
                             ptr @s.hal_device_queue_dealloca_signal_fence, ptr %t)
  %bad0 = icmp ne i32 %s0, 0
  br i1 %bad0, label %fail, label %buffer
buffer:
  %b = call ptr @ref_arg(ptr %args, i64 4)
  %ok_b = call i1 @is_a(ptr %b, i32 ${HAL_BUFFER})
  br i1 %ok_b, label %wait, label %bad_b
wait:
  %s1 = call i32 @queue_wait(ptr %args, ptr @s.queue_dealloca, ptr %t)
  %bad1 = icmp ne i32 %s1, 0
  br i1 %bad1, label %fail, label %body
body:
  %s = call i32 @queue_finish(ptr %args, i32 0, ptr %t)
  ret i32 %s
bad_b:
  %sb = call i32 @mismatch(ptr %t, ptr @s.hal_device_queue_dealloca_buffer, i32 ${HAL_BUFFER}, ptr %b)
  ret i32 %sb
fail:
  %sf = phi i32 [ %s0, %entry ], [ %s1, %wait ]
  ret i32 %sf
}

; hal.device.queue.fill(device, affinity, wait, signal, target, offset, length, pattern, pattern_length, flags)
;     0rIrrrIIIiI_v
define i32 @jv_hal_device_queue_fill(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %s0 = call i32 @queue_refs(ptr %args, ptr @s.hal_device_queue_fill, ptr @s.hal_device_queue_fill_wait_fence,
                             ptr @s.hal_device_queue_fill_signal_fence, ptr %t)
  %bad0 = icmp ne i32 %s0, 0
  br i1 %bad0, label %fail, label %target
target:
  %b = call ptr @ref_arg(ptr %args, i64 4)
  %ok_b = call i1 @is_a(ptr %b, i32 ${HAL_BUFFER})
  br i1 %ok_b, label %wait, label %bad_b
wait:
  %s1 = call i32 @queue_wait(ptr %args, ptr @s.queue_fill, ptr %t)
  %bad1 = icmp ne i32 %s1, 0
  br i1 %bad1, label %fail, label %body
body:
  %offset = call i64 @arg(ptr %args, i64 5)
  %length = call i64 @arg(ptr %args, i64 6)
  %pattern = call i64 @arg(ptr %args, i64 7)
  %width = call i32 @arg32(ptr %args, i64 8)
  %status = call i32 @jv_hal_buffer_fill(ptr %b, i64 %offset, i64 %length, i64 %pattern, i32 %width, ptr %t)
  %s = call i32 @queue_finish(ptr %args, i32 %status, ptr %t)
  ret i32 %s
bad_b:
  %sb = call i32 @mismatch(ptr %t, ptr @s.hal_device_queue_fill_target, i32 ${HAL_BUFFER}, ptr %b)
  ret i32 %sb
fail:
  %sf = phi i32 [ %s0, %entry ], [ %s1, %wait ]
  ret i32 %sf
}

; hal.device.queue.update(device, affinity, wait, signal, source, source_offset, target, target_offset, length,
; flags): bytes of a vm.buffer into a buffer    0rIrrrIrIII_v
define i32 @jv_hal_device_queue_update(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %s0 = call i32 @queue_refs(ptr %args, ptr @s.hal_device_queue_update, ptr @s.hal_device_queue_update_wait_fence,
                             ptr @s.hal_device_queue_update_signal_fence, ptr %t)
  %bad0 = icmp ne i32 %s0, 0
  br i1 %bad0, label %fail, label %source
source:
  %src = call ptr @ref_arg(ptr %args, i64 4)
  %ok_src = call i1 @is_a(ptr %src, i32 ${VM_BUFFER})
  br i1 %ok_src, label %range, label %bad_src
range:
  %start = call i64 @arg(ptr %args, i64 5)
  %n = call i64 @arg(ptr %args, i64 8)
  %pl = getelementptr inbounds i8, ptr %src, i64 ${Buffer.length}
  %len = load i64, ptr %pl
  %off_end = icmp ugt i64 %start, %len
  %room = sub i64 %len, %start
  %too_long = icmp ugt i64 %n, %room
  %outside = or i1 %off_end, %too_long
  br i1 %outside, label %bad_range, label %target
target:
  %b = call ptr @ref_arg(ptr %args, i64 6)
  %ok_b = call i1 @is_a(ptr %b, i32 ${HAL_BUFFER})
  br i1 %ok_b, label %wait, label %bad_b
wait:
  %s1 = call i32 @queue_wait(ptr %args, ptr @s.queue_update, ptr %t)
  %bad1 = icmp ne i32 %s1, 0
  br i1 %bad1, label %fail, label %body
body:
  %pd = getelementptr inbounds i8, ptr %src, i64 ${Buffer.data}
  %data = load ptr, ptr %pd
  %from = getelementptr i8, ptr %data, i64 %start
  %offset = call i64 @arg(ptr %args, i64 7)
  %status = call i32 @jv_hal_buffer_write(ptr %b, i64 %offset, ptr %from, i64 %n, ptr %t)
  %s = call i32 @queue_finish(ptr %args, i32 %status, ptr %t)
  ret i32 %s
bad_range:
  %sr = call i32 @trap(ptr %t, i32 ${S_OUT_OF_RANGE}, i32 ${K_UPDATE_SOURCE_RANGE}, i64 %start, i64 %n, i64 %len,
                       i64 0, ptr null)
  ret i32 %sr
bad_src:
  %ss = call i32 @mismatch(ptr %t, ptr @s.hal_device_queue_update_source, i32 ${VM_BUFFER}, ptr %src)
  ret i32 %ss
bad_b:
  %sb = call i32 @mismatch(ptr %t, ptr @s.hal_device_queue_update_target, i32 ${HAL_BUFFER}, ptr %b)
  ret i32 %sb
fail:
  %sf = phi i32 [ %s0, %entry ], [ %s1, %wait ]
  ret i32 %sf
}

; hal.device.queue.copy(device, affinity, wait, signal, source, source_offset, target, target_offset, length, flags)
;     0rIrrrIrIII_v
define i32 @jv_hal_device_queue_copy(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %s0 = call i32 @queue_refs(ptr %args, ptr @s.hal_device_queue_copy, ptr @s.hal_device_queue_copy_wait_fence,
                             ptr @s.hal_device_queue_copy_signal_fence, ptr %t)
  %bad0 = icmp ne i32 %s0, 0
  br i1 %bad0, label %fail, label %source
source:
  %src = call ptr @ref_arg(ptr %args, i64 4)
  %ok_src = call i1 @is_a(ptr %src, i32 ${HAL_BUFFER})
  br i1 %ok_src, label %target, label %bad_src
target:
  %dst = call ptr @ref_arg(ptr %args, i64 6)
  %ok_dst = call i1 @is_a(ptr %dst, i32 ${HAL_BUFFER})
  br i1 %ok_dst, label %wait, label %bad_dst
wait:
  %s1 = call i32 @queue_wait(ptr %args, ptr @s.queue_copy, ptr %t)
  %bad1 = icmp ne i32 %s1, 0
  br i1 %bad1, label %fail, label %body
body:
  %so = call i64 @arg(ptr %args, i64 5)
  %to = call i64 @arg(ptr %args, i64 7)
  %length = call i64 @arg(ptr %args, i64 8)
  %status = call i32 @jv_hal_buffer_copy(ptr %src, i64 %so, ptr %dst, i64 %to, i64 %length, ptr %t)
  %s = call i32 @queue_finish(ptr %args, i32 %status, ptr %t)
  ret i32 %s
bad_src:
  %ss = call i32 @mismatch(ptr %t, ptr @s.hal_device_queue_copy_source, i32 ${HAL_BUFFER}, ptr %src)
  ret i32 %ss
bad_dst:
  %sd = call i32 @mismatch(ptr %t, ptr @s.hal_device_queue_copy_target, i32 ${HAL_BUFFER}, ptr %dst)
  ret i32 %sd
fail:
  %sf = phi i32 [ %s0, %entry ], [ %s1, %wait ]
  ret i32 %sf
}

; hal.device.queue.barrier(device, affinity, wait, signal, flags)    0rIrrI_v
define i32 @jv_hal_device_queue_barrier(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %s0 = call i32 @queue_refs(ptr %args, ptr @s.hal_device_queue_barrier, ptr @s.hal_device_queue_barrier_wait_fence,
                             ptr @s.hal_device_queue_barrier_signal_fence, ptr %t)
  %bad0 = icmp ne i32 %s0, 0
  br i1 %bad0, label %fail, label %wait
wait:
  %s1 = call i32 @queue_wait(ptr %args, ptr @s.queue_barrier, ptr %t)
  %bad1 = icmp ne i32 %s1, 0
  br i1 %bad1, label %fail, label %body
body:
  %s = call i32 @queue_finish(ptr %args, i32 0, ptr %t)
  ret i32 %s
fail:
  %sf = phi i32 [ %s0, %entry ], [ %s1, %wait ]
  ret i32 %sf
}

; hal.device.queue.flush(device, affinity): everything already ran    0rI_v
define i32 @jv_hal_device_queue_flush(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %d = call ptr @ref_arg(ptr %args, i64 0)
  %ok = call i1 @is_a(ptr %d, i32 ${HAL_DEVICE})
  br i1 %ok, label %done, label %bad
done:
  ret i32 0
bad:
  %s = call i32 @mismatch(ptr %t, ptr @s.hal_device_queue_flush, i32 ${HAL_DEVICE}, ptr %d)
  ret i32 %s
}

; hal.device.queue.execute(device, affinity, wait, signal, command_buffer, flags)    0rIrrrI_v
define i32 @jv_hal_device_queue_execute(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %s0 = call i32 @queue_refs(ptr %args, ptr @s.hal_device_queue_execute, ptr @s.hal_device_queue_execute_wait_fence,
                             ptr @s.hal_device_queue_execute_signal_fence, ptr %t)
  %bad0 = icmp ne i32 %s0, 0
  br i1 %bad0, label %fail, label %command
command:
  %c = call ptr @ref_arg(ptr %args, i64 4)
  %ok_c = call i1 @is_a(ptr %c, i32 ${HAL_COMMAND_BUFFER})
  br i1 %ok_c, label %wait, label %bad_c
wait:
  %s1 = call i32 @queue_wait(ptr %args, ptr @s.queue_execute, ptr %t)
  %bad1 = icmp ne i32 %s1, 0
  br i1 %bad1, label %fail, label %body
body:
  %status = call i32 @jv_hal_execute(ptr %c, i64 0, ptr null, ptr %t)
  %s = call i32 @queue_finish(ptr %args, i32 %status, ptr %t)
  ret i32 %s
bad_c:
  %sc = call i32 @mismatch(ptr %t, ptr @s.hal_device_queue_execute_command_buffer, i32 ${HAL_COMMAND_BUFFER}, ptr %c)
  ret i32 %sc
fail:
  %sf = phi i32 [ %s0, %entry ], [ %s1, %wait ]
  ret i32 %sf
}

; hal.device.queue.execute.indirect(device, affinity, wait, signal, command_buffer, flags,
; bindings: (buffer, offset, length)...)    0rIrrrICrIID_v
define i32 @jv_hal_device_queue_execute_indirect(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %s0 = call i32 @queue_refs(ptr %args, ptr @s.hal_device_queue_execute_indirect,
                             ptr @s.hal_device_queue_execute_indirect_wait_fence,
                             ptr @s.hal_device_queue_execute_indirect_signal_fence, ptr %t)
  %bad0 = icmp ne i32 %s0, 0
  br i1 %bad0, label %fail, label %command
command:
  %c = call ptr @ref_arg(ptr %args, i64 4)
  %ok_c = call i1 @is_a(ptr %c, i32 ${HAL_COMMAND_BUFFER})
  br i1 %ok_c, label %bindings, label %bad_c
bindings:
  %count = call i64 @arg(ptr %args, i64 6)
  %table = getelementptr inbounds i64, ptr %args, i64 7
  %any = icmp ne i64 %count, 0
  br i1 %any, label %binding, label %wait
binding:
  %i = phi i64 [ 0, %bindings ], [ %i1, %binding_next ]
  %slot = mul i64 %i, 3
  %pb = getelementptr inbounds i64, ptr %table, i64 %slot
  %b = load ptr, ptr %pb
  %ok_b = call i1 @is_a_or_null(ptr %b, i32 ${HAL_BUFFER})
  br i1 %ok_b, label %binding_next, label %bad_b
binding_next:
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %count
  br i1 %more, label %binding, label %wait
wait:
  %s1 = call i32 @queue_wait(ptr %args, ptr @s.queue_execute, ptr %t)
  %bad1 = icmp ne i32 %s1, 0
  br i1 %bad1, label %fail, label %body
body:
  %status = call i32 @jv_hal_execute(ptr %c, i64 %count, ptr %table, ptr %t)
  %s = call i32 @queue_finish(ptr %args, i32 %status, ptr %t)
  ret i32 %s
bad_b:
  %sb = call i32 @mismatch_at(ptr %t, ptr @s.hal_device_queue_execute_indirect_binding, i32 ${HAL_BUFFER}, ptr %b,
                              i64 %i)
  ret i32 %sb
bad_c:
  %sc = call i32 @mismatch(ptr %t, ptr @s.hal_device_queue_execute_indirect_command_buffer,
                           i32 ${HAL_COMMAND_BUFFER}, ptr %c)
  ret i32 %sc
fail:
  %sf = phi i32 [ %s0, %entry ], [ %s1, %wait ]
  ret i32 %sf
}
