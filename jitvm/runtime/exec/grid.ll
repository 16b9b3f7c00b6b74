; The grid walker (runtime.exec.workers): workgroup runs claimed from a shared counter.
; Claims the next run of up to %chunk indices below %total from the shared counter: returns
; its first index (>= %total: nothing left) and stores its end in *%end_out.
define internal i64 @claim_run(ptr %next, i64 %chunk, i64 %total, ptr %end_out) {
entry:
  %first = atomicrmw add ptr %next, i64 %chunk seq_cst
  %end0 = add i64 %first, %chunk
  %short = icmp ult i64 %total, %end0
  %end = select i1 %short, i64 %total, i64 %end0
  store i64 %end, ptr %end_out
  ret i64 %first
}

; A split loop's body over all of [start, bound) on the calling thread.
define internal void @run_alone(ptr %body, ptr %state, ptr %env, i64 %start, i64 %bound, ptr %trap) {
entry:
  %args = alloca [2 x i64], align 8
  store i64 %start, ptr %args
  %hi = getelementptr i64, ptr %args, i64 1
  store i64 %bound, ptr %hi
${if traced}  %trace.t0 = call i64 @now_ns()
  call i32 %body(ptr %state, ptr %args, ptr %env, ptr %trap) ; a chunk of a split loop, timed when traced
${if traced}  call void @trace_record(i64 ${TRACE_SPLIT}, i64 %start, i64 %trace.t0, ptr %body, ptr null)
  ret void
}

declare i64 @jv_fpu_get()
declare void @jv_fpu_set(i64)
declare i32 @clock_gettime(i32, ptr)

define internal i64 @now_ns() {
entry:
  %ts = alloca [2 x i64], align 8
  call i32 @clock_gettime(i32 1, ptr %ts)
  %s = load i64, ptr %ts
  %pn = getelementptr i64, ptr %ts, i64 1
  %n = load i64, ptr %pn
  %sn = mul i64 %s, 1000000000
  %t = add i64 %sn, %n
  ret i64 %t
}

define i32 @jv_dispatch_worker(ptr %fn, ptr %ctx, ptr %local, ptr %consts, ptr %bindings,
                               i32 %cx, i32 %cy, i32 %cz, ptr %next, i64 %total, ptr %stop,
                               ptr %trap, ptr %failed, i64 %flush_bits, i64 %chunk) {
entry:
  %args = alloca [12 x i64], align 8
  %end_slot = alloca i64, align 8
  %results = alloca [1 x i64], align 8
  %saved = call i64 @jv_fpu_get()
  %ftz = or i64 %saved, %flush_bits
  call void @jv_fpu_set(i64 %ftz)
  %l = ptrtoint ptr %local to i64
  %c = ptrtoint ptr %consts to i64
  %b = ptrtoint ptr %bindings to i64
  store i64 %l, ptr %args
  %a1 = getelementptr i64, ptr %args, i64 1
  store i64 %c, ptr %a1
  %a2 = getelementptr i64, ptr %args, i64 2
  store i64 %b, ptr %a2
  %a6 = getelementptr i64, ptr %args, i64 6
  store i64 1, ptr %a6
  %a7 = getelementptr i64, ptr %args, i64 7
  store i64 1, ptr %a7
  %a8 = getelementptr i64, ptr %args, i64 8
  store i64 1, ptr %a8
  %cx64 = zext i32 %cx to i64
  %cy64 = zext i32 %cy to i64
  %cz64 = zext i32 %cz to i64
  %a9 = getelementptr i64, ptr %args, i64 9
  store i64 %cx64, ptr %a9
  %a10 = getelementptr i64, ptr %args, i64 10
  store i64 %cy64, ptr %a10
  %a11 = getelementptr i64, ptr %args, i64 11
  store i64 %cz64, ptr %a11
  %cxy = mul i64 %cx64, %cy64
  br label %claim
claim:
  %stopped = load atomic i32, ptr %stop acquire, align 4
  %halt = icmp ne i32 %stopped, 0
  br i1 %halt, label %done, label %take
take:
  %first = call i64 @claim_run(ptr %next, i64 %chunk, i64 %total, ptr %end_slot)
  %more = icmp ult i64 %first, %total
  br i1 %more, label %claimed, label %done
claimed:
  %end = load i64, ptr %end_slot
  br label %run
run:
  %i = phi i64 [ %first, %claimed ], [ %i1, %next_in_run ]
  %x = urem i64 %i, %cx64
  %xy = udiv i64 %i, %cx64
  %y = urem i64 %xy, %cy64
  %z = udiv i64 %i, %cxy
  %a3 = getelementptr i64, ptr %args, i64 3
  store i64 %x, ptr %a3
  %a4 = getelementptr i64, ptr %args, i64 4
  store i64 %y, ptr %a4
  %a5 = getelementptr i64, ptr %args, i64 5
  store i64 %z, ptr %a5
${if traced}  %trace.t0 = call i64 @now_ns()
  %status = call i32 %fn(ptr %ctx, ptr %args, ptr %results, ptr %trap) ; a workgroup, timed when traced
${if traced}  call void @trace_record(i64 ${TRACE_GRID}, i64 %i, i64 %trace.t0, ptr %fn, ptr %ctx)
  %ok = icmp eq i32 %status, 0
  br i1 %ok, label %next_in_run, label %fail
next_in_run:
  %i1 = add i64 %i, 1
  %in_run = icmp ult i64 %i1, %end
  br i1 %in_run, label %run, label %claim
fail:
  store i64 %i, ptr %failed
  store atomic i32 1, ptr %stop release, align 4
  call void @jv_fpu_set(i64 %saved)
  ret i32 %status
done:
  call void @jv_fpu_set(i64 %saved)
  ret i32 0
}
