"""llvm-cpu library exports on the native executor (runtime.exec.library), driven directly.

The executor is what is tested: the grid walker, the pool, the adapter that calls an export
as IREE's executable library ABI does, the thread policy and the trap of a nonzero return.
The "export" here is a ctypes function that records what it was called with (the dispatch
state, the workgroup state, its thread, the FPU mode) and returns what the test asks; the
real kernels iree-compile emits run in test_llvm_cpu.py, against iree.runtime.
"""

from __future__ import annotations

import ctypes
import threading
import time

import pytest

import jitvm
from jitvm.errors import STATUS_CODES
from jitvm.runtime.exec import fpu
from jitvm.runtime.exec.library import LibraryCall, LibraryDispatch, LibraryEntry, PreparedLibraryDispatch
from jitvm.runtime.exec.nativecode import native
from jitvm.runtime.exec.runner import NativeDispatchRunner
from jitvm.runtime.native import layout

DispatchStateT = layout.CTYPES["ExeDispatchState"]
WorkgroupStateT = layout.CTYPES["ExeWorkgroupState"]
EXPORT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
ENVIRONMENT = layout.CTYPES["ExeEnvironment"]()


class Recorder:
    """A stand-in export: records every workgroup's view of its arguments."""

    def __init__(self, fail=lambda x, y, z: 0, touch_local: bool = True, pause: float = 0.0):
        self.calls = []
        self.pause = pause  # seconds each workgroup sleeps: the GIL free for another worker's workgroups
        self.lock = threading.Lock()
        self.fail = fail
        self.touch_local = touch_local
        self.fn = EXPORT(self._call)
        self.address = ctypes.cast(self.fn, ctypes.c_void_p).value

    def _call(self, env, ds, ws):
        if self.pause:
            time.sleep(self.pause)
        d, w = DispatchStateT.from_address(ds), WorkgroupStateT.from_address(ws)
        local = w.local_memory or 0
        first = ctypes.c_uint64.from_address(local).value if local else None
        if local and self.touch_local:
            ctypes.c_uint64.from_address(local).value = 0xFFFF_FFFF_FFFF_FFFF  # a later dispatch must see it zeroed
        record = dict(env=env, xyz=(w.workgroup_id_x, w.workgroup_id_y, w.workgroup_id_z), local=local,
                      local_size=w.local_memory_size, first_word=first, thread=threading.get_ident(),
                      fpu=fpu.state(), max_concurrency=d.max_concurrency,
                      size=(d.workgroup_size_x, d.workgroup_size_y, d.workgroup_size_z),
                      count=(d.workgroup_count_x, d.workgroup_count_y, d.workgroup_count_z),
                      constants=[ctypes.c_uint32.from_address(d.constants + 4 * i).value
                                 for i in range(d.constant_count)],
                      pointers=[ctypes.c_uint64.from_address(d.binding_ptrs + 8 * i).value
                                for i in range(d.binding_count)],
                      lengths=[ctypes.c_uint64.from_address(d.binding_lengths + 8 * i).value
                               for i in range(d.binding_count)])
        with self.lock:
            self.calls.append(record)
        return self.fail(*record["xyz"])

    def entry(self, name="fake_dispatch_0", local_memory_size=4096, constants=2, bindings=2, sequential=False):
        return LibraryEntry(name, self.address, ctypes.addressof(ENVIRONMENT), local_memory_size, constants,
                            bindings, sequential, self)


def _runner(threads: int) -> NativeDispatchRunner:
    runner = NativeDispatchRunner(threads)
    runner.force_threads = threads
    return runner


def _dispatch(entry, grid, constants, bindings) -> LibraryDispatch:
    return LibraryDispatch(entry, grid, ctypes.addressof(constants) if entry.constant_count else 0, bindings)


def _buffers(n: int, size: int = 256):
    arrays = [(ctypes.c_uint8 * size)() for _ in range(n)]
    return arrays, tuple((ctypes.addressof(a), size - 8 * i) for i, a in enumerate(arrays))


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_every_workgroup_runs_once_with_ieee_states(threads):
    rec = Recorder()
    runner = _runner(threads)
    try:
        constants = (ctypes.c_uint32 * 2)(7, 0xFFFFFFFF)
        arrays, bindings = _buffers(2)
        for _ in range(2):  # local memory starts zeroed on every dispatch
            rec.calls.clear()
            runner.run_library(_dispatch(rec.entry(), (3, 2, 2), constants, bindings))
            assert sorted(c["xyz"] for c in rec.calls) == sorted((x, y, z) for x in range(3) for y in range(2)
                                                                   for z in range(2))
            for c in rec.calls:
                assert c["env"] == ctypes.addressof(ENVIRONMENT)
                assert c["size"] == (1, 1, 1) and c["count"] == (3, 2, 2)
                assert c["constants"] == [7, 0xFFFFFFFF]
                assert c["pointers"] == [a for a, _ in bindings] and c["lengths"] == [n for _, n in bindings]
                assert c["local"] % 64 == 0 and c["local_size"] == 4096
                assert c["max_concurrency"] == runner.last_threads
                flush = fpu.flush_bits()
                assert c["fpu"] is None or c["fpu"] & flush == flush  # FTZ/DAZ on every worker
            by_thread = {}
            for c in rec.calls:
                by_thread.setdefault(c["thread"], []).append(c)
            for calls in by_thread.values():
                assert calls[0]["first_word"] == 0  # each worker's own memory, zeroed
                assert len({c["local"] for c in calls}) == 1
            assert len({calls[0]["local"] for calls in by_thread.values()}) == len(by_thread)
        assert runner.last_threads == threads or not native().pooled
    finally:
        runner.close()


def test_several_threads_share_a_grid():
    if not native().pooled:
        pytest.skip("no dispatch pool on this host")
    rec = Recorder(pause=0.001)  # else, on a busy machine, the caller may run every workgroup before a worker wakes
    runner = _runner(2)
    try:
        for _ in range(20):
            runner.run_library(_dispatch(rec.entry(constants=0, bindings=0), (64, 1, 1), None, ()))
            if len({c["thread"] for c in rec.calls}) == 2:
                break
        assert len({c["thread"] for c in rec.calls}) == 2
    finally:
        runner.close()


@pytest.mark.parametrize("threads", [1, 2])
def test_a_nonzero_return_is_a_trap_naming_the_lowest_failing_workgroup(threads):
    # linear index i = x + 8 * y fails from 21 on (x=5, y=2) with error code i - 20
    rec = Recorder(fail=lambda x, y, z: max(0, x + 8 * y - 20), touch_local=False)
    runner = _runner(threads)
    try:
        for _ in range(5):
            with pytest.raises(jitvm.Trap) as info:
                runner.run_library(_dispatch(rec.entry("boom_dispatch_3", constants=0, bindings=0), (8, 4, 1),
                                             None, ()))
            assert info.value.status == STATUS_CODES["INTERNAL"]
            assert "executable entry point boom_dispatch_3 returned catastrophic error 1 (workgroup 5, 2, 0)" \
                in str(info.value)
        # and the runner is usable afterwards
        ok = Recorder()
        runner.run_library(_dispatch(ok.entry(constants=0, bindings=0), (4, 1, 1), None, ()))
        assert len(ok.calls) == 4
    finally:
        runner.close()


def test_negative_codes_read_as_ints():
    rec = Recorder(fail=lambda x, y, z: -3)
    runner = _runner(1)
    try:
        with pytest.raises(jitvm.Trap, match=r"catastrophic error -3 \(workgroup 0, 0, 0\)"):
            runner.run_library(_dispatch(rec.entry(constants=0, bindings=0), (2, 1, 1), None, ()))
    finally:
        runner.close()


def test_sequential_exports_run_on_one_thread():
    rec = Recorder()
    runner = _runner(3)
    try:
        runner.run_library(_dispatch(rec.entry(constants=0, bindings=0, sequential=True), (32, 1, 1), None, ()))
        assert len(rec.calls) == 32 and len({c["thread"] for c in rec.calls}) == 1
        assert [c["xyz"][0] for c in rec.calls] == list(range(32))  # in order
        assert runner.last_threads == 1 and {c["max_concurrency"] for c in rec.calls} == {1}
    finally:
        runner.close()


def test_empty_grids_call_nothing_and_z_is_the_states_uint16():
    rec = Recorder(touch_local=False)
    runner = _runner(1)
    try:
        for grid in [(0, 4, 1), (4, 0, 1), (4, 1, 0), (1, 1, 0x10000)]:
            runner.run_library(_dispatch(rec.entry(constants=0, bindings=0), grid, None, ()))
        assert rec.calls == []
        runner.run_library(_dispatch(rec.entry(constants=0, bindings=0), (1, 1, 0x10002), None, ()))
        assert [c["xyz"] for c in rec.calls] == [(0, 0, 0), (0, 0, 1)]
        assert {c["count"] for c in rec.calls} == {(1, 1, 2)}
    finally:
        runner.close()


def test_no_local_memory_is_a_null_pointer():
    rec = Recorder()
    runner = _runner(1)
    try:
        runner.run_library(_dispatch(rec.entry(local_memory_size=0, constants=0, bindings=0), (1, 1, 1), None, ()))
        assert rec.calls[0]["local_size"] == 0
    finally:
        runner.close()


@pytest.mark.parametrize("threads", [1, 2])
def test_prepared_steps_patch_binding_pointers_per_run(threads):
    """A replayed library step's binding pointers are each run's slot bases plus the
    recorded offsets; a direct binding (slot -1) keeps its address."""
    rec = Recorder()
    runner = _runner(threads)
    try:
        fixed, _ = _buffers(1)
        constants = (ctypes.c_uint32 * 2)(1, 2)
        step = PreparedLibraryDispatch(rec.entry(), (2, 2, 1), ctypes.addressof(constants),
                                       ((0, 64, 100), (-1, ctypes.addressof(fixed[0]), 200)), keep=constants)
        seq = runner.prepare([step])
        assert seq is not None
        for base in (0x10000, 0x7F0000):  # the stand-in export never dereferences bindings
            rec.calls.clear()
            bases = (ctypes.c_uint64 * 1)(base)
            seq.run(bases)
            assert len(rec.calls) == 4
            assert {tuple(c["pointers"]) for c in rec.calls} == {(base + 64, ctypes.addressof(fixed[0]))}
            assert {tuple(c["lengths"]) for c in rec.calls} == {(100, 200)}
            assert all(c["first_word"] == 0 for c in rec.calls if c is rec.calls[0])
        assert seq.touched() == []
    finally:
        runner.close()


def test_library_call_fills_the_dispatch_state_as_local_sync():
    rec = Recorder()
    call = LibraryCall(rec.entry(bindings=3), (5, 6, 7), 0x1234, [10, 20, 30])
    s = call.struct.state
    assert (s.workgroup_size_x, s.workgroup_size_y, s.workgroup_size_z) == (1, 1, 1)
    assert (s.workgroup_count_x, s.workgroup_count_y, s.workgroup_count_z) == (5, 6, 7)
    assert (s.constant_count, s.binding_count, s.max_concurrency, s.constants) == (2, 3, 1, 0x1234)
    assert list(call.lengths) == [10, 20, 30]
    assert call.pointer_address(2) == s.binding_ptrs + 16
