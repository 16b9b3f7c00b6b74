; A reflected function's native entry (jitvm.api.entry): the body of a CPython builtin
; (METH_FASTCALL | METH_KEYWORDS) that takes the caller's argument vector as it comes,
; runs jv_invoke on it with the GIL released, and makes the result arrays over the
; handed-over memory itself (numpy's C API), each array's base a capsule that releases its
; buffer view when the array dies, as the Python path's owner does. Every other outcome goes
; to Python: keywords, a wrong count and a declined call to the general call of the same
; arguments, a trap and results not all handed over to the plan's completion, with jv_invoke's
; io array. Its `self` is a capsule of the PlanEntry record.
declare i32 @jv_invoke(ptr, ptr)
declare void @jv_release(ptr)
declare void @jv_trap_clear(ptr)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
; CPython's C API
declare ptr @PyEval_SaveThread()
declare void @PyEval_RestoreThread(ptr)
declare ptr @PyObject_Vectorcall(ptr, ptr, i64, ptr)
declare ptr @PyCapsule_New(ptr, ptr, ptr)
declare ptr @PyCapsule_GetPointer(ptr, ptr)
declare ptr @PyLong_FromLong(i64)
declare ptr @PyLong_FromVoidPtr(ptr)
declare void @Py_DecRef(ptr)
declare void @Py_IncRef(ptr)
declare ptr @PyTuple_New(i64)
declare i32 @PyTuple_SetItem(ptr, i64, ptr)
; numpy's C API (its _ARRAY_API table's entries, provided by jitvm.api.entry)
declare ptr @PyArray_NewFromDescr(ptr, ptr, i32, ptr, ptr, ptr, i32, ptr)
declare i32 @PyArray_SetBaseObject(ptr, ptr)

define ptr @jv_plan_entry(ptr %self, ptr %args, i64 %nargs, ptr %kwnames) {
entry:
  %e = call ptr @PyCapsule_GetPointer(ptr %self, ptr null)
${fields PlanEntry %e e}
  %plan = load ptr, ptr %e.plan
${fields CallPlan %plan p}
  %n = load i64, ptr %p.input_count
  %m = load i64, ptr %p.output_count
  %words = load i64, ptr %e.words
  %io = alloca i64, i64 %words, align 16
  %arrays = alloca ptr, i64 %m
  %argv = alloca ptr, i64 2
  %results = getelementptr inbounds i64, ptr %io, i64 %n
  %data_at = getelementptr inbounds i64, ptr %results, i64 %m
  %no_keywords = icmp eq ptr %kwnames, null
  %count_ok = icmp eq i64 %nargs, %n
  %takes = and i1 %no_keywords, %count_ok
  br i1 %takes, label %invoke, label %general
; 1. jv_invoke on the arguments as they are, the GIL released
invoke:
  %bytes = shl i64 %words, 3
  call void @llvm.memset.p0.i64(ptr %io, i8 0, i64 %bytes, i1 false)
  %in_bytes = shl i64 %n, 3
  call void @llvm.memcpy.p0.p0.i64(ptr %io, ptr %args, i64 %in_bytes, i1 false)
  %ts = call ptr @PyEval_SaveThread()
  %status = call i32 @jv_invoke(ptr %plan, ptr %io)
  call void @PyEval_RestoreThread(ptr %ts)
  switch i32 %status, label %complete [ i32 0, label %handed
                                        i32 ${DECLINED}, label %general ]
general:
  %g = load ptr, ptr %e.general
  %r = call ptr @PyObject_Vectorcall(ptr %g, ptr %args, i64 %nargs, ptr %kwnames)
  ret ptr %r
; 2. every result handed over, or Python completes the call
handed:
  %any = icmp ne i64 %m, 0
  br i1 %any, label %check, label %complete
check:
  %i = phi i64 [ 0, %handed ], [ %i1, %check_next ]
  %pd = getelementptr inbounds i64, ptr %data_at, i64 %i
  %d = load i64, ptr %pd
  %zero = icmp eq i64 %d, 0
  br i1 %zero, label %complete, label %check_next
check_next:
  %i1 = add i64 %i, 1
  %more_i = icmp ult i64 %i1, %m
  br i1 %more_i, label %check, label %make
complete:
  %cstatus = phi i32 [ %status, %invoke ], [ 0, %handed ], [ 0, %check ]
  %c = load ptr, ptr %e.complete
  %s64 = sext i32 %cstatus to i64
  %ps = call ptr @PyLong_FromLong(i64 %s64)
  %pio = call ptr @PyLong_FromVoidPtr(ptr %io)
  %both = icmp ne ptr %ps, null
  %both2 = icmp ne ptr %pio, null
  %made_both = and i1 %both, %both2
  br i1 %made_both, label %call_complete, label %complete_oom
call_complete:
  store ptr %ps, ptr %argv
  %argv1 = getelementptr inbounds ptr, ptr %argv, i64 1
  store ptr %pio, ptr %argv1
  %cr = call ptr @PyObject_Vectorcall(ptr %c, ptr %argv, i64 2, ptr null)
  call void @Py_DecRef(ptr %ps)
  call void @Py_DecRef(ptr %pio)
  ret ptr %cr
complete_oom:
  ; an int could not be made (MemoryError set): the call's results or trap are dropped
  call void @Py_DecRef(ptr %ps)
  call void @Py_DecRef(ptr %pio)
  call void @drop_results(ptr %results, i64 0, i64 %m, i32 %cstatus)
  %trap = getelementptr inbounds i64, ptr %data_at, i64 %m
  call void @jv_trap_clear(ptr %trap)
  ret ptr null
; 3. an array per result over its memory, based on a capsule owning its view
make:
  %outputs = load ptr, ptr %p.outputs
  %descrs = load ptr, ptr %e.descrs
  %ndarray = load ptr, ptr %p.ndarray
  br label %array
array:
  %j = phi i64 [ 0, %make ], [ %j1, %array_next ]
  %off = mul i64 %j, ${sizeof PlanValue}
  %out = getelementptr inbounds i8, ptr %outputs, i64 %off
${fields PlanValue %out o}
  %rank = load i64, ptr %o.rank
  %rank32 = trunc i64 %rank to i32
  %dims = load ptr, ptr %o.dims
  %pdescr = getelementptr inbounds ptr, ptr %descrs, i64 %j
  %descr = load ptr, ptr %pdescr
  %pdata = getelementptr inbounds i64, ptr %data_at, i64 %j
  %data64 = load i64, ptr %pdata
  %data = inttoptr i64 %data64 to ptr
  %pview = getelementptr inbounds ptr, ptr %results, i64 %j
  %view = load ptr, ptr %pview
  call void @Py_IncRef(ptr %descr)  ; PyArray_NewFromDescr takes a reference
  %a = call ptr @PyArray_NewFromDescr(ptr %ndarray, ptr %descr, i32 %rank32, ptr %dims, ptr null, ptr %data,
                                      i32 ${NPY_ARRAY_CARRAY}, ptr null)
  %a_null = icmp eq ptr %a, null
  br i1 %a_null, label %failed_here, label %capsule
capsule:
  %cap = call ptr @PyCapsule_New(ptr %view, ptr null, ptr @release_view)
  %cap_null = icmp eq ptr %cap, null
  br i1 %cap_null, label %failed_array, label %base
base:
  ; takes the capsule's reference, also when it fails (then the capsule released the view)
  %sb = call i32 @PyArray_SetBaseObject(ptr %a, ptr %cap)
  %sb_failed = icmp slt i32 %sb, 0
  br i1 %sb_failed, label %failed_based, label %array_next
array_next:
  %pa = getelementptr inbounds ptr, ptr %arrays, i64 %j
  store ptr %a, ptr %pa
  %j1 = add i64 %j, 1
  %more_j = icmp ult i64 %j1, %m
  br i1 %more_j, label %array, label %made
made:
  %single = icmp eq i64 %m, 1
  br i1 %single, label %one, label %tuple
one:
  %a0 = load ptr, ptr %arrays
  ret ptr %a0
tuple:
  %t = call ptr @PyTuple_New(i64 %m)
  %t_null = icmp eq ptr %t, null
  br i1 %t_null, label %failed_tuple, label %fill
fill:
  %k = phi i64 [ 0, %tuple ], [ %k1, %fill ]
  %pk = getelementptr inbounds ptr, ptr %arrays, i64 %k
  %ak = load ptr, ptr %pk
  %ignored = call i32 @PyTuple_SetItem(ptr %t, i64 %k, ptr %ak)  ; takes the array's reference
  %k1 = add i64 %k, 1
  %more_k = icmp ult i64 %k1, %m
  br i1 %more_k, label %fill, label %filled
filled:
  ret ptr %t
; failures (an exception set): arrays made so far dropped, views not yet owned released
failed_array:
  call void @Py_DecRef(ptr %a)
  br label %failed_here
failed_here:
  call void @drop_arrays(ptr %arrays, i64 %j)
  call void @drop_results(ptr %results, i64 %j, i64 %m, i32 0)
  ret ptr null
failed_based:
  call void @Py_DecRef(ptr %a)
  call void @drop_arrays(ptr %arrays, i64 %j)
  %after = add i64 %j, 1
  call void @drop_results(ptr %results, i64 %after, i64 %m, i32 0)
  ret ptr null
failed_tuple:
  call void @drop_arrays(ptr %arrays, i64 %m)
  ret ptr null
}

; The capsule destructor of a result array's base: the view's reference released, the GIL
; released around it (as the Python path's owner releases it, through ctypes).
define void @release_view(ptr %capsule) {
entry:
  %view = call ptr @PyCapsule_GetPointer(ptr %capsule, ptr null)
  %ts = call ptr @PyEval_SaveThread()
  call void @jv_release(ptr %view)
  call void @PyEval_RestoreThread(ptr %ts)
  ret void
}

; The capsule destructor of a PlanEntry: its owner's reference dropped.
define void @jv_plan_entry_release(ptr %capsule) {
entry:
  %e = call ptr @PyCapsule_GetPointer(ptr %capsule, ptr null)
  %po = getelementptr inbounds i8, ptr %e, i64 ${PlanEntry.owner}
  %owner = load ptr, ptr %po
  call void @Py_DecRef(ptr %owner)
  ret void
}

define internal void @drop_arrays(ptr %arrays, i64 %count) {
entry:
  %any = icmp ne i64 %count, 0
  br i1 %any, label %loop, label %done
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %p = getelementptr inbounds ptr, ptr %arrays, i64 %i
  %a = load ptr, ptr %p
  call void @Py_DecRef(ptr %a)
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %count
  br i1 %more, label %loop, label %done
done:
  ret void
}

; Releases result views %from..%to of a completed call (%status 0; a failed call made none).
define internal void @drop_results(ptr %results, i64 %from, i64 %to, i32 %status) {
entry:
  %ok = icmp eq i32 %status, 0
  %any = icmp ult i64 %from, %to
  %go = and i1 %ok, %any
  br i1 %go, label %loop, label %done
loop:
  %i = phi i64 [ %from, %entry ], [ %i1, %loop ]
  %p = getelementptr inbounds ptr, ptr %results, i64 %i
  %v = load ptr, ptr %p
  call void @jv_release(ptr %v)
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %to
  br i1 %more, label %loop, label %done
done:
  ret void
}
