; A reflected function called from numpy in one native call (jitvm.api.plan): the
; arguments' arrays checked against the plan, copied into new device buffers and viewed,
; the function run, its inputs released, a coarse-fences function's signal fence awaited,
; and the result views whose memory nothing else can reach handed over to numpy.
;
; %io holds u64 slots: the inputs (a tensor's array as its PyObject*, a scalar's VM slot),
; then the results, then per result the address numpy may view (0: Python copies), then
; the trap record. Returns 0, a trap's status, or ${DECLINED} when an argument is not what the
; fast path takes (nothing was done; Python marshals that call itself).
declare ptr @malloc(i64)
declare void @free(ptr)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
declare void @jv_release(ptr)
declare i32 @jv_hal_allocate(ptr, i32, i32, i64, i1, ptr, ptr)
declare ptr @jv_hal_buffer_view_new(ptr, i64, ptr, i32, i32)
declare ptr @jv_hal_fence_make()
declare i32 @jv_hal_wait(ptr, ptr, ptr)
declare void @jv_trap_set(ptr, i32, i32, i64, i64, i64, i64, ptr)

@oom = private unnamed_addr constant [27 x i8] c"allocating a call's inputs\00"

define internal ptr @slot(ptr %io, i64 %k) alwaysinline {
entry:
  %p = getelementptr inbounds i64, ptr %io, i64 %k
  ret ptr %p
}

define internal ptr @value(ptr %values, i64 %k) alwaysinline {
entry:
  %off = mul i64 %k, ${sizeof PlanValue}
  %v = getelementptr inbounds i8, ptr %values, i64 %off
  ret ptr %v
}

; Which of tensor input %in's dtypes array %a (a PyObject*) is, or -1: not an exact ndarray
; of one of them, of the plan's rank and static dims, C-contiguous.
define internal i64 @array_kind(ptr %plan, ptr %in, ptr %a) {
entry:
${fields CallPlan %plan p}
${fields PlanValue %in v}
${fields NumpyArray %a n}
  %type = load ptr, ptr %n.type
  %ndarray = load ptr, ptr %p.ndarray
  %exact = icmp eq ptr %type, %ndarray
  br i1 %exact, label %flags, label %no
flags:
  %f = load i32, ptr %n.flags
  %c = and i32 %f, ${NPY_C_CONTIGUOUS}
  %contiguous = icmp ne i32 %c, 0
  %nd32 = load i32, ptr %n.nd
  %nd = sext i32 %nd32 to i64
  %rank = load i64, ptr %v.rank
  %same_rank = icmp eq i64 %nd, %rank
  %ok = and i1 %contiguous, %same_rank
  br i1 %ok, label %dims, label %no
dims:
  %have = load ptr, ptr %n.dimensions
  %want = load ptr, ptr %v.dims
  %any = icmp ne i64 %rank, 0
  br i1 %any, label %dim, label %dtype
dim:
  %i = phi i64 [ 0, %dims ], [ %i1, %dim_next ]
  %pw = getelementptr inbounds i64, ptr %want, i64 %i
  %w = load i64, ptr %pw
  %ph = getelementptr inbounds i64, ptr %have, i64 %i
  %h = load i64, ptr %ph
  %free_dim = icmp eq i64 %w, -1
  %same = icmp eq i64 %w, %h
  %fits = or i1 %free_dim, %same
  br i1 %fits, label %dim_next, label %no
dim_next:
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %rank
  br i1 %more, label %dim, label %dtype
dtype:
  %descr = load ptr, ptr %n.descr
  %count32 = load i32, ptr %v.dtype_count
  %count = zext i32 %count32 to i64
  %some = icmp ne i64 %count, 0
  br i1 %some, label %match, label %no
match:
  %j = phi i64 [ 0, %dtype ], [ %j1, %match_next ]
  %pd = getelementptr inbounds ptr, ptr %v.dtypes, i64 %j
  %d = load ptr, ptr %pd
  %is = icmp eq ptr %d, %descr
  br i1 %is, label %found, label %match_next
match_next:
  %j1 = add i64 %j, 1
  %more_j = icmp ult i64 %j1, %count
  br i1 %more_j, label %match, label %no
found:
  ret i64 %j
no:
  ret i64 -1
}

; The address numpy may view of result view %view for output %out: its buffer's memory
; when nothing else can reach it (only this reference to the view, the view's to the
; buffer, the buffer's to its memory; a whole allocation, readable) and the view is what
; the plan expects (element type, static dims); else 0.
define internal i64 @handed_over(ptr %out, ptr %view) {
entry:
${fields PlanValue %out o}
  %null = icmp eq ptr %view, null
  br i1 %null, label %no, label %type
type:
  %pt = getelementptr inbounds i8, ptr %view, i64 ${Object.type_id}
  %tid = load i32, ptr %pt
  %is_view = icmp eq i32 %tid, ${HAL_BUFFER_VIEW}
  br i1 %is_view, label %fields, label %no
fields:
${fields HalBufferView %view v}
  %et = load i32, ptr %v.element_type
  %want_et = load i32, ptr %o.element_types
  %same_et = icmp eq i32 %et, %want_et
  %rank = load i64, ptr %v.rank
  %want_rank = load i64, ptr %o.rank
  %same_rank = icmp eq i64 %rank, %want_rank
  %same = and i1 %same_et, %same_rank
  br i1 %same, label %start_dims, label %no
start_dims:
  %want = load ptr, ptr %o.dims
  %any = icmp ne i64 %rank, 0
  br i1 %any, label %dim, label %owners
dim:
  %i = phi i64 [ 0, %start_dims ], [ %i1, %dim_next ]
  %count = phi i64 [ 1, %start_dims ], [ %count1, %dim_next ]
  %pw = getelementptr inbounds i64, ptr %want, i64 %i
  %w = load i64, ptr %pw
  %ph = getelementptr inbounds i64, ptr %v.dims, i64 %i
  %h = load i64, ptr %ph
  %free_dim = icmp eq i64 %w, -1
  %same_dim = icmp eq i64 %w, %h
  %fits = or i1 %free_dim, %same_dim
  %count1 = mul i64 %count, %h
  br i1 %fits, label %dim_next, label %no
dim_next:
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %rank
  br i1 %more, label %dim, label %owners
owners:
  %elements = phi i64 [ 1, %start_dims ], [ %count1, %dim_next ]
  %vrc = load i64, ptr %view
  %b = load ptr, ptr %v.buffer
  %brc = load i64, ptr %b
${fields HalBuffer %b h}
  %parent = load ptr, ptr %h.parent
  %offset = load i64, ptr %h.byte_offset
  %m = load ptr, ptr %h.memory
  %mrc = load i64, ptr %m
  %pa = getelementptr inbounds i8, ptr %m, i64 ${Buffer.allocation}
  %allocation = load ptr, ptr %pa
  %one_view = icmp eq i64 %vrc, 1
  %one_buffer = icmp eq i64 %brc, 1
  %one_memory = icmp eq i64 %mrc, 1
  %whole = icmp eq ptr %parent, null
  %at_start = icmp eq i64 %offset, 0
  %allocated = icmp ne ptr %allocation, null
  %access = load i32, ptr %h.allowed_access
  %read_bit = and i32 %access, ${ACCESS_READ}
  %readable = icmp ne i32 %read_bit, 0
  %bits = and i32 %et, 255
  %bits64 = zext i32 %bits to i64
  %total_bits = mul i64 %elements, %bits64
  %plus = add i64 %total_bits, 7
  %bytes = lshr i64 %plus, 3
  %length = load i64, ptr %h.byte_length
  %inside = icmp ule i64 %bytes, %length
  %nonempty = icmp ne i64 %bytes, 0
  %c1 = and i1 %one_view, %one_buffer
  %c2 = and i1 %one_memory, %whole
  %c3 = and i1 %at_start, %allocated
  %c4 = and i1 %readable, %inside
  %c12 = and i1 %c1, %c2
  %c34 = and i1 %c3, %c4
  %c1234 = and i1 %c12, %c34
  %ok = and i1 %c1234, %nonempty
  br i1 %ok, label %yes, label %no
yes:
  %data = load ptr, ptr %h.data
  %d = ptrtoint ptr %data to i64
  ret i64 %d
no:
  ret i64 0
}

define i32 @jv_invoke(ptr %plan, ptr %io) {
entry:
${fields CallPlan %plan p}
  %n = load i64, ptr %p.input_count
  %m = load i64, ptr %p.output_count
  %inputs = load ptr, ptr %p.inputs
  %outputs = load ptr, ptr %p.outputs
  %fenced32 = load i32, ptr %p.fenced
  %fenced = icmp ne i32 %fenced32, 0
  %results = call ptr @slot(ptr %io, i64 %n)
  %two_m = shl i64 %m, 1
  %n_2m = add i64 %n, %two_m
  %data_at = add i64 %n, %m
  %handed = call ptr @slot(ptr %io, i64 %data_at)
  %t = call ptr @slot(ptr %io, i64 %n_2m)
  %extra = select i1 %fenced, i64 2, i64 0
  %nargs = add i64 %n, %extra
  %args = alloca i64, i64 %nargs
  %kinds = alloca i64, i64 %n
  %bslot = alloca ptr
  %any_in = icmp ne i64 %n, 0
  br i1 %any_in, label %check, label %call_setup
; 1. every argument is what the plan takes, or Python marshals the call
check:
  %i = phi i64 [ 0, %entry ], [ %i1, %check_next ]
  %in = call ptr @value(ptr %inputs, i64 %i)
  %tensor_p = getelementptr inbounds i8, ptr %in, i64 ${PlanValue.tensor}
  %tensor = load i32, ptr %tensor_p
  %is_tensor = icmp ne i32 %tensor, 0
  br i1 %is_tensor, label %check_array, label %check_next
check_array:
  %pa = call ptr @slot(ptr %io, i64 %i)
  %a = load ptr, ptr %pa
  %kind = call i64 @array_kind(ptr %plan, ptr %in, ptr %a)
  %pk = getelementptr inbounds i64, ptr %kinds, i64 %i
  store i64 %kind, ptr %pk
  %bad = icmp slt i64 %kind, 0
  br i1 %bad, label %declined, label %check_next
check_next:
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %n
  br i1 %more, label %check, label %make
declined:
  ret i32 ${DECLINED}
; 2. the inputs as views of new device buffers holding copies of the arrays
make:
  %allocator = load ptr, ptr %p.allocator
  br label %input
input:
  %k = phi i64 [ 0, %make ], [ %k1, %input_next ]
  %kin = call ptr @value(ptr %inputs, i64 %k)
  %ktensor_p = getelementptr inbounds i8, ptr %kin, i64 ${PlanValue.tensor}
  %ktensor = load i32, ptr %ktensor_p
  %k_is_tensor = icmp ne i32 %ktensor, 0
  %pslot = call ptr @slot(ptr %io, i64 %k)
  %raw = load i64, ptr %pslot
  %parg = getelementptr inbounds i64, ptr %args, i64 %k
  br i1 %k_is_tensor, label %copy, label %scalar
scalar:
  store i64 %raw, ptr %parg
  br label %input_next
copy:
${fields PlanValue %kin kv}
  %arr = inttoptr i64 %raw to ptr
${fields NumpyArray %arr na}
  %pkk = getelementptr inbounds i64, ptr %kinds, i64 %k
  %which = load i64, ptr %pkk
  %pet = getelementptr inbounds i32, ptr %kv.element_types, i64 %which
  %et = load i32, ptr %pet
  %pis = getelementptr inbounds i64, ptr %kv.itemsizes, i64 %which
  %itemsize = load i64, ptr %pis
  %rank = load i64, ptr %kv.rank
  %dims = load ptr, ptr %na.dimensions
  %has_dims = icmp ne i64 %rank, 0
  br i1 %has_dims, label %count, label %allocate
count:
  %c = phi i64 [ 0, %copy ], [ %c1, %count ]
  %elements = phi i64 [ 1, %copy ], [ %elements1, %count ]
  %pd = getelementptr inbounds i64, ptr %dims, i64 %c
  %d = load i64, ptr %pd
  %elements1 = mul i64 %elements, %d
  %c1 = add i64 %c, 1
  %more_c = icmp ult i64 %c1, %rank
  br i1 %more_c, label %count, label %allocate
allocate:
  %total = phi i64 [ 1, %copy ], [ %elements1, %count ]
  %bytes = mul i64 %total, %itemsize
  %sa = call i32 @jv_hal_allocate(ptr %allocator, i32 ${INPUT_MEMORY_TYPE}, i32 ${INPUT_USAGE}, i64 %bytes, i1 false,
                                  ptr %bslot, ptr %t)
  %failed_alloc = icmp ne i32 %sa, 0
  br i1 %failed_alloc, label %unmake, label %fill
fill:
  %buffer = load ptr, ptr %bslot
  %pbd = getelementptr inbounds i8, ptr %buffer, i64 ${HalBuffer.data}
  %to = load ptr, ptr %pbd
  %from = load ptr, ptr %na.data
  call void @llvm.memcpy.p0.p0.i64(ptr %to, ptr %from, i64 %bytes, i1 false)
  %view = call ptr @jv_hal_buffer_view_new(ptr %buffer, i64 %rank, ptr %dims, i32 %et, i32 ${ENCODING_DENSE_ROW_MAJOR})
  call void @jv_release(ptr %buffer)
  %vnull = icmp eq ptr %view, null
  br i1 %vnull, label %view_oom, label %made
made:
  %vi = ptrtoint ptr %view to i64
  store i64 %vi, ptr %parg
  br label %input_next
input_next:
  %k1 = add i64 %k, 1
  %more_k = icmp ult i64 %k1, %n
  br i1 %more_k, label %input, label %call_setup
view_oom:
  call void @jv_trap_set(ptr %t, i32 ${S_RESOURCE_EXHAUSTED}, i32 ${K_OUT_OF_MEMORY}, i64 0, i64 0, i64 0, i64 0,
                         ptr @oom)
  br label %unmake
unmake:
  %ustatus = phi i32 [ %sa, %allocate ], [ ${S_RESOURCE_EXHAUSTED}, %view_oom ]
  call void @release_inputs(ptr %inputs, ptr %args, i64 %k)
  ret i32 %ustatus
; 3. the call
call_setup:
  br i1 %fenced, label %fence, label %call
fence:
  %pw = getelementptr inbounds i64, ptr %args, i64 %n
  store i64 0, ptr %pw
  %f = call ptr @jv_hal_fence_make()
  %n1 = add i64 %n, 1
  %psig = getelementptr inbounds i64, ptr %args, i64 %n1
  %fi = ptrtoint ptr %f to i64
  store i64 %fi, ptr %psig
  br label %call
call:
  %signal = phi ptr [ null, %call_setup ], [ %f, %fence ]
  %fn = load ptr, ptr %p.fn
  %ctx = load ptr, ptr %p.ctx
  %status = call i32 %fn(ptr %ctx, ptr %args, ptr %results, ptr %t)
  call void @release_inputs(ptr %inputs, ptr %args, i64 %n)
  br i1 %fenced, label %await, label %ran
await:
  %ok_call = icmp eq i32 %status, 0
  br i1 %ok_call, label %wait, label %drop_fence
wait:
  %what = load ptr, ptr %p.what
  %sw = call i32 @jv_hal_wait(ptr %signal, ptr %what, ptr %t)
  br label %drop_fence
drop_fence:
  %fstatus = phi i32 [ %status, %await ], [ %sw, %wait ]
  call void @jv_release(ptr %signal)
  br label %ran
ran:
  %final = phi i32 [ %status, %call ], [ %fstatus, %drop_fence ]
  %failed = icmp ne i32 %final, 0
  br i1 %failed, label %fail, label %results_check
fail:
  ret i32 %final
; 4. results numpy may view without a copy
results_check:
  %any_out = icmp ne i64 %m, 0
  br i1 %any_out, label %output, label %done
output:
  %j = phi i64 [ 0, %results_check ], [ %j1, %output_next ]
  %out = call ptr @value(ptr %outputs, i64 %j)
  %otensor_p = getelementptr inbounds i8, ptr %out, i64 ${PlanValue.tensor}
  %otensor = load i32, ptr %otensor_p
  %o_is_tensor = icmp ne i32 %otensor, 0
  %pr = getelementptr inbounds i64, ptr %results, i64 %j
  %r = load ptr, ptr %pr
  %ph = getelementptr inbounds i64, ptr %handed, i64 %j
  br i1 %o_is_tensor, label %hand, label %no_hand
hand:
  %addr = call i64 @handed_over(ptr %out, ptr %r)
  store i64 %addr, ptr %ph
  br label %output_next
no_hand:
  store i64 0, ptr %ph
  br label %output_next
output_next:
  %j1 = add i64 %j, 1
  %more_j = icmp ult i64 %j1, %m
  br i1 %more_j, label %output, label %done
done:
  ret i32 0
}

; Releases the views made for the first %count inputs.
define internal void @release_inputs(ptr %inputs, ptr %args, i64 %count) {
entry:
  %any = icmp ne i64 %count, 0
  br i1 %any, label %loop, label %done
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %next ]
  %in = call ptr @value(ptr %inputs, i64 %i)
  %tp = getelementptr inbounds i8, ptr %in, i64 ${PlanValue.tensor}
  %tensor = load i32, ptr %tp
  %is_tensor = icmp ne i32 %tensor, 0
  br i1 %is_tensor, label %release, label %next
release:
  %pa = getelementptr inbounds i64, ptr %args, i64 %i
  %v = load ptr, ptr %pa
  call void @jv_release(ptr %v)
  br label %next
next:
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %count
  br i1 %more, label %loop, label %done
done:
  ret void
}
