"""The multi-threaded dispatch runner: a trapping workgroup reports what a serial loop reports
(the lowest failing workgroup, with every workgroup below it run to completion), and grids
too small to pay for waking the thread pool run on the calling thread."""

from __future__ import annotations

import ctypes
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import jitvm
from jitvm.frontend.asm import assemble
from jitvm.fuzz.oracles.calls import instantiate
from jitvm.lower.backend import JitBackend
from jitvm.runtime.exec.runner import NativeDispatchRunner
from jitvm.runtime.native import layout
from jitvm.runtime.exec.dispatch import Dispatch
from jitvm.runtime.vm.objects import VmBuffer, VmList

# A VMVX entry (local memory, constants, bindings, workgroup id xyz, size xyz, count xyz):
# stores x + 1 at element x of binding 0, spins for constant 2 iterations of a float product
# (stored at element 240 + x, so it is not optimised away: threads really overlap), then fails at the workgroup ids given as constants 0 and 1 (after its
# store, like a kernel that traps half way).
ENTRY = """
vm.module @wg version 0
vm.export @entry
vm.func @entry(%r0: !vm.buffer, %r1: !vm.buffer, %r2: !vm.list<!vm.buffer>, %i0: i32, %i1: i32, %i2: i32, %i3: i32, %i4: i32, %i5: i32, %i6: i32, %i7: i32, %i8: i32) -> () {
^bb0:
  %i9 = vm.const.i32.zero
  %r3 = vm.list.get.ref %r2, %i9 : !vm.buffer
  %i10 = vm.const.i32 1
  %i11 = vm.add.i32 %i0, %i10
  %i12:13 = vm.ext.i32.i64.s %i0
  vm.buffer.store.i32 %i11, %r3, %i12:13
  %i14:15 = vm.const.i64.zero
  %i22:23 = vm.const.i64 2
  %i24 = vm.buffer.load.i32 %r1, %i22:23
  %i28 = vm.const.f32 1.5
  %i29 = vm.const.f32 0.999
  vm.br ^bb5(%i9->%i25, %i28->%i30)
^bb5:
  %i26 = vm.cmp.lt.i32.s %i25, %i24
  vm.cond_br %i26, ^bb6(), ^bb7()
^bb6:
  %i27 = vm.add.i32 %i25, %i10
  %i31 = vm.mul.f32 %i30, %i29
  vm.br ^bb5(%i27->%i25, %i31->%i30)
^bb7:
  %i32 = vm.const.i32 240
  %i33 = vm.add.i32 %i0, %i32
  %i34:35 = vm.ext.i32.i64.s %i33
  vm.buffer.store.f32 %i30, %r3, %i34:35
  %i16 = vm.buffer.load.i32 %r1, %i14:15
  %i17 = vm.cmp.eq.i32 %i0, %i16
  vm.cond_br %i17, ^bb1(), ^bb2()
^bb1:
  vm.fail %i10, "first failing workgroup"
^bb2:
  %i18:19 = vm.const.i64 1
  %i20 = vm.buffer.load.i32 %r1, %i18:19
  %i21 = vm.cmp.eq.i32 %i0, %i20
  vm.cond_br %i21, ^bb3(), ^bb4()
^bb3:
  vm.fail %i10, "second failing workgroup"
^bb4:
  vm.return
}
"""

COUNT = 240
SPIN = 20000  # ~10 us per workgroup: long enough for every thread to be busy


@pytest.fixture(scope="module")
def entry(tmp_path_factory):
    path = tmp_path_factory.mktemp("wg") / "wg.vmfb"
    path.write_bytes(assemble(ENTRY))
    _ctx, instance = instantiate(path, JitBackend(use_cache=False, progress=False))
    return instance.lookup("entry"), _ctx


def _dispatch(fn, out: np.ndarray, first: int, second: int, spin: int = SPIN) -> Dispatch:
    mutable = layout.BUFFER_MUTABLE | layout.BUFFER_ORIGIN_HOST
    constants = VmBuffer.from_bytes(np.array([first, second, spin], np.int32).tobytes())
    bindings = VmList.allocate("!vm.buffer", 1)
    bindings.append(VmBuffer.wrap_memory(out.ctypes.data, out.nbytes, mutable, None))
    return Dispatch(fn, (COUNT, 1, 1), (1, 1, 1), VmBuffer.allocate(0), constants, bindings)


@pytest.mark.parametrize("threads", [1, 2, 3])
# Pairs straddling the runs two or three threads claim first (240 workgroups: runs of 30 or
# 20), so both failures happen and the lower one must win.
@pytest.mark.parametrize("first,second", [(37, 200), (200, 37), (0, 239), (239, 238), (29, 30), (30, 29),
                                          (19, 20), (40, 39)])
def test_lowest_failing_workgroup_is_reported(entry, threads, first, second):
    fn, _keep = entry
    runner = NativeDispatchRunner(threads)
    runner.force_threads = threads  # every run on all threads (failing runs are never measured)
    lowest = min(first, second)
    for _ in range(5):  # thread timing varies from run to run; the outcome must not
        out = np.zeros(2 * COUNT, np.int32)
        with pytest.raises(jitvm.Trap) as info:
            runner.run(_dispatch(fn, out, first, second))
        which = "first" if lowest == first else "second"
        assert f"{which} failing workgroup" in info.value.message
        assert (out[:lowest + 1] == np.arange(1, lowest + 2)).all(), "a workgroup below the failure did not run"


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_every_workgroup_runs_once(entry, threads):
    fn, _keep = entry
    runner = NativeDispatchRunner(threads)
    runner.force_threads = threads
    for _ in range(3):
        out = np.zeros(2 * COUNT, np.int32)
        runner.run(_dispatch(fn, out, -1, -1))
        assert runner.last_threads == threads
        assert (out[:COUNT] == np.arange(1, COUNT + 1)).all()


@pytest.mark.slow  # real timings: fails on a loaded machine; tests/test_thread_policy.py covers the
def test_small_grids_run_on_the_calling_thread(entry):  # policy deterministically with given costs
    """Threads are used while a grid's measured cost is worth it, whatever the history."""
    import time

    fn, _keep = entry
    runner = NativeDispatchRunner(2)
    used = []
    small = 8
    for spin in (*[0] * small, *[10 * SPIN] * 6):
        out = np.zeros(2 * COUNT, np.int32)
        # Longer than the pool spins: its thread sleeps, and waking it costs more than a few
        # microseconds of work (spinning, it would take such a grid nearly for free).
        time.sleep(0.002)
        runner.run(_dispatch(fn, out, -1, -1, spin))
        assert (out[:COUNT] == np.arange(1, COUNT + 1)).all()
        used.append(runner.last_threads)
    # The first run uses both threads (unmeasured: cold), the second measures one; a few
    # microseconds of work then stay on one thread (below SMALL_GRID_S, never probed); once
    # ~60 ms of work per run is measured, two threads are measured again (and kept if the
    # machine lends a second core: not asserted, a busy machine does not).
    assert used[:2] == [2, 1], used
    assert used[2:small] == [1] * (small - 2), used
    assert 2 in used[small:], used


def _pool_threads(runner) -> int:
    import ctypes
    import threading
    prefix = f"jitvm-dispatch-{ctypes.addressof(runner.pool().state):x}-"
    return sum(1 for t in threading.enumerate() if t.name.startswith(prefix))


def test_pool_threads_end_when_the_runner_goes(entry):
    """Pool threads are parked in native code; closing or collecting a runner ends them."""
    import gc

    import threading

    fn, _keep = entry
    for close in (True, False):
        runner = NativeDispatchRunner(3)
        runner.force_threads = 3  # a grid the policy might keep on the calling thread
        out = np.zeros(2 * COUNT, np.int32)
        runner.run(_dispatch(fn, out, -1, -1))
        mine = list(runner.pool()._threads)
        assert runner.last_threads == 3 and _pool_threads(runner) == 2
        if close:
            runner.close()
        del runner
        gc.collect()
        assert not any(t.is_alive() for t in mine) and not set(mine) & set(threading.enumerate())


def test_one_runner_serves_several_python_threads(entry):
    """Dispatches from several Python threads at once on one runner's pool stay correct."""
    from concurrent.futures import ThreadPoolExecutor

    fn, _keep = entry
    runner = NativeDispatchRunner(2)
    runner.force_threads = 2  # every dispatch posts to the pool, or finds it held

    def one(k: int) -> bool:
        out = np.zeros(2 * COUNT, np.int32)
        runner.run(_dispatch(fn, out, -1, -1, SPIN if k % 2 else 0))
        return bool((out[:COUNT] == np.arange(1, COUNT + 1)).all())

    with ThreadPoolExecutor(4) as callers:
        assert all(callers.map(one, range(40)))
    runner.close()


def test_threads_that_dispatch_first_at_once_share_one_pool():
    """The first dispatches of several threads start one pool: a second would replace the
    first while native code on another thread still posts to it (its memory then freed)."""
    runner = NativeDispatchRunner(2)
    start = threading.Barrier(8)

    def first() -> int:
        start.wait()
        return id(runner.pool())

    with ThreadPoolExecutor(8) as callers:
        pools = set(callers.map(lambda _: first(), range(8)))
    assert len(pools) == 1 and runner.state.pool == ctypes.addressof(runner.pool().state)
    runner.close()


def test_a_parked_pool_thread_does_not_hold_a_dispatch_up(entry):
    """A pool thread asleep on its futex can take a millisecond to wake on a virtual CPU; the
    calling thread claims every workgroup meanwhile and must not wait for it to show up.
    Measured against the same grid on the calling thread alone: the gap between the two
    stays well below a wake-up (about 1 ms) when the pool has slept."""
    import time

    fn, _keep = entry
    runner = NativeDispatchRunner(2)
    runner.force_threads = 2
    serial = NativeDispatchRunner(1)

    def timed(r) -> float:
        out = np.zeros(2 * COUNT, np.int32)
        d = _dispatch(fn, out, -1, -1, 0)
        start = time.perf_counter()
        r.run(d)
        return time.perf_counter() - start

    for r in (runner, serial):
        timed(r)
    pooled, alone = [], []
    for _ in range(15):
        time.sleep(0.01)  # longer than the spin: the pool thread is parked on its futex
        pooled.append(timed(runner))
        alone.append(timed(serial))
    # A dispatch whose work is microseconds: the pooled one must not pay for the wake-up.
    assert sorted(pooled)[7] < sorted(alone)[7] + 400e-6, (sorted(pooled)[7], sorted(alone)[7])
    runner.close()
