; hal.buffer.* and hal.buffer_view.* (hal module ABI version 7), with the import ABI
; (runtime.vm.abi): i32 fn(ctx, u64* args, u64* results, Trap*). Checks in IREE's order,
; failures as hal.trap_kinds.

; --- ranges and access ----------------------------------------------------------------------

; IREE's iree_hal_buffer_calculate_range for [%offset, %offset + %length) of a region of %max
; bytes (%length -1: the rest): the adjusted length in %out, or a trap of kind %kind (the
; offset is off the end) or %kind + 1 (the range leaves the region).
define internal i32 @calculate_range(i64 %max, i64 %offset, i64 %length, ptr %out, i32 %kind, ptr %t) {
entry:
  %off_end = icmp ugt i64 %offset, %max
  br i1 %off_end, label %bad_end, label %adjust
bad_end:
  %s1 = call i32 @trap(ptr %t, i32 ${S_OUT_OF_RANGE}, i32 %kind, i64 %offset, i64 %length, i64 %max, i64 0, ptr null)
  ret i32 %s1
adjust:
  %whole = icmp eq i64 %length, -1
  %rest = sub i64 %max, %offset
  %adjusted = select i1 %whole, i64 %rest, i64 %length
  %some = icmp ne i64 %adjusted, 0
  %last = sub i64 %adjusted, 1
  %past = icmp uge i64 %last, %rest
  %outside = and i1 %some, %past
  br i1 %outside, label %bad_range, label %ok
bad_range:
  %k1 = add i32 %kind, 1
  %s2 = call i32 @trap(ptr %t, i32 ${S_OUT_OF_RANGE}, i32 %k1, i64 %offset, i64 %adjusted, i64 %max, i64 0, ptr null)
  ret i32 %s2
ok:
  store i64 %adjusted, ptr %out
  ret i32 0
}

define internal i32 @check_access(ptr %b, i32 %required, ptr %t) {
entry:
  %pa = getelementptr inbounds i8, ptr %b, i64 ${HalBuffer.allowed_access}
  %allowed = load i32, ptr %pa
  %nallowed = xor i32 %allowed, -1
  %miss0 = and i32 %required, %nallowed
  %miss = and i32 %miss0, ${ACCESS_ALL}
  %bad = icmp ne i32 %miss, 0
  br i1 %bad, label %denied, label %ok
denied:
  %a = zext i32 %allowed to i64
  %r = zext i32 %required to i64
  %s = call i32 @trap(ptr %t, i32 ${S_PERMISSION_DENIED}, i32 ${K_ACCESS_DENIED}, i64 %a, i64 %r, i64 0, i64 0, ptr null)
  ret i32 %s
ok:
  ret i32 0
}

; A checked range of buffer %b (access, then bounds): its address in %addr_out, its adjusted
; length in %len_out.
define i32 @jv_hal_map_range(ptr %b, i64 %offset, i64 %length, i32 %access, ptr %addr_out, ptr %len_out, ptr %t) {
entry:
  %s1 = call i32 @check_access(ptr %b, i32 %access, ptr %t)
  %bad1 = icmp ne i32 %s1, 0
  br i1 %bad1, label %fail, label %range
range:
  %pl = getelementptr inbounds i8, ptr %b, i64 ${HalBuffer.byte_length}
  %len = load i64, ptr %pl
  %s2 = call i32 @calculate_range(i64 %len, i64 %offset, i64 %length, ptr %len_out, i32 ${K_RANGE_OFF_END}, ptr %t)
  %bad2 = icmp ne i32 %s2, 0
  br i1 %bad2, label %fail, label %ok
ok:
  %pd = getelementptr inbounds i8, ptr %b, i64 ${HalBuffer.data}
  %data = load ptr, ptr %pd
  %at = getelementptr i8, ptr %data, i64 %offset
  store ptr %at, ptr %addr_out
  ret i32 0
fail:
  %s = phi i32 [ %s1, %entry ], [ %s2, %range ]
  ret i32 %s
}

; The allocation a buffer belongs to: its parent, or itself.
define internal ptr @allocation_of(ptr %b) alwaysinline {
entry:
  %pp = getelementptr inbounds i8, ptr %b, i64 ${HalBuffer.parent}
  %parent = load ptr, ptr %pp
  %none = icmp eq ptr %parent, null
  %root = select i1 %none, ptr %b, ptr %parent
  ret ptr %root
}

; IREE's subspan of [%offset, %offset + %length) of %b: %b itself (retained) for its whole
; range, else a new buffer viewing the allocation; the range's failures have kind %kind.
define internal i32 @subspan(ptr %b, i64 %offset, i64 %length, i32 %kind, ptr %out, ptr %t) {
entry:
  %adjusted = alloca i64
${fields HalBuffer %b b}
  %len = load i64, ptr %b.byte_length
  %s = call i32 @calculate_range(i64 %len, i64 %offset, i64 %length, ptr %adjusted, i32 %kind, ptr %t)
  %bad = icmp ne i32 %s, 0
  br i1 %bad, label %fail, label %which
which:
  %n = load i64, ptr %adjusted
  %at_start = icmp eq i64 %offset, 0
  %all = icmp eq i64 %n, %len
  %same = and i1 %at_start, %all
  br i1 %same, label %itself, label %view
itself:
  call void @jv_retain(ptr %b)
  store ptr %b, ptr %out
  ret i32 0
view:
  %root = call ptr @allocation_of(ptr %b)
  %pm = getelementptr inbounds i8, ptr %root, i64 ${HalBuffer.memory}
  %memory = load ptr, ptr %pm
  %base = load i64, ptr %b.byte_offset
  %absolute = add i64 %base, %offset
  %mt = load i32, ptr %b.memory_type
  %access = load i32, ptr %b.allowed_access
  %usage = load i32, ptr %b.allowed_usage
  %sub = call ptr @jv_hal_buffer_new(ptr %memory, i64 %absolute, i64 %n, i32 %mt, i32 %access, i32 %usage,
                                     ptr %root)
  %nomem = icmp eq ptr %sub, null
  br i1 %nomem, label %oom, label %made
made:
  store ptr %sub, ptr %out
  ret i32 0
oom:
  %so = call i32 @out_of_memory(ptr %t)
  ret i32 %so
fail:
  ret i32 %s
}

; --- hal.buffer -----------------------------------------------------------------------------

; hal.buffer.assert(buffer, message, allocator, minimum_length, memory_types, usage)    0rrrIii_v
define i32 @jv_hal_buffer_assert(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %b = call ptr @ref_arg(ptr %args, i64 0)
  %m = call ptr @ref_arg(ptr %args, i64 1)
  %a = call ptr @ref_arg(ptr %args, i64 2)
  %ok_b = call i1 @is_a(ptr %b, i32 ${HAL_BUFFER})
  br i1 %ok_b, label %message, label %bad_b
message:
  %ok_m = call i1 @is_a(ptr %m, i32 ${VM_BUFFER})
  br i1 %ok_m, label %allocator, label %bad_m
allocator:
  %ok_a = call i1 @is_a(ptr %a, i32 ${HAL_ALLOCATOR})
  br i1 %ok_a, label %length, label %bad_a
length:
${fields HalBuffer %b b}
  %min = call i64 @arg(ptr %args, i64 3)
  %len = load i64, ptr %b.byte_length
  %short = icmp ult i64 %len, %min
  br i1 %short, label %too_short, label %types
types:
  %want_types = call i32 @arg32(ptr %args, i64 4)
  %mem = load i32, ptr %b.memory_type
  %nmem = xor i32 %mem, -1
  %miss_t = and i32 %want_types, %nmem
  %bad_t = icmp ne i32 %miss_t, 0
  br i1 %bad_t, label %wrong_type, label %usage
usage:
  %want_usage = call i32 @arg32(ptr %args, i64 5)
  %allowed = load i32, ptr %b.allowed_usage
  %nallowed = xor i32 %allowed, -1
  %miss_u = and i32 %want_usage, %nallowed
  %bad_u = icmp ne i32 %miss_u, 0
  br i1 %bad_u, label %wrong_usage, label %ok
ok:
  ret i32 0
too_short:
  %t1 = call ptr @vm_text(ptr %m)
  %s1 = call i32 @trap_owned(ptr %t, i32 ${S_INVALID_ARGUMENT}, i32 ${K_BUFFER_TOO_SHORT}, i64 %len, i64 %min,
                             i64 0, i64 0, ptr %t1)
  ret i32 %s1
wrong_type:
  %t2 = call ptr @vm_text(ptr %m)
  %have_t = zext i32 %mem to i64
  %need_t = zext i32 %want_types to i64
  %s2 = call i32 @trap_owned(ptr %t, i32 ${S_PERMISSION_DENIED}, i32 ${K_MEMORY_TYPE_MISMATCH}, i64 %have_t,
                             i64 %need_t, i64 0, i64 0, ptr %t2)
  ret i32 %s2
wrong_usage:
  %t3 = call ptr @vm_text(ptr %m)
  %have_u = zext i32 %allowed to i64
  %need_u = zext i32 %want_usage to i64
  %s3 = call i32 @trap_owned(ptr %t, i32 ${S_PERMISSION_DENIED}, i32 ${K_USAGE_MISMATCH}, i64 %have_u,
                             i64 %need_u, i64 0, i64 0, ptr %t3)
  ret i32 %s3
bad_b:
  %sb = call i32 @mismatch(ptr %t, ptr @s.hal_buffer_assert, i32 ${HAL_BUFFER}, ptr %b)
  ret i32 %sb
bad_m:
  %sm = call i32 @mismatch(ptr %t, ptr @s.hal_buffer_assert_message, i32 ${VM_BUFFER}, ptr %m)
  ret i32 %sm
bad_a:
  %sa = call i32 @mismatch(ptr %t, ptr @s.hal_buffer_assert_allocator, i32 ${HAL_ALLOCATOR}, ptr %a)
  ret i32 %sa
}

; hal.buffer.allocation.preserve(buffer)    0r_v
define i32 @jv_hal_buffer_allocation_preserve(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %b = call ptr @ref_arg(ptr %args, i64 0)
  %ok = call i1 @is_a(ptr %b, i32 ${HAL_BUFFER})
  br i1 %ok, label %count, label %bad
count:
  %root = call ptr @allocation_of(ptr %b)
  %pc = getelementptr inbounds i8, ptr %root, i64 ${HalBuffer.preserve_count}
  %old = atomicrmw add ptr %pc, i32 1 monotonic
  ret i32 0
bad:
  %s = call i32 @mismatch(ptr %t, ptr @s.hal_buffer_allocation_preserve, i32 ${HAL_BUFFER}, ptr %b)
  ret i32 %s
}

; hal.buffer.allocation.discard(buffer) -> whether no preserve is left    0r_i
define i32 @jv_hal_buffer_allocation_discard(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %b = call ptr @ref_arg(ptr %args, i64 0)
  %ok = call i1 @is_a(ptr %b, i32 ${HAL_BUFFER})
  br i1 %ok, label %count, label %bad
count:
  %root = call ptr @allocation_of(ptr %b)
  %pc = getelementptr inbounds i8, ptr %root, i64 ${HalBuffer.preserve_count}
  %n = load i32, ptr %pc
  %some = icmp ugt i32 %n, 0
  %less = sub i32 %n, 1
  %left = select i1 %some, i32 %less, i32 0
  store i32 %left, ptr %pc
  %none = icmp eq i32 %left, 0
  %r = zext i1 %none to i64
  call void @give(ptr %results, i64 0, i64 %r)
  ret i32 0
bad:
  %s = call i32 @mismatch(ptr %t, ptr @s.hal_buffer_allocation_discard, i32 ${HAL_BUFFER}, ptr %b)
  ret i32 %s
}

; hal.buffer.allocation.is_terminal(buffer)    0r_i
define i32 @jv_hal_buffer_allocation_is_terminal(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %b = call ptr @ref_arg(ptr %args, i64 0)
  %ok = call i1 @is_a(ptr %b, i32 ${HAL_BUFFER})
  br i1 %ok, label %count, label %bad
count:
  %root = call ptr @allocation_of(ptr %b)
  %pc = getelementptr inbounds i8, ptr %root, i64 ${HalBuffer.preserve_count}
  %n = load i32, ptr %pc
  %last = icmp ule i32 %n, 1
  %r = zext i1 %last to i64
  call void @give(ptr %results, i64 0, i64 %r)
  ret i32 0
bad:
  %s = call i32 @mismatch(ptr %t, ptr @s.hal_buffer_allocation_is_terminal, i32 ${HAL_BUFFER}, ptr %b)
  ret i32 %s
}

; hal.buffer.subspan(buffer, offset, length)    0rII_r
define i32 @jv_hal_buffer_subspan(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %b = call ptr @ref_arg(ptr %args, i64 0)
  %ok = call i1 @is_a(ptr %b, i32 ${HAL_BUFFER})
  br i1 %ok, label %span, label %bad
span:
  %offset = call i64 @arg(ptr %args, i64 1)
  %length = call i64 @arg(ptr %args, i64 2)
  %s = call i32 @subspan(ptr %b, i64 %offset, i64 %length, i32 ${K_SUBSPAN_OFF_END}, ptr %results, ptr %t)
  ret i32 %s
bad:
  %sb = call i32 @mismatch(ptr %t, ptr @s.hal_buffer_subspan, i32 ${HAL_BUFFER}, ptr %b)
  ret i32 %sb
}

; hal.buffer.length(buffer)    0r_I
define i32 @jv_hal_buffer_length(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %b = call ptr @ref_arg(ptr %args, i64 0)
  %ok = call i1 @is_a(ptr %b, i32 ${HAL_BUFFER})
  br i1 %ok, label %length, label %bad
length:
  %pl = getelementptr inbounds i8, ptr %b, i64 ${HalBuffer.byte_length}
  %len = load i64, ptr %pl
  call void @give(ptr %results, i64 0, i64 %len)
  ret i32 0
bad:
  %s = call i32 @mismatch(ptr %t, ptr @s.hal_buffer_length, i32 ${HAL_BUFFER}, ptr %b)
  ret i32 %s
}

; hal.buffer.load(buffer, offset, length) -> up to 4 little-endian bytes, zero-extended    0rIi_i
define i32 @jv_hal_buffer_load(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %addr = alloca ptr
  %n = alloca i64
  %value = alloca i32
  %b = call ptr @ref_arg(ptr %args, i64 0)
  %ok = call i1 @is_a(ptr %b, i32 ${HAL_BUFFER})
  br i1 %ok, label %length, label %bad
length:
  %offset = call i64 @arg(ptr %args, i64 1)
  %len = call i32 @arg32(ptr %args, i64 2)
  %too_long = icmp ugt i32 %len, 4
  br i1 %too_long, label %bad_length, label %map
map:
  %len64 = zext i32 %len to i64
  %s = call i32 @jv_hal_map_range(ptr %b, i64 %offset, i64 %len64, i32 ${ACCESS_READ}, ptr %addr, ptr %n, ptr %t)
  %failed = icmp ne i32 %s, 0
  br i1 %failed, label %fail, label %read
read:
  store i32 0, ptr %value
  %from = load ptr, ptr %addr
  %count = load i64, ptr %n
  call void @llvm.memcpy.p0.p0.i64(ptr %value, ptr %from, i64 %count, i1 false)
  %v = load i32, ptr %value
  %v64 = zext i32 %v to i64
  call void @give(ptr %results, i64 0, i64 %v64)
  ret i32 0
fail:
  ret i32 %s
bad_length:
  %l = sext i32 %len to i64
  %sl = call i32 @trap(ptr %t, i32 ${S_INVALID_ARGUMENT}, i32 ${K_LOAD_LENGTH}, i64 %l, i64 0, i64 0, i64 0, ptr null)
  ret i32 %sl
bad:
  %sb = call i32 @mismatch(ptr %t, ptr @s.hal_buffer_load, i32 ${HAL_BUFFER}, ptr %b)
  ret i32 %sb
}

; hal.buffer.store(value, buffer, offset, length): the low `length` bytes, little-endian    0irIi_v
define i32 @jv_hal_buffer_store(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %addr = alloca ptr
  %n = alloca i64
  %value = alloca i32
  %b = call ptr @ref_arg(ptr %args, i64 1)
  %ok = call i1 @is_a(ptr %b, i32 ${HAL_BUFFER})
  br i1 %ok, label %length, label %bad
length:
  %offset = call i64 @arg(ptr %args, i64 2)
  %len = call i32 @arg32(ptr %args, i64 3)
  %too_long = icmp ugt i32 %len, 4
  br i1 %too_long, label %bad_length, label %bounds
bounds:
  %len64 = zext i32 %len to i64
  %pl = getelementptr inbounds i8, ptr %b, i64 ${HalBuffer.byte_length}
  %max = load i64, ptr %pl
  %bigger = icmp ugt i64 %len64, %max
  %room = sub i64 %max, %len64
  %past = icmp ugt i64 %offset, %room
  %outside = or i1 %bigger, %past
  br i1 %outside, label %bad_bounds, label %empty_check
empty_check:
  %empty = icmp eq i32 %len, 0
  br i1 %empty, label %done, label %map
map:
  %s = call i32 @jv_hal_map_range(ptr %b, i64 %offset, i64 %len64, i32 ${ACCESS_WRITE}, ptr %addr, ptr %n, ptr %t)
  %failed = icmp ne i32 %s, 0
  br i1 %failed, label %fail, label %write
write:
  %v = call i32 @arg32(ptr %args, i64 0)
  store i32 %v, ptr %value
  %to = load ptr, ptr %addr
  call void @llvm.memcpy.p0.p0.i64(ptr %to, ptr %value, i64 %len64, i1 false)
  br label %done
done:
  ret i32 0
fail:
  ret i32 %s
bad_bounds:
  %so = call i32 @trap(ptr %t, i32 ${S_OUT_OF_RANGE}, i32 ${K_STORE_OUT_OF_BOUNDS}, i64 %offset, i64 %len64, i64 %max,
                       i64 0, ptr null)
  ret i32 %so
bad_length:
  %l = sext i32 %len to i64
  %sl = call i32 @trap(ptr %t, i32 ${S_INVALID_ARGUMENT}, i32 ${K_STORE_LENGTH}, i64 %l, i64 0, i64 0, i64 0, ptr null)
  ret i32 %sl
bad:
  %sb = call i32 @mismatch(ptr %t, ptr @s.hal_buffer_store, i32 ${HAL_BUFFER}, ptr %b)
  ret i32 %sb
}

; --- hal.buffer_view ------------------------------------------------------------------------

; hal.buffer_view.create(buffer, offset, length, element_type, encoding_type, dims...)    0rIIiiCID_r
define i32 @jv_hal_buffer_view_create(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %adjusted = alloca i64
  %target = alloca ptr
  %b = call ptr @ref_arg(ptr %args, i64 0)
  %ok = call i1 @is_a(ptr %b, i32 ${HAL_BUFFER})
  br i1 %ok, label %range, label %bad
range:
  %offset = call i64 @arg(ptr %args, i64 1)
  %length = call i64 @arg(ptr %args, i64 2)
  %pl = getelementptr inbounds i8, ptr %b, i64 ${HalBuffer.byte_length}
  %len = load i64, ptr %pl
  %at_start = icmp eq i64 %offset, 0
  %all = icmp eq i64 %length, %len
  %whole = and i1 %at_start, %all
  br i1 %whole, label %itself, label %check
itself:
  call void @jv_retain(ptr %b)
  store ptr %b, ptr %target
  br label %dims
check:
  %s1 = call i32 @calculate_range(i64 %len, i64 %offset, i64 %length, ptr %adjusted, i32 ${K_RANGE_OFF_END}, ptr %t)
  %bad1 = icmp ne i32 %s1, 0
  br i1 %bad1, label %fail, label %span
span:
  %s2 = call i32 @subspan(ptr %b, i64 %offset, i64 %length, i32 ${K_RANGE_OFF_END}, ptr %target, ptr %t)
  %bad2 = icmp ne i32 %s2, 0
  br i1 %bad2, label %fail, label %dims
dims:
  %count = call i64 @arg(ptr %args, i64 5)
  %dims_at = getelementptr inbounds i64, ptr %args, i64 6
  %any = icmp ne i64 %count, 0
  br i1 %any, label %dim, label %make
dim:
  %k = phi i64 [ 0, %dims ], [ %k1, %dim_next ]
  %pk = getelementptr inbounds i64, ptr %dims_at, i64 %k
  %d = load i64, ptr %pk
  %negative = icmp slt i64 %d, 0
  br i1 %negative, label %bad_dim, label %dim_next
dim_next:
  %k1 = add i64 %k, 1
  %more = icmp ult i64 %k1, %count
  br i1 %more, label %dim, label %make
make:
  %buffer = load ptr, ptr %target
  %et = call i32 @arg32(ptr %args, i64 3)
  %enc = call i32 @arg32(ptr %args, i64 4)
  %v = call ptr @jv_hal_buffer_view_new(ptr %buffer, i64 %count, ptr %dims_at, i32 %et, i32 %enc)
  call void @jv_release(ptr %buffer)
  %nomem = icmp eq ptr %v, null
  br i1 %nomem, label %oom, label %made
made:
  store ptr %v, ptr %results
  ret i32 0
oom:
  %so = call i32 @out_of_memory(ptr %t)
  ret i32 %so
bad_dim:
  %held = load ptr, ptr %target
  call void @jv_release(ptr %held)
  %shape = call ptr @dims_text(ptr %dims_at, i64 %count, i1 true)
  %sd = call i32 @trap_owned(ptr %t, i32 ${S_INVALID_ARGUMENT}, i32 ${K_NEGATIVE_DIM}, i64 0, i64 0, i64 0, i64 0,
                             ptr %shape)
  ret i32 %sd
fail:
  %s = phi i32 [ %s1, %check ], [ %s2, %span ]
  ret i32 %s
bad:
  %sb = call i32 @mismatch(ptr %t, ptr @s.hal_buffer_view_create, i32 ${HAL_BUFFER}, ptr %b)
  ret i32 %sb
}

; IREE's element type compatibility: opaque matches anything, integers of one width match.
define internal i1 @element_types_compatible(i32 %have, i32 %want) {
entry:
  %num = lshr i32 %have, 24
  %opaque = icmp eq i32 %num, 0
  %same = icmp eq i32 %have, %want
  %want_num = lshr i32 %want, 24
  %class_have = and i32 %num, 240
  %class_want = and i32 %want_num, 240
  %int_have = icmp eq i32 %class_have, ${NUMERICAL_INTEGER}
  %int_want = icmp eq i32 %class_want, ${NUMERICAL_INTEGER}
  %bits_have = and i32 %have, 255
  %bits_want = and i32 %want, 255
  %same_bits = icmp eq i32 %bits_have, %bits_want
  %ints0 = and i1 %int_have, %int_want
  %ints = and i1 %ints0, %same_bits
  %ok0 = or i1 %opaque, %same
  %ok = or i1 %ok0, %ints
  ret i1 %ok
}

; hal.buffer_view.assert(view, message, element_type, encoding_type, dims...)    0rriiCID_v
define i32 @jv_hal_buffer_view_assert(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %v = call ptr @ref_arg(ptr %args, i64 0)
  %m = call ptr @ref_arg(ptr %args, i64 1)
  %ok_v = call i1 @is_a(ptr %v, i32 ${HAL_BUFFER_VIEW})
  br i1 %ok_v, label %message, label %bad_v
message:
  %ok_m = call i1 @is_a(ptr %m, i32 ${VM_BUFFER})
  br i1 %ok_m, label %encoding, label %bad_m
encoding:
${fields HalBufferView %v v}
  %enc = call i32 @arg32(ptr %args, i64 3)
  %have_enc = load i32, ptr %v.encoding_type
  %opaque = icmp eq i32 %have_enc, ${ENCODING_OPAQUE}
  %same_enc = icmp eq i32 %have_enc, %enc
  %enc_ok = or i1 %opaque, %same_enc
  br i1 %enc_ok, label %element, label %bad_enc
element:
  %et = call i32 @arg32(ptr %args, i64 2)
  %have_et = load i32, ptr %v.element_type
  %et_ok = call i1 @element_types_compatible(i32 %have_et, i32 %et)
  br i1 %et_ok, label %rank, label %bad_et
rank:
  %count = call i64 @arg(ptr %args, i64 4)
  %dims_at = getelementptr inbounds i64, ptr %args, i64 5
  %have_rank = load i64, ptr %v.rank
  %rank_ok = icmp eq i64 %have_rank, %count
  br i1 %rank_ok, label %dims, label %bad_rank
dims:
  %any = icmp ne i64 %count, 0
  br i1 %any, label %dim, label %ok
dim:
  %k = phi i64 [ 0, %dims ], [ %k1, %dim_next ]
  %pw = getelementptr inbounds i64, ptr %dims_at, i64 %k
  %want = load i64, ptr %pw
  %ph = getelementptr inbounds i64, ptr %v.dims, i64 %k
  %have = load i64, ptr %ph
  %same = icmp eq i64 %have, %want
  br i1 %same, label %dim_next, label %bad_dim
dim_next:
  %k1 = add i64 %k, 1
  %more = icmp ult i64 %k1, %count
  br i1 %more, label %dim, label %ok
ok:
  ret i32 0
bad_enc:
  %t1 = call ptr @vm_text(ptr %m)
  %want_enc = zext i32 %enc to i64
  %got_enc = zext i32 %have_enc to i64
  %s1 = call i32 @trap_owned(ptr %t, i32 ${S_INVALID_ARGUMENT}, i32 ${K_ENCODING_MISMATCH}, i64 %want_enc,
                             i64 %got_enc, i64 0, i64 0, ptr %t1)
  ret i32 %s1
bad_et:
  %t2 = call ptr @vm_text(ptr %m)
  %want_et = zext i32 %et to i64
  %got_et = zext i32 %have_et to i64
  %s2 = call i32 @trap_owned(ptr %t, i32 ${S_INVALID_ARGUMENT}, i32 ${K_ELEMENT_TYPE_MISMATCH}, i64 %want_et,
                             i64 %got_et, i64 0, i64 0, ptr %t2)
  ret i32 %s2
bad_rank:
  %t3 = call ptr @vm_text(ptr %m)
  %s3 = call i32 @trap_owned(ptr %t, i32 ${S_INVALID_ARGUMENT}, i32 ${K_RANK_MISMATCH}, i64 %count, i64 %have_rank,
                             i64 0, i64 0, ptr %t3)
  %shapes3 = call ptr @shapes_text(ptr %dims_at, i64 %count, ptr %v.dims, i64 %have_rank)
  %inner3 = call ptr @detail(ptr %shapes3)
  call void @set_inner(ptr %t, ptr %inner3)
  ret i32 %s3
bad_dim:
  %t4 = call ptr @vm_text(ptr %m)
  %s4 = call i32 @trap_owned(ptr %t, i32 ${S_INVALID_ARGUMENT}, i32 ${K_DIM_MISMATCH}, i64 %k, i64 %want, i64 %have,
                             i64 0, ptr %t4)
  %shapes4 = call ptr @shapes_text(ptr %dims_at, i64 %count, ptr %v.dims, i64 %count)
  %inner4 = call ptr @detail(ptr %shapes4)
  call void @set_inner(ptr %t, ptr %inner4)
  ret i32 %s4
bad_v:
  %sv = call i32 @mismatch(ptr %t, ptr @s.hal_buffer_view_assert, i32 ${HAL_BUFFER_VIEW}, ptr %v)
  ret i32 %sv
bad_m:
  %sm = call i32 @mismatch(ptr %t, ptr @s.hal_buffer_view_assert_message, i32 ${VM_BUFFER}, ptr %m)
  ret i32 %sm
}

; hal.buffer_view.buffer(view)    0r_r
define i32 @jv_hal_buffer_view_buffer(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %v = call ptr @ref_arg(ptr %args, i64 0)
  %ok = call i1 @is_a(ptr %v, i32 ${HAL_BUFFER_VIEW})
  br i1 %ok, label %give, label %bad
give:
  %pb = getelementptr inbounds i8, ptr %v, i64 ${HalBufferView.buffer}
  %b = load ptr, ptr %pb
  call void @give_ref(ptr %results, i64 0, ptr %b)
  ret i32 0
bad:
  %s = call i32 @mismatch(ptr %t, ptr @s.hal_buffer_view_buffer, i32 ${HAL_BUFFER_VIEW}, ptr %v)
  ret i32 %s
}

${view_queries}

; hal.buffer_view.dim(view, index)    0ri_I
define i32 @jv_hal_buffer_view_dim(ptr %ctx, ptr %args, ptr %results, ptr %t) {
entry:
  %v = call ptr @ref_arg(ptr %args, i64 0)
  %ok = call i1 @is_a(ptr %v, i32 ${HAL_BUFFER_VIEW})
  br i1 %ok, label %index, label %bad
index:
${fields HalBufferView %v v}
  %i32 = call i32 @arg32(ptr %args, i64 1)
  %i = sext i32 %i32 to i64
  %rank = load i64, ptr %v.rank
  %inside = icmp ult i64 %i, %rank
  br i1 %inside, label %give, label %outside
give:
  %pd = getelementptr inbounds i64, ptr %v.dims, i64 %i
  %d = load i64, ptr %pd
  call void @give(ptr %results, i64 0, i64 %d)
  ret i32 0
outside:
  %so = call i32 @trap(ptr %t, i32 ${S_OUT_OF_RANGE}, i32 ${K_DIM_OUT_OF_RANGE}, i64 %i, i64 %rank, i64 0, i64 0,
                       ptr null)
  ret i32 %so
bad:
  %s = call i32 @mismatch(ptr %t, ptr @s.hal_buffer_view_dim, i32 ${HAL_BUFFER_VIEW}, ptr %v)
  ret i32 %s
}
