"""What this machine gives a perfectly parallel native kernel right now, N threads over one.

A shared VM lends its cores unevenly, and cores slow down when their neighbours are busy:
a kernel with no shared data, no synchronisation and no load imbalance still runs slower
per thread with all cores busy. This probe is such a kernel, compiled with llvmlite: each
thread streams a private 256 KiB array (L2-resident, as a convolution's weights and rows
are) through vector multiply-adds. Its N-over-one speed-up, measured in the same sitting
as a model's, is the ceiling the model's own speed-up should be read against.
"""

from __future__ import annotations

import ctypes
import threading
import time

import numpy as np

_IR = """
define void @ideal_kernel(ptr %data, i64 %vectors, i64 %passes, ptr %out) {
entry:
  br label %pass
pass:
  %p = phi i64 [ 0, %entry ], [ %p1, %pass_end ]
  %a0 = phi <8 x float> [ zeroinitializer, %entry ], [ %b0, %pass_end ]
  %a1 = phi <8 x float> [ zeroinitializer, %entry ], [ %b1, %pass_end ]
  br label %loop
loop:
  %i = phi i64 [ 0, %pass ], [ %i2, %loop ]
  %c0 = phi <8 x float> [ %a0, %pass ], [ %s0, %loop ]
  %c1 = phi <8 x float> [ %a1, %pass ], [ %s1, %loop ]
  %q0 = getelementptr <8 x float>, ptr %data, i64 %i
  %v0 = load <8 x float>, ptr %q0, align 4
  %i1 = add i64 %i, 1
  %q1 = getelementptr <8 x float>, ptr %data, i64 %i1
  %v1 = load <8 x float>, ptr %q1, align 4
  %m0 = fmul <8 x float> %v0, %v1
  %m1 = fmul <8 x float> %v1, %v1
  %s0 = fadd <8 x float> %c0, %m0
  %s1 = fadd <8 x float> %c1, %m1
  %i2 = add i64 %i, 2
  %more = icmp ult i64 %i2, %vectors
  br i1 %more, label %loop, label %pass_end
pass_end:
  %b0 = phi <8 x float> [ %s0, %loop ]
  %b1 = phi <8 x float> [ %s1, %loop ]
  %p1 = add i64 %p, 1
  %again = icmp ult i64 %p1, %passes
  br i1 %again, label %pass, label %done
done:
  %sum = fadd <8 x float> %b0, %b1
  store <8 x float> %sum, ptr %out, align 4
  ret void
}
"""

_KERNEL = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)
_VECTORS = 256 * 1024 // 32
_compiled = None


def _kernel():
    global _compiled
    if _compiled is None:
        import llvmlite.binding as llvm

        from jitvm.lower import target as targets
        from jitvm.runtime.nativelib import initialize_llvm

        initialize_llvm()
        mod = llvm.parse_assembly(_IR)
        mod.triple = targets.host().triple
        engine = llvm.create_mcjit_compiler(mod, targets.machine.__wrapped__(targets.host(), 2))
        engine.finalize_object()
        _compiled = (engine, _KERNEL(engine.get_function_address("ideal_kernel")))
    return _compiled[1]


def _run(threads: int, passes: int) -> float:
    """Seconds for `threads` threads to each run `passes` passes over their own array."""
    kernel = _kernel()
    arrays = [np.random.default_rng(k).random(_VECTORS * 8, dtype=np.float32) for k in range(threads)]
    outs = [np.zeros(8, np.float32) for _ in range(threads)]
    start = threading.Barrier(threads + 1)

    def work(k: int) -> None:
        kernel(arrays[k].ctypes.data, _VECTORS, 1, outs[k].ctypes.data)  # caches warm
        start.wait()
        kernel(arrays[k].ctypes.data, _VECTORS, passes, outs[k].ctypes.data)

    pool = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in pool:
        t.join()
    return time.perf_counter() - t0


def ideal_speedup(threads: int, seconds: float = 0.1) -> float:
    """N threads' throughput over one thread's on the probe kernel (N = `threads`)."""
    passes = 1
    while _run(1, passes) < seconds / 4:
        passes *= 2
    alone = min(_run(1, passes) for _ in range(2))
    together = min(_run(threads, passes) for _ in range(2))
    return threads * alone / together
