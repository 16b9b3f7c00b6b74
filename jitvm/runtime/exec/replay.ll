; The sequence runner and its thread policy (runtime.exec.replay).
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)

; How many threads step %s runs on: the policy in this module's docstring.
define i32 @jv_choose_threads(ptr %seq, ptr %s, i64 %total) {
entry:
${fields Sequence %seq q}
${fields Step %s s}
  %threads = load i32, ptr %q.threads
  %t64 = zext i32 %threads to i64
  %few = icmp ult i64 %total, %t64
  %n64 = select i1 %few, i64 %total, i64 %t64
  %n = trunc i64 %n64 to i32
  %force = load i32, ptr %q.force
  %forced = icmp ne i32 %force, 0
  br i1 %forced, label %use_force, label %policy
use_force:
  %f64 = zext i32 %force to i64
  %fsmall = icmp ult i64 %total, %f64
  %fn64 = select i1 %fsmall, i64 %total, i64 %f64
  %fn = trunc i64 %fn64 to i32
  ret i32 %fn
policy:
  %single = icmp ule i32 %n, 1
  br i1 %single, label %all, label %count
count:
  %cost = load ptr, ptr %s.cost
  %runs0 = load i64, ptr %cost
  %runs = add i64 %runs0, 1
  store i64 %runs, ptr %cost
  %first = icmp eq i64 %runs, 1
  br i1 %first, label %all, label %counted
counted:
  %pone = getelementptr inbounds i8, ptr %cost, i64 ${Cost.has_one}
  %has_one = load i32, ptr %pone
  %no_one = icmp eq i32 %has_one, 0
  br i1 %no_one, label %alone, label %one_known
one_known:
  %c1p = getelementptr inbounds i8, ptr %cost, i64 ${Cost.one}
  %c1 = load double, ptr %c1p
  %total_f = uitofp i64 %total to double
  %grid_s = fmul double %c1, %total_f
  %small = fcmp olt double %grid_s, ${SMALL_GRID_S}
  br i1 %small, label %alone, label %many_known
many_known:
  %pmany = getelementptr inbounds i8, ptr %cost, i64 ${Cost.has_many}
  %has_many = load i32, ptr %pmany
  %no_many = icmp eq i32 %has_many, 0
  br i1 %no_many, label %all, label %compare
compare:
  %cnp = getelementptr inbounds i8, ptr %cost, i64 ${Cost.many}
  %cn = load double, ptr %cnp
  %margin = fmul double %cn, ${PARALLEL_MARGIN}
  %serial_wins = fcmp olt double %c1, %margin
  %best = select i1 %serial_wins, i32 1, i32 %n
  %pnext = getelementptr inbounds i8, ptr %cost, i64 ${Cost.next_probe}
  %next = load i64, ptr %pnext
  %pinterval = getelementptr inbounds i8, ptr %cost, i64 ${Cost.interval}
  %pbest = getelementptr inbounds i8, ptr %cost, i64 ${Cost.best}
  %unset = icmp eq i64 %next, 0
  br i1 %unset, label %schedule, label %due_check
schedule:
  %first_next = add i64 %runs, ${REPROBE}
  store i64 %first_next, ptr %pnext
  store i64 ${REPROBE}, ptr %pinterval
  store i32 %best, ptr %pbest
  ret i32 %best
due_check:
  %due = icmp uge i64 %runs, %next
  br i1 %due, label %reprobe, label %steady
steady:
  %was = load i32, ptr %pbest
  %flipped = icmp ne i32 %was, %best
  br i1 %flipped, label %flip, label %keep
flip:
  ; the way just dropped is measured again on the next run (one slow run, a core the VM
  ; took away for a moment, must not decide for the next REPROBE_MAX runs)
  store i32 %best, ptr %pbest
  store i64 ${REPROBE}, ptr %pinterval
  %soon = add i64 %runs, 1
  store i64 %soon, ptr %pnext
  ret i32 %best
keep:
  ret i32 %best
reprobe:
  %interval = load i64, ptr %pinterval
  %before = load i32, ptr %pbest
  %held = icmp eq i32 %before, %best
  %doubled = shl i64 %interval, 1
  %capped = icmp ugt i64 %doubled, ${REPROBE_MAX}
  %grown = select i1 %capped, i64 ${REPROBE_MAX}, i64 %doubled
  %new_interval = select i1 %held, i64 %grown, i64 ${REPROBE}
  store i64 %new_interval, ptr %pinterval
  %later = add i64 %runs, %new_interval
  store i64 %later, ptr %pnext
  store i32 %best, ptr %pbest
  %other = select i1 %serial_wins, i32 %n, i32 1
  ret i32 %other
all:
  ret i32 %n
alone:
  ret i32 1
}

; A run of at most %chunk workgroups that one thread finishes in about RUN_S, by the
; entry's measured time on one thread: a thread the machine gives little CPU (a busy core,
; a preempted share) holds up the others for at most its last run.
define internal i64 @timed_chunk(ptr %s, i64 %chunk) {
entry:
${fields Step %s s}
  %cost = load ptr, ptr %s.cost
  %pone = getelementptr inbounds i8, ptr %cost, i64 ${Cost.has_one}
  %has_one = load i32, ptr %pone
  %known = icmp ne i32 %has_one, 0
  br i1 %known, label %timed, label %keep
timed:
  %c1p = getelementptr inbounds i8, ptr %cost, i64 ${Cost.one}
  %c1 = load double, ptr %c1p
  %fits_f = fdiv double ${RUN_S}, %c1
  %fits_ok = fcmp olt double %fits_f, 1.0e18
  %fits_c = select i1 %fits_ok, double %fits_f, double 1.0e18
  %fits = fptoui double %fits_c to i64
  %shorter = icmp ult i64 %fits, %chunk
  %c = select i1 %shorter, i64 %fits, i64 %chunk
  ret i64 %c
keep:
  ret i64 %chunk
}

; Keeps an exponential average of seconds per workgroup for the way step %s ran.
define void @jv_record_cost(ptr %s, i32 %n, i64 %ns, i64 %total) {
entry:
${fields Step %s s}
  %cost = load ptr, ptr %s.cost
  %runs = load i64, ptr %cost
  %cold = icmp ule i64 %runs, 1
  %many = icmp ugt i32 %n, 1
  %skip = and i1 %cold, %many
  br i1 %skip, label %done, label %keep
keep:
  %nsf = uitofp i64 %ns to double
  %tf = uitofp i64 %total to double
  %per0 = fdiv double %nsf, %tf
  %per = fmul double %per0, 1.0e-9
  %voff = select i1 %many, i64 ${Cost.many}, i64 ${Cost.one}
  %hoff = select i1 %many, i64 ${Cost.has_many}, i64 ${Cost.has_one}
  %pv = getelementptr inbounds i8, ptr %cost, i64 %voff
  %ph = getelementptr inbounds i8, ptr %cost, i64 %hoff
  %has = load i32, ptr %ph
  %old = load double, ptr %pv
  ; the bound: twice the larger of this way's and the other way's average (a real change of
  ; cost, a grid grown a thousandfold, is then believed in a run or two, not ten)
  %ooff = select i1 %many, i64 ${Cost.one}, i64 ${Cost.many}
  %po = getelementptr inbounds i8, ptr %cost, i64 %ooff
  %other = load double, ptr %po
  %other_larger = fcmp ogt double %other, %old
  %larger = select i1 %other_larger, double %other, double %old
  %twice = fmul double %larger, 2.0
  %jump = fcmp ogt double %per, %twice
  %sample = select i1 %jump, double %twice, double %per
  %part_old = fmul double %old, 2.5e-01
  %part_new = fmul double %sample, 7.5e-01
  %mixed = fadd double %part_old, %part_new
  %seen = icmp ne i32 %has, 0
  %value = select i1 %seen, double %mixed, double %per
  store double %value, ptr %pv
  store i32 1, ptr %ph
  br label %done
done:
  ret void
}

; Where view %v points in this run: bases[slot] + offset, or offset itself for slot -1.
define internal ptr @view_address(ptr %v, ptr %bases) {
entry:
  %pslot = getelementptr inbounds i8, ptr %v, i64 ${View.slot}
  %slot = load i64, ptr %pslot
  %poff = getelementptr inbounds i8, ptr %v, i64 ${View.offset}
  %off = load i64, ptr %poff
  %direct = icmp slt i64 %slot, 0
  br i1 %direct, label %absolute, label %relative
absolute:
  %at = inttoptr i64 %off to ptr
  ret ptr %at
relative:
  %pbase = getelementptr inbounds i64, ptr %bases, i64 %slot
  %base = load i64, ptr %pbase
  %addr = add i64 %base, %off
  %data = inttoptr i64 %addr to ptr
  ret ptr %data
}

; Points step %s's views into this run's buffers (a library step's: its binding pointers).
define internal void @point_views(ptr %s, ptr %bases) {
entry:
${fields Step %s s}
  %views = load ptr, ptr %s.views
  %count = load i64, ptr %s.view_count
  %library32 = load i32, ptr %s.library
  %library = icmp ne i32 %library32, 0
  %none = icmp eq i64 %count, 0
  br i1 %none, label %done, label %loop
loop:
  %j = phi i64 [ 0, %entry ], [ %j1, %next ]
  %j.off = mul i64 %j, ${sizeof View}
  %v = getelementptr inbounds i8, ptr %views, i64 %j.off
  %obj = load ptr, ptr %v
  %data = call ptr @view_address(ptr %v, ptr %bases)
  br i1 %library, label %pointer, label %buffer
pointer:
  store ptr %data, ptr %obj
  br label %next
buffer:
  %plen = getelementptr inbounds i8, ptr %v, i64 ${View.length}
  %len = load i64, ptr %plen
  %pacc = getelementptr inbounds i8, ptr %v, i64 ${View.access}
  %acc = load i32, ptr %pacc
  %od = getelementptr inbounds i8, ptr %obj, i64 ${Buffer.data}
  store ptr %data, ptr %od
  %ol = getelementptr inbounds i8, ptr %obj, i64 ${Buffer.length}
  store i64 %len, ptr %ol
  %oa = getelementptr inbounds i8, ptr %obj, i64 ${Buffer.access}
  store i32 %acc, ptr %oa
  br label %next
next:
  %j1 = add i64 %j, 1
  %more = icmp ult i64 %j1, %count
  br i1 %more, label %loop, label %done
done:
  ret void
}

; Whether the kernel of step %s left its arguments as it got them (DispatchArgs' rule): one
; reference to the list and the local memory (the step's), VIEW_REFS to each view (its
; wrapper's and the list's), and the list still holding exactly the views.
define internal i1 @untouched(ptr %s) {
entry:
${fields Step %s s}
  %list = load ptr, ptr %s.bindings
  %local = load ptr, ptr %s.local
  %views = load ptr, ptr %s.views
  %count = load i64, ptr %s.view_count
  %lrc.p = getelementptr inbounds i8, ptr %list, i64 ${Object.refcount}
  %lrc = load i64, ptr %lrc.p
  %mrc.p = getelementptr inbounds i8, ptr %local, i64 ${Object.refcount}
  %mrc = load i64, ptr %mrc.p
  %size.p = getelementptr inbounds i8, ptr %list, i64 ${List.size}
  %size32 = load i32, ptr %size.p
  %size = zext i32 %size32 to i64
  %storage.p = getelementptr inbounds i8, ptr %list, i64 ${List.storage}
  %storage = load ptr, ptr %storage.p
  %ok1 = icmp eq i64 %lrc, 1
  %ok2 = icmp eq i64 %mrc, 1
  %ok3 = icmp eq i64 %size, %count
  %ok12 = and i1 %ok1, %ok2
  %ok = and i1 %ok12, %ok3
  %none = icmp eq i64 %count, 0
  br i1 %ok, label %check, label %no
check:
  br i1 %none, label %yes, label %loop
loop:
  %j = phi i64 [ 0, %check ], [ %j1, %next ]
  %j.off = mul i64 %j, ${sizeof View}
  %v = getelementptr inbounds i8, ptr %views, i64 %j.off
  %obj = load ptr, ptr %v
  %rc.p = getelementptr inbounds i8, ptr %obj, i64 ${Object.refcount}
  %rc = load i64, ptr %rc.p
  %held.p = getelementptr inbounds ptr, ptr %storage, i64 %j
  %held = load ptr, ptr %held.p
  %same = icmp eq ptr %held, %obj
  %two = icmp eq i64 %rc, ${VIEW_REFS}
  %fine = and i1 %same, %two
  br i1 %fine, label %next, label %no
next:
  %j1 = add i64 %j, 1
  %more = icmp ult i64 %j1, %count
  br i1 %more, label %loop, label %yes
yes:
  ret i1 1
no:
  ret i1 0
}

; Fills step %s's range (its one view: slot, offset, length) with its pattern.
define internal void @fill_step(ptr %s, ptr %bases) {
entry:
${fields Step %s s}
  %v = load ptr, ptr %s.views
  %dst = call ptr @view_address(ptr %v, ptr %bases)
  %plen = getelementptr inbounds i8, ptr %v, i64 ${View.length}
  %len = load i64, ptr %plen
  %pattern = load i64, ptr %s.pattern
  %width = load i32, ptr %s.fill_width
  switch i32 %width, label %w1 [ i32 2, label %w2  i32 4, label %w4  i32 8, label %w8 ]
w1:
  %byte = trunc i64 %pattern to i8
  call void @llvm.memset.p0.i64(ptr %dst, i8 %byte, i64 %len, i1 false)
  ret void
${fill_loops}

}

; Runs step %s; nonzero: a share failed (the sequence's statuses and failed words say which).
define internal i32 @run_step(ptr %seq, ptr %s, ptr %bases, ptr %pool) {
entry:
${fields Sequence %seq q}
${fields Step %s s}
  %counter = alloca i64, align 8
  %stop = alloca i32, align 4
  %width = load i32, ptr %s.fill_width
  %is_fill = icmp ne i32 %width, 0
  br i1 %is_fill, label %fill, label %dispatch
fill:
  call void @fill_step(ptr %s, ptr %bases)
  ret i32 0
dispatch:
  store i32 0, ptr %s.ran_on
  %total = load i64, ptr %s.total
  %empty = icmp eq i64 %total, 0
  br i1 %empty, label %nothing, label %prepare
nothing:
  ret i32 0
prepare:
  %owned32 = load i32, ptr %s.owned
  %owned = icmp ne i32 %owned32, 0
  %local_size = load i64, ptr %s.local_size
  %local_data = load ptr, ptr %s.local_data
  br i1 %owned, label %own, label %choose
own:
  call void @point_views(ptr %s, ptr %bases)
  call void @llvm.memset.p0.i64(ptr %local_data, i8 0, i64 %local_size, i1 false)
  br label %choose
choose:
  %chosen = call i32 @jv_choose_threads(ptr %seq, ptr %s, i64 %total)
  %sequential32 = load i32, ptr %s.sequential
  %sequential = icmp ne i32 %sequential32, 0
  %wanted = select i1 %sequential, i32 1, i32 %chosen
  %pooled = icmp ne ptr %pool, null
  %multi = icmp ugt i32 %wanted, 1
  %parallel = and i1 %pooled, %multi
  %n = select i1 %parallel, i32 %wanted, i32 1
  %library32 = load i32, ptr %s.library
  %library = icmp ne i32 %library32, 0
  br i1 %library, label %concurrency, label %load_step
concurrency:
  ; a library's dispatch state says how many workgroups may run at once (IREE's
  ; max_concurrency: 1 on local-sync, the worker count on local-task)
  %call = load ptr, ptr %s.ctx
  %pmax = getelementptr inbounds i8, ptr %call, i64 ${LibraryCall.state}
  %pmax1 = getelementptr inbounds i8, ptr %pmax, i64 ${ExeDispatchState.max_concurrency}
  %wide = icmp ugt i32 %n, 255
  %nmax = select i1 %wide, i32 255, i32 %n
  %n8 = trunc i32 %nmax to i8
  store i8 %n8, ptr %pmax1
  br label %load_step
load_step:
  %fn = load ptr, ptr %s.fn
  %ctx = load ptr, ptr %s.ctx
  %consts = load ptr, ptr %s.consts
  %bindings = load ptr, ptr %s.bindings
  %local = load ptr, ptr %s.local
  %cx = load i32, ptr %s.cx
  %cy = load i32, ptr %s.cy
  %cz = load i32, ptr %s.cz
  %flush = load i64, ptr %q.flush
  %traps = load ptr, ptr %q.traps
  %failed = load ptr, ptr %q.failed
  %statuses = load ptr, ptr %q.statuses
  %t0 = call i64 @now_ns()
  br i1 %parallel, label %post, label %serial
post:
${fields Pool %pool f}
  %locals = load ptr, ptr %q.locals
  store ptr %local, ptr %locals
  %helpers = load ptr, ptr %s.helper_locals
  %helper_data = load ptr, ptr %s.helper_data
  %n64 = zext i32 %n to i64
  br label %share
share:
  %k = phi i64 [ 0, %post ], [ %k1, %share_next ]
  %pf = getelementptr inbounds i64, ptr %failed, i64 %k
  store i64 0, ptr %pf
  %ps = getelementptr inbounds i32, ptr %statuses, i64 %k
  store i32 0, ptr %ps
  %is_helper = icmp ugt i64 %k, 0
  br i1 %is_helper, label %helper, label %share_next
helper:
  %h = sub i64 %k, 1
  %ph = getelementptr inbounds ptr, ptr %helpers, i64 %h
  %hl = load ptr, ptr %ph
  %phd = getelementptr inbounds ptr, ptr %helper_data, i64 %h
  %hd = load ptr, ptr %phd
  call void @llvm.memset.p0.i64(ptr %hd, i8 0, i64 %local_size, i1 false)
  %pl = getelementptr inbounds ptr, ptr %locals, i64 %k
  store ptr %hl, ptr %pl
  br label %share_next
share_next:
  %k1 = add i64 %k, 1
  %more_shares = icmp ult i64 %k1, %n64
  br i1 %more_shares, label %share, label %posted
posted:
  store i32 1, ptr %q.used_pool
  %parts = mul i64 %n64, ${RUNS_PER_THREAD}
  %chunk0 = udiv i64 %total, %parts
  %chunk_t = call i64 @timed_chunk(ptr %s, i64 %chunk0)
  %tiny = icmp eq i64 %chunk_t, 0
  %chunk = select i1 %tiny, i64 1, i64 %chunk_t
  store ptr %fn, ptr %f.fn
  store ptr %ctx, ptr %f.ctx
  store ptr %consts, ptr %f.consts
  store ptr %bindings, ptr %f.bindings
  store i32 %cx, ptr %f.cx
  store i32 %cy, ptr %f.cy
  store i32 %cz, ptr %f.cz
  store i32 0, ptr %f.stop
  store i64 0, ptr %f.next
  store i64 %total, ptr %f.total
  store i64 %flush, ptr %f.flush
  store i64 %chunk, ptr %f.chunk
  store i32 %n, ptr %f.threads
  store i32 0, ptr %f.kind
  store ptr %locals, ptr %f.locals
  store ptr %traps, ptr %f.traps
  store ptr %failed, ptr %f.failed
  store ptr %statuses, ptr %f.statuses
  call void @jv_pool_run(ptr %pool)
  br label %gather
gather:
  %g = phi i64 [ 0, %posted ], [ %g1, %gather_next ]
  %bad = phi i32 [ 0, %posted ], [ %bad1, %gather_next ]
  %pgs = getelementptr inbounds i32, ptr %statuses, i64 %g
  %gs = load i32, ptr %pgs
  %bad1 = or i32 %bad, %gs
  br label %gather_next
gather_next:
  %g1 = add i64 %g, 1
  %more_g = icmp ult i64 %g1, %n64
  br i1 %more_g, label %gather, label %ran
serial:
  %trap0 = load ptr, ptr %traps
  %lend = icmp ne ptr %pool, null
  %threads = load i32, ptr %q.threads
  br i1 %lend, label %lent, label %walk
lent:
${fields Pool %pool lf}
  call void @jv_pool_rest(ptr %pool)
  store i32 %threads, ptr %lf.threads
  store i64 %flush, ptr %lf.flush
  %tp = getelementptr inbounds i8, ptr %trap0, i64 ${Trap.pool}
  store ptr %pool, ptr %tp
  br label %walk
walk:
  store i64 0, ptr %counter
  store i32 0, ptr %stop
  store i64 0, ptr %failed
  %st = call i32 @jv_dispatch_worker(ptr %fn, ptr %ctx, ptr %local, ptr %consts, ptr %bindings,
      i32 %cx, i32 %cy, i32 %cz, ptr %counter, i64 %total, ptr %stop, ptr %trap0, ptr %failed, i64 %flush, i64 %total)
  store i32 %st, ptr %statuses
  %tp2 = getelementptr inbounds i8, ptr %trap0, i64 ${Trap.pool}
  store ptr null, ptr %tp2
  br label %ran
ran:
  %status = phi i32 [ %bad1, %gather_next ], [ %st, %walk ]
  %t1 = call i64 @now_ns()
  store i32 %n, ptr %q.last_threads
  store i32 %n, ptr %s.ran_on
  %ok = icmp eq i32 %status, 0
  br i1 %ok, label %measured, label %checked
measured:
  %ns = sub i64 %t1, %t0
  call void @jv_record_cost(ptr %s, i32 %n, i64 %ns, i64 %total)
  br label %checked
checked:
  %not_library = xor i1 %library, true
  %vm_args = and i1 %owned, %not_library
  br i1 %vm_args, label %check, label %out
check:
  %clean = call i1 @untouched(ptr %s)
  br i1 %clean, label %out, label %mark
mark:
  store i32 1, ptr %s.touched
  %touched = load i32, ptr %q.touched
  %touched1 = add i32 %touched, 1
  store i32 %touched1, ptr %q.touched
  br label %out
out:
  ret i32 %status
}

; Runs the sequence's steps in order until one fails (its index in failed_step), waking
; the pool's parked threads first when there are several steps (one step posts at once).
define i32 @jv_run_steps(ptr %seq, ptr %bases, ptr %pool) {
entry:
${fields Sequence %seq q}
  %steps = load ptr, ptr %q.steps
  %count = load i64, ptr %q.count
  store i32 0, ptr %q.touched
  %pooled = icmp ne ptr %pool, null
  %several = icmp ugt i64 %count, 1
  %warm_on = load i32, ptr %q.warm
  %warm_wanted = icmp ne i32 %warm_on, 0
  %used = load i32, ptr %q.used_pool
  %used_last = icmp ne i32 %used, 0
  store i32 0, ptr %q.used_pool
  %wake0 = and i1 %pooled, %several
  %wake1 = and i1 %wake0, %warm_wanted
  %wake = and i1 %wake1, %used_last
${fields Pool %pool f}
  br i1 %pooled, label %count_splits, label %decide
count_splits:
  %splits_before = load i64, ptr %f.splits
  br label %decide
decide:
  %splits0 = phi i64 [ 0, %entry ], [ %splits_before, %count_splits ]
  br i1 %wake, label %warm, label %start
warm:
  call void @jv_pool_warm(ptr %pool)
  br label %start
start:
  %none = icmp eq i64 %count, 0
  br i1 %none, label %done, label %loop
loop:
  %i = phi i64 [ 0, %start ], [ %i1, %next ]
  %off = mul i64 %i, ${sizeof Step}
  %s = getelementptr inbounds i8, ptr %steps, i64 %off
  %status = call i32 @run_step(ptr %seq, ptr %s, ptr %bases, ptr %pool)
  %ok = icmp eq i32 %status, 0
  br i1 %ok, label %next, label %fail
next:
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %count
  br i1 %more, label %loop, label %done
fail:
  store i64 %i, ptr %q.failed_step
  br i1 %pooled, label %rest_failed, label %failed
rest_failed:
  call void @jv_pool_rest(ptr %pool)
  br label %failed
failed:
  ret i32 %status
done:
  br i1 %pooled, label %split_check, label %finish
split_check:
  call void @jv_pool_rest(ptr %pool)
  %splits_after = load i64, ptr %f.splits
  %split_some = icmp ne i64 %splits_after, %splits0
  br i1 %split_some, label %split_seen, label %finish
split_seen:
  store i32 1, ptr %q.used_pool
  br label %finish
finish:
  ret i32 0
}

; --- holding the pool, running a sequence on a runner ---------------------------------------

; Takes %pool for the calling thread (1) or finds it held (0): never waits.
define i32 @jv_pool_try_hold(ptr %pool) {
entry:
  %p = getelementptr inbounds i8, ptr %pool, i64 ${Pool.holder}
  %r = cmpxchg ptr %p, i32 0, i32 1 acquire monotonic
  %got = extractvalue { i32, i1 } %r, 1
  %g = zext i1 %got to i32
  ret i32 %g
}

define void @jv_pool_release(ptr %pool) {
entry:
  %p = getelementptr inbounds i8, ptr %pool, i64 ${Pool.holder}
  store atomic i32 0, ptr %p release, align 4
  ret void
}

; Runs sequence %seq of runner %runner with the table slots' bases %bases: with the runner's
; pool held, or on the calling thread alone when another holds it. Nonzero: a step failed
; (runtime.exec.runner turns the per-share records into the exception).
define i32 @jv_run_sequence(ptr %runner, ptr %seq, ptr %bases) {
entry:
${fields Runner %runner r}
${fields Sequence %seq q}
  %pool = load ptr, ptr %r.pool
  %has_pool = icmp ne ptr %pool, null
  br i1 %has_pool, label %try, label %run
try:
  %got = call i32 @jv_pool_try_hold(ptr %pool)
  %held_it = icmp ne i32 %got, 0
  %held_pool = select i1 %held_it, ptr %pool, ptr null
  br label %run
run:
  %held = phi ptr [ null, %entry ], [ %held_pool, %try ]
  %force = load i32, ptr %r.force
  store i32 %force, ptr %q.force
  %warm = load i32, ptr %r.warm
  store i32 %warm, ptr %q.warm
  %status = call i32 @jv_run_steps(ptr %seq, ptr %bases, ptr %held)
  %release = icmp ne ptr %held, null
  br i1 %release, label %give_back, label %done
give_back:
  call void @jv_pool_release(ptr %held)
  br label %done
done:
  %last = load i32, ptr %q.last_threads
  store i32 %last, ptr %r.last_threads
  ret i32 %status
}
