; The HAL's native fast paths (runtime.modules.hal.fastpath): the plain case, else Python.
declare void @jv_retain(ptr)

; Whether %o is a non-null object of runtime type %type.
define internal i1 @is_a(ptr %o, i32 %type) alwaysinline {
entry:
  %null = icmp eq ptr %o, null
  br i1 %null, label %no, label %look
look:
  %p = getelementptr inbounds i8, ptr %o, i64 ${Object.type_id}
  %t = load i32, ptr %p
  %same = icmp eq i32 %t, %type
  ret i1 %same
no:
  ret i1 false
}

define internal i64 @arg(ptr %args, i64 %k) alwaysinline {
entry:
  %p = getelementptr inbounds i64, ptr %args, i64 %k
  %v = load i64, ptr %p
  ret i64 %v
}

define internal ptr @ref_arg(ptr %args, i64 %k) alwaysinline {
entry:
  %p = getelementptr inbounds i64, ptr %args, i64 %k
  %v = load ptr, ptr %p
  ret ptr %v
}

${held}

; hal.buffer.assert(buffer, message, allocator, minimum_length, memory_types, usage)    0rrrIii_v
define i32 @jv_hal_buffer_assert(ptr %python, ptr %args, ptr %results, ptr %trap) {
entry:
  %b = call ptr @ref_arg(ptr %args, i64 0)
  %m = call ptr @ref_arg(ptr %args, i64 1)
  %a = call ptr @ref_arg(ptr %args, i64 2)
  %ok_b = call i1 @is_a(ptr %b, i32 ${HAL_BUFFER})
  %ok_m = call i1 @is_a(ptr %m, i32 ${VM_BUFFER})
  %ok_a = call i1 @is_a(ptr %a, i32 ${HAL_ALLOCATOR})
  %ok_bm = and i1 %ok_b, %ok_m
  %refs = and i1 %ok_bm, %ok_a
  br i1 %refs, label %check, label %slow
check:
  %min = call i64 @arg(ptr %args, i64 3)
  %types64 = call i64 @arg(ptr %args, i64 4)
  %usage64 = call i64 @arg(ptr %args, i64 5)
  %types = trunc i64 %types64 to i32
  %usage = trunc i64 %usage64 to i32
  %pl = getelementptr inbounds i8, ptr %b, i64 ${HalBuffer.byte_length}
  %len = load i64, ptr %pl
  %pm = getelementptr inbounds i8, ptr %b, i64 ${HalBuffer.memory_type}
  %mem = load i32, ptr %pm
  %pu = getelementptr inbounds i8, ptr %b, i64 ${HalBuffer.allowed_usage}
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
}

; hal.buffer_view.assert(view, message, element_type, encoding_type, dims...)    0rriiCID_v
define i32 @jv_hal_buffer_view_assert(ptr %python, ptr %args, ptr %results, ptr %trap) {
entry:
  %v = call ptr @ref_arg(ptr %args, i64 0)
  %m = call ptr @ref_arg(ptr %args, i64 1)
  %ok_v = call i1 @is_a(ptr %v, i32 ${HAL_BUFFER_VIEW})
  %ok_m = call i1 @is_a(ptr %m, i32 ${VM_BUFFER})
  %refs = and i1 %ok_v, %ok_m
  br i1 %refs, label %types, label %slow
types:
  %et64 = call i64 @arg(ptr %args, i64 2)
  %enc64 = call i64 @arg(ptr %args, i64 3)
  %et = trunc i64 %et64 to i32
  %enc = trunc i64 %enc64 to i32
  %pe = getelementptr inbounds i8, ptr %v, i64 ${HalBufferView.element_type}
  %have_et = load i32, ptr %pe
  %pn = getelementptr inbounds i8, ptr %v, i64 ${HalBufferView.encoding_type}
  %have_enc = load i32, ptr %pn
  %opaque = icmp eq i32 %have_enc, ${ENCODING_OPAQUE}
  %same_enc = icmp eq i32 %have_enc, %enc
  %enc_ok = or i1 %opaque, %same_enc
  %et_ok = icmp eq i32 %have_et, %et
  %pr = getelementptr inbounds i8, ptr %v, i64 ${HalBufferView.rank}
  %rank64 = load i64, ptr %pr
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
  %pd = getelementptr inbounds i8, ptr %v, i64 ${HalBufferView.dims}
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
}
