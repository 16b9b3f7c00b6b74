; The pool's threads (runtime.exec.workers): parked on futexes, posted jobs, split loops.
${pause_declaration}
declare i64 @syscall(i64, ...)
declare i32 @sched_yield()

@always = internal constant i32 1

; Waits until *%word differs from %old and returns it: spins for %spin_ns while *%linger is
; nonzero, then sleeps on the futex (counted in *%sleepers, so a waker knows it must make
; the system call).
define internal i32 @wait_change(ptr %word, i32 %old, ptr %sleepers, i64 %spin_ns, ptr %linger) {
entry:
  %t0 = call i64 @now_ns()
  br label %spin
spin:
  %i = phi i64 [ 0, %entry ], [ %i1, %pause ], [ %i1, %clock ]
  %v = load atomic i32, ptr %word acquire, align 4
  %changed = icmp ne i32 %v, %old
  br i1 %changed, label %out, label %stay
stay:
  %wanted = load atomic i32, ptr %linger monotonic, align 4
  %resting = icmp eq i32 %wanted, 0
  br i1 %resting, label %sleep, label %pause
pause:
  ${pause}
  %i1 = add i64 %i, 1
  %low = and i64 %i1, 63
  %look = icmp eq i64 %low, 0
  br i1 %look, label %clock, label %spin
clock:
  call i32 @sched_yield()
  %t = call i64 @now_ns()
  %waited = sub i64 %t, %t0
  %long = icmp uge i64 %waited, %spin_ns
  br i1 %long, label %sleep, label %spin
sleep:
  atomicrmw add ptr %sleepers, i32 1 seq_cst
  br label %recheck
recheck:
  %v2 = load atomic i32, ptr %word seq_cst, align 4
  %changed2 = icmp ne i32 %v2, %old
  br i1 %changed2, label %woke, label %futex
futex:
  call i64 (i64, ...) @syscall(i64 ${SYS_futex}, ptr %word, i32 ${FUTEX_WAIT_PRIVATE}, i32 %old, ptr null)
  br label %recheck
woke:
  atomicrmw sub ptr %sleepers, i32 1 seq_cst
  br label %out
out:
  %r = phi i32 [ %v, %spin ], [ %v2, %woke ]
  ret i32 %r
}

define internal void @wake_all(ptr %word, ptr %sleepers) {
entry:
  %n = load atomic i32, ptr %sleepers seq_cst, align 4
  %any = icmp ne i32 %n, 0
  br i1 %any, label %wake, label %done
wake:
  call i64 (i64, ...) @syscall(i64 ${SYS_futex}, ptr %word, i32 ${FUTEX_WAKE_PRIVATE}, i32 2147483647)
  br label %done
done:
  ret void
}

; Runs share %k of the posted job: a grid or a split loop.
define internal void @run_share(ptr %pool, i64 %k) {
entry:
${fields Pool %pool f}
  %kind = load i32, ptr %f.kind
  %is_loop = icmp eq i32 %kind, 1
  br i1 %is_loop, label %loop, label %grid
loop:
  call void @run_loop_share(ptr %pool)
  ret void
grid:
  call void @run_grid_share(ptr %pool, i64 %k)
  ret void
}

; Claims chunks of the split loop's iterations until none are left (the body cannot trap:
; lower.loops.parallel only splits loops of pure arithmetic and proven buffer accesses).
define internal void @run_loop_share(ptr %pool) {
entry:
${fields Pool %pool f}
  %args = alloca [2 x i64], align 8
  %end_slot = alloca i64, align 8
  %hi_slot = getelementptr i64, ptr %args, i64 1
  %saved = call i64 @jv_fpu_get()
  %flush = load i64, ptr %f.flush
  %ftz = or i64 %saved, %flush
  call void @jv_fpu_set(i64 %ftz)
  %body = load ptr, ptr %f.body
  %state = load ptr, ptr %f.state
  %env = load ptr, ptr %f.env
  %trap = load ptr, ptr %f.loop_trap
  %start = load i64, ptr %f.start
  %step = load i64, ptr %f.step
  %bound = load i64, ptr %f.bound
  %total = load i64, ptr %f.total
  %chunk = load i64, ptr %f.chunk
  br label %claim
claim:
  %first = call i64 @claim_run(ptr %f.next, i64 %chunk, i64 %total, ptr %end_slot)
  %more = icmp ult i64 %first, %total
  br i1 %more, label %run, label %done
run:
  %end = load i64, ptr %end_slot
  %last = icmp eq i64 %end, %total
  %lo_off = mul i64 %first, %step
  %lo = add i64 %start, %lo_off
  %hi_off = mul i64 %end, %step
  %hi_mid = add i64 %start, %hi_off
  %hi = select i1 %last, i64 %bound, i64 %hi_mid
  store i64 %lo, ptr %args
  store i64 %hi, ptr %hi_slot
${if traced}  %trace.t0 = call i64 @now_ns()
  call i32 %body(ptr %state, ptr %args, ptr %env, ptr %trap) ; a chunk of a split loop, timed when traced
${if traced}  call void @trace_record(i64 ${TRACE_SPLIT}, i64 %lo, i64 %trace.t0, ptr %body, ptr null)
  br label %claim
done:
  call void @jv_fpu_set(i64 %saved)
  ret void
}

; Runs grid share %k of the posted dispatch; a failure's status is kept (a thread may take
; part twice, and its second pass, finding the grid stopped, must not overwrite the first).
define internal void @run_grid_share(ptr %pool, i64 %k) {
entry:
${fields Pool %pool f}
  %fn = load ptr, ptr %f.fn
  %ctx = load ptr, ptr %f.ctx
  %consts = load ptr, ptr %f.consts
  %bindings = load ptr, ptr %f.bindings
  %cx = load i32, ptr %f.cx
  %cy = load i32, ptr %f.cy
  %cz = load i32, ptr %f.cz
  %total = load i64, ptr %f.total
  %flush = load i64, ptr %f.flush
  %chunk = load i64, ptr %f.chunk
  %locals = load ptr, ptr %f.locals
  %pl = getelementptr ptr, ptr %locals, i64 %k
  %local = load ptr, ptr %pl
  %traps = load ptr, ptr %f.traps
  %pt = getelementptr ptr, ptr %traps, i64 %k
  %trap = load ptr, ptr %pt
  %failed = load ptr, ptr %f.failed
  %pf = getelementptr i64, ptr %failed, i64 %k
  %status = call i32 @jv_dispatch_worker(ptr %fn, ptr %ctx, ptr %local, ptr %consts, ptr %bindings,
      i32 %cx, i32 %cy, i32 %cz, ptr %f.next, i64 %total, ptr %f.stop, ptr %trap, ptr %pf, i64 %flush, i64 %chunk)
  %bad = icmp ne i32 %status, 0
  br i1 %bad, label %record, label %done
record:
  %statuses = load ptr, ptr %f.statuses
  %ps = getelementptr i32, ptr %statuses, i64 %k
  store i32 %status, ptr %ps
  br label %done
done:
  ret void
}

; A pool thread: parked until a dispatch is posted; it then enters through the gate (unless
; the caller has closed it: every workgroup is claimed, nothing is left to help with), runs
; its share if the dispatch has one for it (the job is read only inside the gate: a late
; thread may enter the next dispatch) and leaves. A thread that wakes late costs the caller nothing. Returns at shutdown.
define void @jv_pool_thread(ptr %pool, i64 %k, i32 %start) {
entry:
${fields Pool %pool f}
  %spin_ns = load i64, ptr %f.spin_ns
  br label %park
park:
  %seen = phi i32 [ %start, %entry ], [ %g, %enter ], [ %g, %left ], [ %g, %wake ]
  %g = call i32 @wait_change(ptr %f.generation, i32 %seen, ptr %f.generation_sleepers, i64 %spin_ns, ptr %f.linger)
  %down = load atomic i32, ptr %f.shutdown acquire, align 4
  %quit = icmp ne i32 %down, 0
  br i1 %quit, label %exit, label %enter
enter:
  %gate = load atomic i32, ptr %f.gate seq_cst, align 4
  %shut = and i32 %gate, ${GATE_CLOSED}
  %closed = icmp ne i32 %shut, 0
  br i1 %closed, label %park, label %try
try:
  %inside = add i32 %gate, 1
  %pair = cmpxchg ptr %f.gate, i32 %gate, i32 %inside seq_cst seq_cst
  %entered = extractvalue { i32, i1 } %pair, 1
  br i1 %entered, label %member, label %enter
member:
  %n = load atomic i32, ptr %f.threads acquire, align 4
  %n64 = zext i32 %n to i64
  %mine = icmp ult i64 %k, %n64
  br i1 %mine, label %work, label %leave
work:
  call void @run_share(ptr %pool, i64 %k)
  br label %leave
leave:
  %before = atomicrmw sub ptr %f.gate, i32 1 seq_cst
  %last = icmp eq i32 %before, ${GATE_LAST}
  br i1 %last, label %wake, label %left
left:
  br label %park
wake:
  call void @wake_all(ptr %f.gate, ptr %f.gate_sleepers)
  br label %park
exit:
  ret void
}

; Splits a loop over the pool (idle: its owner lent it to the dispatch running on this
; thread): iterations start, start + step, ... below bound, in chunks. Without a pool the
; calling thread runs them all.
define void @jv_parallel_for(ptr %pool, ptr %body, ptr %state, ptr %env, i64 %start, i64 %bound,
                             i64 %step, ptr %trap) {
entry:
  %alone = icmp eq ptr %pool, null
  br i1 %alone, label %serial, label %split
serial:
  call void @run_alone(ptr %body, ptr %state, ptr %env, i64 %start, i64 %bound, ptr %trap)
  ret void
split:
${fields Pool %pool f}
  %span = sub i64 %bound, 1
  %span2 = sub i64 %span, %start
  %more = udiv i64 %span2, %step
  %trips = add i64 %more, 1
  %shares = load i32, ptr %f.threads
  %shares64 = zext i32 %shares to i64
  %parts = mul i64 %shares64, ${RUNS_PER_SHARE}
  %chunk0 = udiv i64 %trips, %parts
  %small = icmp eq i64 %chunk0, 0
  %chunk = select i1 %small, i64 1, i64 %chunk0
  %splits = load i64, ptr %f.splits
  %splits1 = add i64 %splits, 1
  store i64 %splits1, ptr %f.splits
  store i32 1, ptr %f.kind
  store ptr %body, ptr %f.body
  store ptr %state, ptr %f.state
  store ptr %env, ptr %f.env
  store ptr %trap, ptr %f.loop_trap
  store i64 %start, ptr %f.start
  store i64 %step, ptr %f.step
  store i64 %bound, ptr %f.bound
  store i64 0, ptr %f.next
  store i64 %trips, ptr %f.total
  store i64 %chunk, ptr %f.chunk
  call void @jv_pool_run(ptr %pool)
  store i32 0, ptr %f.kind
  ret void
}

; Posts the job in *%pool, runs share 0 on the calling thread, closes the gate (every
; workgroup or iteration is claimed when share 0 returns) and waits for the threads inside.
define void @jv_pool_run(ptr %pool) {
entry:
${fields Pool %pool f}
  %spin_ns = load i64, ptr %f.spin_ns
  store atomic i32 1, ptr %f.linger monotonic, align 4
  store atomic i32 0, ptr %f.gate seq_cst, align 4
  atomicrmw add ptr %f.generation, i32 1 seq_cst
  call void @wake_all(ptr %f.generation, ptr %f.generation_sleepers)
  call void @run_share(ptr %pool, i64 0)
  atomicrmw or ptr %f.gate, i32 ${GATE_CLOSED} seq_cst
  br label %check
check:
  %gate = load atomic i32, ptr %f.gate acquire, align 4
  %empty = icmp eq i32 %gate, ${GATE_CLOSED}
  br i1 %empty, label %out, label %wait
wait:
  call i32 @wait_change(ptr %f.gate, i32 %gate, ptr %f.gate_sleepers, i64 %spin_ns, ptr @always)
  br label %check
out:
  ret void
}

; Wakes parked threads without giving them work (the gate stays closed: they park again
; at once, spinning): a sequence of dispatches calls it first, so a thread asleep on its
; futex (a virtual CPU can take a millisecond to wake) is awake by the time work is posted.
; The caller holds the pool, so no job is running.
define void @jv_pool_warm(ptr %pool) {
entry:
${fields Pool %pool f}
  store atomic i32 1, ptr %f.linger monotonic, align 4
  store atomic i32 ${GATE_CLOSED}, ptr %f.gate seq_cst, align 4
  atomicrmw add ptr %f.generation, i32 1 seq_cst
  call void @wake_all(ptr %f.generation, ptr %f.generation_sleepers)
  ret void
}

; Sends waiting threads to sleep now rather than after their spin: the holder runs on its
; own thread from here (a serial step, the end of a sequence), and a spinning thread would
; only take a core from it and from the rest of a busy machine. The next post wakes them.
define void @jv_pool_rest(ptr %pool) {
entry:
${fields Pool %pool f}
  store atomic i32 0, ptr %f.linger monotonic, align 4
  ret void
}

; Wakes every thread for good.
define void @jv_pool_shutdown(ptr %pool) {
entry:
${fields Pool %pool f}
  store atomic i32 1, ptr %f.shutdown seq_cst, align 4
  atomicrmw add ptr %f.generation, i32 1 seq_cst
  call void @wake_all(ptr %f.generation, ptr %f.generation_sleepers)
  ret void
}
