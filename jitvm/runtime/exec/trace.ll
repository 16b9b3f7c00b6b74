; The workgroup trace (runtime.exec.trace): a TraceRecord per kernel call, while there is room.
@jv_trace_count = global i64 0
@jv_trace_capacity = global i64 0
@jv_trace_rows = global ptr null
declare i64 @pthread_self()

; The function a record names: a library step's export (its ctx, a LibraryCall, holds it)
; rather than the adapter every library workgroup goes through.
define internal ptr @trace_function(ptr %fn, ptr %ctx) {
entry:
  %library = icmp eq ptr %fn, @jv_library_workgroup
  br i1 %library, label %export, label %own
export:
  %pexport = getelementptr inbounds i8, ptr %ctx, i64 ${LibraryCall.fn}
  %exported = load ptr, ptr %pexport
  ret ptr %exported
own:
  ret ptr %fn
}

define internal void @trace_record(i64 %kind, i64 %index, i64 %t0, ptr %called, ptr %ctx) {
entry:
  %t1 = call i64 @now_ns()
  %k = atomicrmw add ptr @jv_trace_count, i64 1 monotonic
  %cap = load i64, ptr @jv_trace_capacity
  %room = icmp ult i64 %k, %cap
  br i1 %room, label %put, label %done
put:
  %rows = load ptr, ptr @jv_trace_rows
  %at = mul i64 %k, ${sizeof TraceRecord}
  %row = getelementptr inbounds i8, ptr %rows, i64 %at
${fields TraceRecord %row r}
  %thread = call i64 @pthread_self()
  store i64 %thread, ptr %r.thread
  store i64 %kind, ptr %r.kind
  store i64 %index, ptr %r.index
  store i64 %t0, ptr %r.start_ns
  store i64 %t1, ptr %r.end_ns
  %fn = call ptr @trace_function(ptr %called, ptr %ctx)
  %f = ptrtoint ptr %fn to i64
  store i64 %f, ptr %r.function
  br label %done
done:
  ret void
}
