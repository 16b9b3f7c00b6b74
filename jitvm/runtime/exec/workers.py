"""Native code that walks a dispatch's workgroup grid, on a pool of native threads.

`jv_dispatch_worker` claims runs of consecutive workgroup indices from a shared atomic
counter (in increasing order; a run rather than one index, so neighbouring workgroups, which
write neighbouring memory, stay on one core), builds the VMVX entry arguments and calls the
compiled entry function, with the CPU's flush-to-zero mode on as IREE runs dispatches.

`NativePool` keeps threads parked in native code between dispatches: a dispatch is posted
by bumping a generation word and the calling thread takes share 0 itself. Pool threads
enter through a gate; when share 0 returns every workgroup has been claimed, so the caller
closes the gate and waits only for the threads inside: a thread that wakes late (a virtual
CPU can take a millisecond) costs nothing. Waiting spins for a short while (dispatches of
one model call follow each other within tens of microseconds) and then sleeps on a futex,
so an idle pool costs nothing. No Python, no GIL and no Python thread switch is involved
per dispatch: on a small grid those cost more than the work.
"""

from __future__ import annotations

import ctypes
import platform
import threading
import weakref

import llvmlite.binding as llvm

from . import fpu
from ..vm.nativelib import initialize_llvm
from ..vm.objects import VmBuffer
from ..native import target as targets
from . import trace

_GRID_IR = """
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
  call i32 %body(ptr %state, ptr %args, ptr %env, ptr %trap) ; traced 1 %start %body
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
  %status = call i32 %fn(ptr %ctx, ptr %args, ptr %results, ptr %trap) ; traced 0 %i %fn
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
"""


class PoolT(ctypes.Structure):
    """The words a pool's threads share: wake-up and completion, then the posted dispatch."""

    _fields_ = [
        # First: split-loop guards read it branch-free (lower.loops.parallel): innermost iterations
        # below which a loop nest is not split across the pool.
        ("split_min_work", ctypes.c_uint64),
        ("splits", ctypes.c_uint64),  # loops split so far (a statistic)
        ("generation", ctypes.c_uint32), ("generation_sleepers", ctypes.c_uint32),
        ("gate", ctypes.c_uint32), ("gate_sleepers", ctypes.c_uint32),  # threads inside | closed
        ("shutdown", ctypes.c_uint32), ("threads", ctypes.c_uint32),  # shares in the posted dispatch
        ("spin_ns", ctypes.c_uint64),
        ("fn", ctypes.c_void_p), ("ctx", ctypes.c_void_p), ("consts", ctypes.c_void_p),
        ("bindings", ctypes.c_void_p),
        ("cx", ctypes.c_uint32), ("cy", ctypes.c_uint32), ("cz", ctypes.c_uint32), ("stop", ctypes.c_int32),
        ("next", ctypes.c_uint64), ("total", ctypes.c_uint64), ("flush", ctypes.c_uint64),
        ("chunk", ctypes.c_uint64),
        ("locals", ctypes.c_void_p), ("traps", ctypes.c_void_p),  # per share: ptr arrays
        ("failed", ctypes.c_void_p), ("statuses", ctypes.c_void_p),  # per share: u64 and i32 arrays
        # A split loop (kind 1) instead of a grid (kind 0): body(state, [lo, hi], env, trap)
        # over iterations start + i * step, i < total, the last chunk ending at bound.
        ("kind", ctypes.c_uint32), ("_pad3", ctypes.c_uint32),
        ("body", ctypes.c_void_p), ("state", ctypes.c_void_p), ("env", ctypes.c_void_p),
        ("loop_trap", ctypes.c_void_p),
        ("start", ctypes.c_int64), ("step", ctypes.c_int64), ("bound", ctypes.c_int64),
    ]


# futex(2) through syscall(2): the system call number per host architecture, and the pause
# hint a spinning core gives its sibling.
_FUTEX = {"x86_64": 202, "AMD64": 202, "aarch64": 98, "arm64": 98}
_PAUSE = {"x86_64": ("declare void @llvm.x86.sse2.pause()", "call void @llvm.x86.sse2.pause()"),
          "aarch64": ("declare void @llvm.aarch64.hint(i32)", "call void @llvm.aarch64.hint(i32 1)")}
FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE = 128, 129
GATE_CLOSED = 1 << 30  # the gate word's flag; below it, how many threads are inside
SPIN_NS = 300_000  # how long a waiter spins before it sleeps
# Innermost iterations below which a loop nest stays on one thread: waking the pool costs
# tens of microseconds (a 56x56x64 depthwise 3x3 convolution, 1.8 M, ran slower split).
SPLIT_MIN_WORK = 1 << 22


def _pool_ir(futex: int, pause: tuple[str, str]) -> str:
    RUNS_PER_SHARE = 4  # noqa: N806 (a split loop is claimed in about this many chunks per thread)
    GATE_LAST = GATE_CLOSED + 1  # noqa: N806 (the value before the last thread inside leaves)
    fields = pool_fields("pool", "f")
    return f"""
{pause[0]}
declare i64 @syscall(i64, ...)

; Waits until *%word differs from %old and returns it: spins for %spin_ns, then sleeps on
; the futex (counted in *%sleepers, so a waker knows it must make the system call).
define internal i32 @wait_change(ptr %word, i32 %old, ptr %sleepers, i64 %spin_ns) {{
entry:
  %t0 = call i64 @now_ns()
  br label %spin
spin:
  %i = phi i64 [ 0, %entry ], [ %i1, %pause ], [ %i1, %clock ]
  %v = load atomic i32, ptr %word acquire, align 4
  %changed = icmp ne i32 %v, %old
  br i1 %changed, label %out, label %pause
pause:
  {pause[1]}
  %i1 = add i64 %i, 1
  %low = and i64 %i1, 63
  %look = icmp eq i64 %low, 0
  br i1 %look, label %clock, label %spin
clock:
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
  call i64 (i64, ...) @syscall(i64 {futex}, ptr %word, i32 {FUTEX_WAIT_PRIVATE}, i32 %old, ptr null)
  br label %recheck
woke:
  atomicrmw sub ptr %sleepers, i32 1 seq_cst
  br label %out
out:
  %r = phi i32 [ %v, %spin ], [ %v2, %woke ]
  ret i32 %r
}}

define internal void @wake_all(ptr %word, ptr %sleepers) {{
entry:
  %n = load atomic i32, ptr %sleepers seq_cst, align 4
  %any = icmp ne i32 %n, 0
  br i1 %any, label %wake, label %done
wake:
  call i64 (i64, ...) @syscall(i64 {futex}, ptr %word, i32 {FUTEX_WAKE_PRIVATE}, i32 2147483647)
  br label %done
done:
  ret void
}}

; Runs share %k of the posted job: a grid or a split loop.
define internal void @run_share(ptr %pool, i64 %k) {{
entry:
{fields}
  %kind = load i32, ptr %f.kind
  %is_loop = icmp eq i32 %kind, 1
  br i1 %is_loop, label %loop, label %grid
loop:
  call void @run_loop_share(ptr %pool)
  ret void
grid:
  call void @run_grid_share(ptr %pool, i64 %k)
  ret void
}}

; Claims chunks of the split loop's iterations until none are left (the body cannot trap:
; lower.loops.parallel only splits loops of pure arithmetic and proven buffer accesses).
define internal void @run_loop_share(ptr %pool) {{
entry:
{fields}
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
  call i32 %body(ptr %state, ptr %args, ptr %env, ptr %trap) ; traced 1 %lo %body
  br label %claim
done:
  call void @jv_fpu_set(i64 %saved)
  ret void
}}

; Runs grid share %k of the posted dispatch; a failure's status is kept (a thread may take
; part twice, and its second pass, finding the grid stopped, must not overwrite the first).
define internal void @run_grid_share(ptr %pool, i64 %k) {{
entry:
{fields}
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
}}

; A pool thread: parked until a dispatch is posted; it then enters through the gate (unless
; the caller has closed it: every workgroup is claimed, nothing is left to help with), runs
; its share if the dispatch has one for it (the job is read only inside the gate: a late
; thread may enter the next dispatch) and leaves. A thread that wakes late costs the caller nothing. Returns at shutdown.
define void @jv_pool_thread(ptr %pool, i64 %k, i32 %start) {{
entry:
{fields}
  %spin_ns = load i64, ptr %f.spin_ns
  br label %park
park:
  %seen = phi i32 [ %start, %entry ], [ %g, %enter ], [ %g, %left ], [ %g, %wake ]
  %g = call i32 @wait_change(ptr %f.generation, i32 %seen, ptr %f.generation_sleepers, i64 %spin_ns)
  %down = load atomic i32, ptr %f.shutdown acquire, align 4
  %quit = icmp ne i32 %down, 0
  br i1 %quit, label %exit, label %enter
enter:
  %gate = load atomic i32, ptr %f.gate seq_cst, align 4
  %shut = and i32 %gate, {GATE_CLOSED}
  %closed = icmp ne i32 %shut, 0
  br i1 %closed, label %park, label %try
try:
  %inside = add i32 %gate, 1
  %pair = cmpxchg ptr %f.gate, i32 %gate, i32 %inside seq_cst seq_cst
  %entered = extractvalue {{ i32, i1 }} %pair, 1
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
  %last = icmp eq i32 %before, {GATE_LAST}
  br i1 %last, label %wake, label %left
left:
  br label %park
wake:
  call void @wake_all(ptr %f.gate, ptr %f.gate_sleepers)
  br label %park
exit:
  ret void
}}

; Splits a loop over the pool (idle: its owner lent it to the dispatch running on this
; thread): iterations start, start + step, ... below bound, in chunks. Without a pool the
; calling thread runs them all.
define void @jv_parallel_for(ptr %pool, ptr %body, ptr %state, ptr %env, i64 %start, i64 %bound,
                             i64 %step, ptr %trap) {{
entry:
  %alone = icmp eq ptr %pool, null
  br i1 %alone, label %serial, label %split
serial:
  call void @run_alone(ptr %body, ptr %state, ptr %env, i64 %start, i64 %bound, ptr %trap)
  ret void
split:
{fields}
  %span = sub i64 %bound, 1
  %span2 = sub i64 %span, %start
  %more = udiv i64 %span2, %step
  %trips = add i64 %more, 1
  %shares = load i32, ptr %f.threads
  %shares64 = zext i32 %shares to i64
  %parts = mul i64 %shares64, {RUNS_PER_SHARE}
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
}}

; Posts the job in *%pool, runs share 0 on the calling thread, closes the gate (every
; workgroup or iteration is claimed when share 0 returns) and waits for the threads inside.
define void @jv_pool_run(ptr %pool) {{
entry:
{fields}
  %spin_ns = load i64, ptr %f.spin_ns
  store atomic i32 0, ptr %f.gate seq_cst, align 4
  atomicrmw add ptr %f.generation, i32 1 seq_cst
  call void @wake_all(ptr %f.generation, ptr %f.generation_sleepers)
  call void @run_share(ptr %pool, i64 0)
  atomicrmw or ptr %f.gate, i32 {GATE_CLOSED} seq_cst
  br label %check
check:
  %gate = load atomic i32, ptr %f.gate acquire, align 4
  %empty = icmp eq i32 %gate, {GATE_CLOSED}
  br i1 %empty, label %out, label %wait
wait:
  call i32 @wait_change(ptr %f.gate, i32 %gate, ptr %f.gate_sleepers, i64 %spin_ns)
  br label %check
out:
  ret void
}}

; Wakes parked threads without giving them work (the gate stays closed: they park again
; at once, spinning): a sequence of dispatches calls it first, so a thread asleep on its
; futex (a virtual CPU can take a millisecond to wake) is awake by the time work is posted.
; The caller holds the pool, so no job is running.
define void @jv_pool_warm(ptr %pool) {{
entry:
{fields}
  store atomic i32 {GATE_CLOSED}, ptr %f.gate seq_cst, align 4
  atomicrmw add ptr %f.generation, i32 1 seq_cst
  call void @wake_all(ptr %f.generation, ptr %f.generation_sleepers)
  ret void
}}

; Wakes every thread for good.
define void @jv_pool_shutdown(ptr %pool) {{
entry:
{fields}
  store atomic i32 1, ptr %f.shutdown seq_cst, align 4
  atomicrmw add ptr %f.generation, i32 1 seq_cst
  call void @wake_all(ptr %f.generation, ptr %f.generation_sleepers)
  ret void
}}
"""


# Without a pool (hosts without futex support here) no invocation is lent one and no
# sequence posts one, so split loops and pool runs are never entered; the symbols still link.
_SERIAL_SPLIT_IR = """
define void @jv_parallel_for(ptr %pool, ptr %body, ptr %state, ptr %env, i64 %start, i64 %bound,
                             i64 %step, ptr %trap) {
entry:
  call void @run_alone(ptr %body, ptr %state, ptr %env, i64 %start, i64 %bound, ptr %trap)
  ret void
}

define void @jv_pool_run(ptr %pool) {
entry:
  ret void
}

define void @jv_pool_warm(ptr %pool) {
entry:
  ret void
}
"""


def struct_fields(struct, var: str, prefix: str) -> str:
    """IR getting a pointer %<prefix>.<field> to every field of the ctypes `struct` at %var
    (padding fields, named _*, excepted)."""
    return "\n".join(f"  %{prefix}.{name} = getelementptr inbounds i8, ptr %{var}, i64 {getattr(struct, name).offset}"
                     for name, _ in struct._fields_ if not name.startswith("_"))


def pool_fields(var: str, prefix: str) -> str:
    """struct_fields of the pool state (PoolT) at %var."""
    return struct_fields(PoolT, var, prefix)

GRID_WORKER = ctypes.CFUNCTYPE(
    ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
    ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p,
    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64)
_POOL_THREAD = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32)
RUN_STEPS = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
_POOL_SHUTDOWN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_CHOOSE = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64)


class _Native:
    """The compiled functions (one engine per process)."""

    def __init__(self):
        initialize_llvm()
        fpu.register_symbols()
        libc = ctypes.CDLL(None)
        for name in ("clock_gettime", "syscall", "pthread_self"):
            llvm.add_symbol(name, ctypes.cast(getattr(libc, name), ctypes.c_void_p).value)
        arch = platform.machine()
        self.pooled = arch in _FUTEX and targets.host().triple.split("-")[0] in _PAUSE
        from . import replay

        text = _GRID_IR
        if self.pooled:
            text += _pool_ir(_FUTEX[arch], _PAUSE[targets.host().triple.split("-")[0]])
        else:
            text += _SERIAL_SPLIT_IR
        text += replay.ir()
        traced = trace.requested()
        if traced:
            text = trace.instrument(text)
        mod = llvm.parse_assembly(text)
        mod.triple = targets.host().triple
        mod.verify()
        self.engine = llvm.create_mcjit_compiler(mod, targets.machine.__wrapped__(targets.host(), 2))  # owned
        self.engine.finalize_object()
        address = self.engine.get_function_address
        self.grid = GRID_WORKER(address("jv_dispatch_worker"))
        self.run_steps = RUN_STEPS(address("jv_run_steps"))
        self.choose_threads = _CHOOSE(address("jv_choose_threads"))
        llvm.add_symbol("jv_parallel_for", address("jv_parallel_for"))  # called by split loops
        self.trace = trace.WorkgroupTrace(self.engine, trace.capacity()) if traced else None
        if self.pooled:
            self.thread = _POOL_THREAD(address("jv_pool_thread"))
            self.shutdown = _POOL_SHUTDOWN(address("jv_pool_shutdown"))


_lock = threading.Lock()
_native: _Native | None = None


def native() -> _Native:
    global _native
    with _lock:
        if _native is None:
            _native = _Native()
    return _native


def workgroup_trace() -> trace.WorkgroupTrace | None:
    """The process's workgroup records (runtime.exec.trace), or None unless JITVM_TRACE_WORKGROUPS
    was set before the first native dispatch."""
    return native().trace


class NativePool:
    """`helpers` native threads plus the calling thread; native sequences (runtime.exec.replay) post
    dispatches to them.

    One holder at a time (a lock); the threads end when the pool is closed or collected."""

    def __init__(self, helpers: int):
        self.helpers = helpers
        self.shares = helpers + 1
        self._native = native()
        self.state = PoolT(spin_ns=SPIN_NS, split_min_work=SPLIT_MIN_WORK)
        self._lock = threading.Lock()
        self._threads = []
        self._locals: dict[int, tuple] = {}  # by size: local memory of the helper threads
        address = ctypes.addressof(self.state)
        for k in range(1, self.shares):
            t = threading.Thread(target=self._native.thread, args=(address, k, 0), daemon=True,
                                 name=f"jitvm-dispatch-{address:x}-{k}")
            t.start()
            self._threads.append(t)
        self._finalizer = weakref.finalize(self, _stop, self._native, self.state, self._threads)

    def hold(self) -> int:
        """The pool's address for a sequence of dispatches (runtime.exec.replay) to post to or lend
        to split loops, or 0 when the pool is busy (lent to a split loop up the stack, or in
        use by another thread): the sequence then runs on the calling thread alone.
        `give_back` when it ends."""
        return ctypes.addressof(self.state) if self._lock.acquire(blocking=False) else 0

    def helper_locals(self, size: int) -> tuple[ctypes.Array, ctypes.Array]:
        """Workgroup-local memory of `size` bytes for each helper thread: (vm.buffer objects,
        their data addresses); native code zeroes it before each dispatch that uses it."""
        pair = self._locals.get(size)
        if pair is None:
            bufs = [VmBuffer.allocate(size) for _ in range(self.helpers)]
            n = max(1, self.helpers)
            pair = (bufs, (ctypes.c_void_p * n)(*[b.addr for b in bufs]),
                    (ctypes.c_void_p * n)(*[b.data_address for b in bufs]))
            self._locals[size] = pair
        return pair[1], pair[2]

    def lend(self, flush: int) -> int:
        """The pool's address for split loops of a dispatch running on the calling thread
        alone, or 0 if another thread is using the pool; `give_back` when the dispatch ends."""
        if not self._lock.acquire(blocking=False):
            return 0
        self.state.threads, self.state.flush = self.shares, flush
        return ctypes.addressof(self.state)

    def give_back(self) -> None:
        self._lock.release()

    def close(self) -> None:
        self._finalizer()


def _stop(nat: _Native, state: PoolT, threads: list) -> None:
    nat.shutdown(ctypes.addressof(state))
    for t in threads:
        t.join()
