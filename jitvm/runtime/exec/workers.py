"""Native code that walks a dispatch's workgroup grid, on a pool of native threads.

`jv_dispatch_worker` (grid.ll) claims runs of consecutive workgroup indices from a shared
atomic counter (in increasing order; a run rather than one index, so neighbouring
workgroups, which write neighbouring memory, stay on one core), builds the VMVX entry
arguments and calls the compiled entry function, with the CPU's flush-to-zero mode on as
IREE runs dispatches.

`NativePool` keeps threads parked in native code (pool.ll) between dispatches: a dispatch
is posted by bumping a generation word and the calling thread takes share 0 itself. Pool
threads enter through a gate; when share 0 returns every workgroup has been claimed, so the
caller closes the gate and waits only for the threads inside: a thread that wakes late (a
virtual CPU can take a millisecond) costs nothing. Waiting spins for a short while
(dispatches of one model call follow each other within tens of microseconds) and then
sleeps on a futex, so an idle pool costs nothing; a pool thread spins only while its
holder runs steps on the pool (the `linger` word): once the holder runs a step alone or
ends its sequence, waiting threads sleep at once. No Python, no GIL and no Python thread
switch is involved per dispatch: on a small grid those cost more than the work. The code
is compiled with the rest of the executor's (runtime.exec.nativecode).
"""

from __future__ import annotations

import ctypes
import threading
import weakref

from ..native.layout import PoolT
from ..vm.objects import VmBuffer
from .dispatch import LOCAL_MEMORY_ALIGNMENT
from .nativecode import NativeCode, native

SPIN_NS = 300_000  # how long a waiter spins before it sleeps
# Innermost iterations below which a loop nest stays on one thread: waking the pool costs
# tens of microseconds (a 56x56x64 depthwise 3x3 convolution, 1.8 M, ran slower split).
SPLIT_MIN_WORK = 1 << 22


class NativePool:
    """`helpers` native threads plus the calling thread; native sequences (runtime.exec.replay) post
    dispatches to them.

    One holder at a time (the state's `holder` word, which native code takes too: the HAL's
    native execution runs sequences without Python); the threads end when the pool is closed
    or collected."""

    def __init__(self, helpers: int):
        self.helpers = helpers
        self.shares = helpers + 1
        self._native = native()
        self.state = PoolT(spin_ns=SPIN_NS, split_min_work=SPLIT_MIN_WORK)
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
        address = ctypes.addressof(self.state)
        return address if self._native.try_hold(address) else 0

    def helper_locals(self, size: int) -> tuple[ctypes.Array, ctypes.Array]:
        """Workgroup-local memory of `size` bytes for each helper thread: (vm.buffer objects,
        their data addresses); native code zeroes it before each dispatch that uses it."""
        pair = self._locals.get(size)
        if pair is None:
            bufs = [VmBuffer.allocate(size, LOCAL_MEMORY_ALIGNMENT) for _ in range(self.helpers)]
            n = max(1, self.helpers)
            pair = (bufs, (ctypes.c_void_p * n)(*[b.addr for b in bufs]),
                    (ctypes.c_void_p * n)(*[b.data_address for b in bufs]))
            self._locals[size] = pair
        return pair[1], pair[2]

    def lend(self, flush: int) -> int:
        """The pool's address for split loops of a dispatch running on the calling thread
        alone, or 0 if another thread is using the pool; `give_back` when the dispatch ends."""
        if not self._native.try_hold(ctypes.addressof(self.state)):
            return 0
        self.state.threads, self.state.flush = self.shares, flush
        return ctypes.addressof(self.state)

    def give_back(self) -> None:
        self._native.release(ctypes.addressof(self.state))

    def close(self) -> None:
        self._finalizer()


def _stop(nat: NativeCode, state: PoolT, threads: list) -> None:
    nat.shutdown(ctypes.addressof(state))
    for t in threads:
        t.join()
