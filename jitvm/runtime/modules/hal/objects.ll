; The HAL's objects (runtime.modules.hal.native): allocators, buffers, buffer views,
; semaphores and fences, made and destroyed here; Python's classes are views of them.
; (Declarations: common.ll.)

; --- allocators -----------------------------------------------------------------------------

define void @jv_hal_allocator_destroy(ptr %a) {
entry:
  call void @free(ptr %a)
  ret void
}

define ptr @jv_hal_allocator_new() {
entry:
  %a = call ptr @malloc(i64 ${sizeof HalAllocator})
  %null = icmp eq ptr %a, null
  br i1 %null, label %fail, label %init
init:
  call void @jv_object_init(ptr %a, i32 ${HAL_ALLOCATOR}, ptr @jv_hal_allocator_destroy)
${fields HalAllocator %a a}
  store i64 0, ptr %a.bytes_allocated
  ret ptr %a
fail:
  ret ptr null
}

; --- buffers --------------------------------------------------------------------------------

define void @jv_hal_buffer_destroy(ptr %b) {
entry:
${fields HalBuffer %b b}
  %memory = load ptr, ptr %b.memory
  call void @jv_release(ptr %memory)
  %parent = load ptr, ptr %b.parent
  call void @jv_release(ptr %parent)
  call void @free(ptr %b)
  ret void
}

; A buffer of %length bytes at %offset of vm.buffer %memory (retained), a subspan of
; allocation %parent (retained; null: the buffer is an allocation); null without memory.
define ptr @jv_hal_buffer_new(ptr %memory, i64 %offset, i64 %length, i32 %memory_type, i32 %access, i32 %usage,
                              ptr %parent) {
entry:
  %b = call ptr @malloc(i64 ${sizeof HalBuffer})
  %null = icmp eq ptr %b, null
  br i1 %null, label %fail, label %init
init:
  call void @jv_object_init(ptr %b, i32 ${HAL_BUFFER}, ptr @jv_hal_buffer_destroy)
${fields HalBuffer %b b}
  call void @jv_retain(ptr %memory)
  call void @jv_retain(ptr %parent)
  store ptr %memory, ptr %b.memory
  %pd = getelementptr inbounds i8, ptr %memory, i64 ${Buffer.data}
  %base = load ptr, ptr %pd
  %data = getelementptr i8, ptr %base, i64 %offset
  store ptr %data, ptr %b.data
  store i64 %offset, ptr %b.byte_offset
  store i64 %length, ptr %b.byte_length
  store i32 %memory_type, ptr %b.memory_type
  store i32 %access, ptr %b.allowed_access
  store i32 %usage, ptr %b.allowed_usage
  store i32 0, ptr %b.preserve_count
  store ptr %parent, ptr %b.parent
  ret ptr %b
fail:
  ret ptr null
}

; A new allocation of %length bytes (ALLOCATION_ALIGNMENT-aligned host memory), zeroed
; unless %zeroed is 0 (its creator overwrites all of it at once); null without memory.
define ptr @jv_hal_buffer_allocate(i64 %length, i32 %memory_type, i32 %usage, i32 %access, i32 %zeroed) {
entry:
  %zero = icmp ne i32 %zeroed, 0
  br i1 %zero, label %zeroed_memory, label %raw_memory
zeroed_memory:
  %mz = call ptr @jv_buffer_alloc(i64 %length, i64 ${ALLOCATION_ALIGNMENT}, i32 ${HOST_MEMORY})
  br label %got
raw_memory:
  %mr = call ptr @jv_buffer_alloc_uninitialized(i64 %length, i64 ${ALLOCATION_ALIGNMENT}, i32 ${HOST_MEMORY})
  br label %got
got:
  %memory = phi ptr [ %mz, %zeroed_memory ], [ %mr, %raw_memory ]
  %nomem = icmp eq ptr %memory, null
  br i1 %nomem, label %fail, label %wrap
wrap:
  %b = call ptr @jv_hal_buffer_new(ptr %memory, i64 0, i64 %length, i32 %memory_type, i32 %access, i32 %usage,
                                   ptr null)
  call void @jv_release(ptr %memory)  ; the buffer holds its own reference (or the memory goes)
  ret ptr %b
fail:
  ret ptr null
}

; --- buffer views ---------------------------------------------------------------------------

define void @jv_hal_buffer_view_destroy(ptr %v) {
entry:
${fields HalBufferView %v v}
  %buffer = load ptr, ptr %v.buffer
  call void @jv_release(ptr %buffer)
  call void @free(ptr %v)
  ret void
}

; A view of %buffer (retained) with %rank dims read from %dims (i64 each).
define ptr @jv_hal_buffer_view_new(ptr %buffer, i64 %rank, ptr %dims, i32 %element_type, i32 %encoding_type) {
entry:
  %dim_bytes = shl i64 %rank, 3
  %size = add i64 %dim_bytes, ${sizeof HalBufferView}
  %v = call ptr @malloc(i64 %size)
  %null = icmp eq ptr %v, null
  br i1 %null, label %fail, label %init
init:
  call void @jv_object_init(ptr %v, i32 ${HAL_BUFFER_VIEW}, ptr @jv_hal_buffer_view_destroy)
${fields HalBufferView %v v}
  call void @jv_retain(ptr %buffer)
  store ptr %buffer, ptr %v.buffer
  store i32 %element_type, ptr %v.element_type
  store i32 %encoding_type, ptr %v.encoding_type
  store i64 %rank, ptr %v.rank
  call void @llvm.memcpy.p0.p0.i64(ptr %v.dims, ptr %dims, i64 %dim_bytes, i1 false)
  ret ptr %v
fail:
  ret ptr null
}

; --- semaphores and fences ------------------------------------------------------------------

define void @jv_hal_semaphore_destroy(ptr %s) {
entry:
${fields HalSemaphore %s s}
  call void @jv_failure_clear(ptr %s.failure)
  call void @free(ptr %s)
  ret void
}

define ptr @jv_hal_semaphore_new(i64 %value) {
entry:
  %s = call ptr @malloc(i64 ${sizeof HalSemaphore})
  %null = icmp eq ptr %s, null
  br i1 %null, label %fail, label %init
init:
  call void @llvm.memset.p0.i64(ptr %s, i8 0, i64 ${sizeof HalSemaphore}, i1 false)
  call void @jv_object_init(ptr %s, i32 ${HAL_SEMAPHORE}, ptr @jv_hal_semaphore_destroy)
${fields HalSemaphore %s s}
  store i64 %value, ptr %s.value
  ret ptr %s
fail:
  ret ptr null
}

define void @jv_hal_fence_destroy(ptr %f) {
entry:
${fields HalFence %f f}
  %count = load i64, ptr %f.count
  %none = icmp eq i64 %count, 0
  br i1 %none, label %done, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %off = mul i64 %i, ${sizeof Timepoint}
  %tp = getelementptr inbounds i8, ptr %f.timepoints, i64 %off
  %sem = load ptr, ptr %tp
  call void @jv_release(ptr %sem)
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %count
  br i1 %more, label %loop, label %done
done:
  call void @free(ptr %f)
  ret void
}

; A fence of the %count timepoints at %points (Timepoint structs), semaphores retained; a
; semaphore met twice keeps the later value (IREE's iree_hal_fence_insert).
define ptr @jv_hal_fence_new(i64 %count, ptr %points) {
entry:
  %bytes = mul i64 %count, ${sizeof Timepoint}
  %size = add i64 %bytes, ${sizeof HalFence}
  %f = call ptr @malloc(i64 %size)
  %null = icmp eq ptr %f, null
  br i1 %null, label %fail, label %init
init:
  call void @jv_object_init(ptr %f, i32 ${HAL_FENCE}, ptr @jv_hal_fence_destroy)
${fields HalFence %f f}
  %empty = icmp eq i64 %count, 0
  br i1 %empty, label %done, label %point
point:
  %i = phi i64 [ 0, %init ], [ %i1, %next ]
  %n = phi i64 [ 0, %init ], [ %n1, %next ]
  %ioff = mul i64 %i, ${sizeof Timepoint}
  %src = getelementptr inbounds i8, ptr %points, i64 %ioff
  %sem = load ptr, ptr %src
  %pv = getelementptr inbounds i8, ptr %src, i64 ${Timepoint.value}
  %value = load i64, ptr %pv
  %have_any = icmp ne i64 %n, 0
  br i1 %have_any, label %search, label %append
search:
  %j = phi i64 [ 0, %point ], [ %j1, %search_next ]
  %joff = mul i64 %j, ${sizeof Timepoint}
  %tp = getelementptr inbounds i8, ptr %f.timepoints, i64 %joff
  %held = load ptr, ptr %tp
  %same = icmp eq ptr %held, %sem
  br i1 %same, label %merge, label %search_next
search_next:
  %j1 = add i64 %j, 1
  %searching = icmp ult i64 %j1, %n
  br i1 %searching, label %search, label %append
merge:
  %ptv = getelementptr inbounds i8, ptr %tp, i64 ${Timepoint.value}
  %old = load i64, ptr %ptv
  %later = icmp ugt i64 %value, %old
  %kept = select i1 %later, i64 %value, i64 %old
  store i64 %kept, ptr %ptv
  br label %next
append:
  %noff = mul i64 %n, ${sizeof Timepoint}
  %dst = getelementptr inbounds i8, ptr %f.timepoints, i64 %noff
  call void @jv_retain(ptr %sem)
  store ptr %sem, ptr %dst
  %pdv = getelementptr inbounds i8, ptr %dst, i64 ${Timepoint.value}
  store i64 %value, ptr %pdv
  %added = add i64 %n, 1
  br label %next
next:
  %n1 = phi i64 [ %n, %merge ], [ %added, %append ]
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %count
  br i1 %more, label %point, label %done
done:
  %total = phi i64 [ 0, %init ], [ %n1, %next ]
  store i64 %total, ptr %f.count
  ret ptr %f
fail:
  ret ptr null
}
