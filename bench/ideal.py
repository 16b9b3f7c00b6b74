"""What this machine gives a perfectly parallel native kernel right now, N threads over one.

A shared VM lends its cores unevenly, and cores slow down when their neighbours are busy:
a kernel with no shared data, no synchronisation and no load imbalance still runs slower
per thread with all cores busy. This probe is such a kernel, compiled with llvmlite: each
thread streams a private 256 KiB array (L2-resident, as a convolution's weights and rows
are) through CHAINS independent vector multiply-add chains. Its N-over-one speed-up, measured in the same sitting
as a model's, is the ceiling the model's own speed-up should be read against.
"""

from __future__ import annotations

import ctypes
import threading
import time

import numpy as np

CHAINS = 8  # independent vector accumulators, as the JIT's register-blocked kernels keep


def _ir(chains: int = CHAINS) -> str:
    """The probe: passes over `data` (`vectors` <8 x float>, a multiple of `chains`), each
    loading `chains` consecutive vectors per step into as many multiply-add chains. With
    enough chains it is bound by the core's load and floating-point throughput, as the
    kernels are; two chains would be bound by the adds' latency, which a core's second
    hardware thread hides, so it would overstate what a throughput-bound kernel can get
    when the VM's two cores are one core's two threads (seen here: such a kernel ran 1.0x on
    two threads at times, 1.9x at others)."""
    rows = range(chains)
    phis_pass = "\n".join(f"  %a{j} = phi <8 x float> [ zeroinitializer, %entry ], [ %b{j}, %pass_end ]" for j in rows)
    phis_loop = "\n".join(f"  %c{j} = phi <8 x float> [ %a{j}, %pass ], [ %s{j}, %loop ]" for j in rows)
    body = "\n".join(f"  %i{j} = add i64 %i, {j}\n"
                     f"  %q{j} = getelementptr <8 x float>, ptr %data, i64 %i{j}\n"
                     f"  %v{j} = load <8 x float>, ptr %q{j}, align 4\n"
                     f"  %m{j} = fmul <8 x float> %v{j}, %v{j}\n"
                     f"  %s{j} = fadd <8 x float> %c{j}, %m{j}" for j in rows)
    phis_end = "\n".join(f"  %b{j} = phi <8 x float> [ %s{j}, %loop ]" for j in rows)
    total, sums = "%b0", []
    for j in rows[1:]:
        sums.append(f"  %t{j} = fadd <8 x float> {total}, %b{j}")
        total = f"%t{j}"
    return f"""
define void @ideal_kernel(ptr %data, i64 %vectors, i64 %passes, ptr %out) {{
entry:
  br label %pass
pass:
  %p = phi i64 [ 0, %entry ], [ %p1, %pass_end ]
{phis_pass}
  br label %loop
loop:
  %i = phi i64 [ 0, %pass ], [ %inext, %loop ]
{phis_loop}
{body}
  %inext = add i64 %i, {chains}
  %more = icmp ult i64 %inext, %vectors
  br i1 %more, label %loop, label %pass_end
pass_end:
{phis_end}
  %p1 = add i64 %p, 1
  %again = icmp ult i64 %p1, %passes
  br i1 %again, label %pass, label %done
done:
{chr(10).join(sums)}
  store <8 x float> {total}, ptr %out, align 4
  ret void
}}
"""


_KERNEL = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)
_VECTORS = 256 * 1024 // 32
_compiled = None


def _kernel():
    global _compiled
    if _compiled is None:
        from jitvm.runtime.native.engine import jit_module

        code = jit_module(_ir())
        _compiled = (code, code.function("ideal_kernel", _KERNEL))
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
