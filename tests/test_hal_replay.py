"""Command buffers replayed in native code (hal/prepared, lower/replay) against the same
command buffers executed dispatch by dispatch from Python: the same bytes in every buffer,
the same errors at the same point, whatever the kernels do with their arguments, whatever
the binding table and the thread count."""

from __future__ import annotations

import numpy as np
import pytest

import jitvm
from jitvm.frontend.asm import assemble
from jitvm.lower.backend import JitBackend
from jitvm.runtime.exec.runner import NativeDispatchRunner
from jitvm.runtime.modules import VmvxModule
from jitvm.runtime.modules.hal import command_buffer, commands as cb
from jitvm.runtime.modules.hal import types as t
from jitvm.runtime.modules.hal.buffer import HalBuffer
from jitvm.runtime.modules.hal.errors import own
from jitvm.api import EmbeddedLoader
from jitvm.runtime.modules.hal.executable import create_vmvx_executable
from jitvm.runtime.modules.hal.prepared import DispatchSegment

COUNT = 64  # workgroups: one i32 element each
_SIG = ("%r0: !vm.buffer, %r1: !vm.buffer, %r2: !vm.list<!vm.buffer>, %i0: i32, %i1: i32, %i2: i32, "
        "%i3: i32, %i4: i32, %i5: i32, %i6: i32, %i7: i32, %i8: i32")
_ATTRS = 'attributes {iree.reflection = {binding_count = "2", constant_count = "2"}}'
# scale: out[x] = in[x] * c0 + x, failing at workgroup c1 after its store. alias: the same, then
# it makes its list hold the out view twice (a kernel rearranging what it was handed; run on
# one workgroup, so that what it reads does not depend on the order workgroups run in).
# In both: r3 is the in view, r4 the out view, i10 is 1; element x of out = in[x] * c0 + x.
_SCALE_ELEMENT = """
  %i12:13 = vm.ext.i32.i64.s %i0
  %i14 = vm.buffer.load.i32 %r3, %i12:13
  %i24:25 = vm.const.i64.zero
  %i17 = vm.buffer.load.i32 %r1, %i24:25
  %i18 = vm.mul.i32 %i14, %i17
  %i19 = vm.add.i32 %i18, %i0
  vm.buffer.store.i32 %i19, %r4, %i12:13"""
_VIEWS = """
  %i9 = vm.const.i32.zero
  %i10 = vm.const.i32 1
  %r3 = vm.list.get.ref %r2, %i9 : !vm.buffer
  %r4 = vm.list.get.ref %r2, %i10 : !vm.buffer
  vm.br ^bb1()
^bb1:"""
KERNELS = f"""
vm.module @k version 0
vm.export @scale
vm.export @alias
vm.func @scale({_SIG}) -> () {_ATTRS} {{
^bb0:{_VIEWS}{_SCALE_ELEMENT}
  %i26:27 = vm.const.i64 1
  %i22 = vm.buffer.load.i32 %r1, %i26:27
  %i23 = vm.cmp.eq.i32 %i0, %i22
  vm.cond_br %i23, ^bb2(), ^bb3()
^bb2:
  vm.fail %i10, "scale failed at the chosen workgroup"
^bb3:
  vm.return
}}
vm.func @alias({_SIG}) -> () {_ATTRS} {{
^bb0:{_VIEWS}{_SCALE_ELEMENT}
  vm.list.set.ref %r2, %i9, %r4
  vm.return
}}
"""
SCALE, ALIAS = 0, 1


class PythonOnly:
    """The runner without native replay: every dispatch goes through Python, one by one."""

    def __init__(self, runner):
        self.run = runner.run


@pytest.fixture(scope="module")
def executables():
    """(replaying executable, Python-path executable) of KERNELS, per thread count."""
    data = assemble(KERNELS)
    backend = JitBackend(use_cache=False, progress=False)
    made = {}
    for threads in (1, 2):
        runner = NativeDispatchRunner(threads)
        if threads > 1:
            runner.force_threads = threads  # these grids are small: make the pool take them
        made[threads] = tuple(create_vmvx_executable(data, None, EmbeddedLoader(backend), r, VmvxModule)._attach()
                              for r in (runner, PythonOnly(runner)))
    yield made
    for pair in made.values():
        for ref in pair:
            ref.payload.runner.close() if hasattr(ref.payload.runner, "close") else None


def _buffer(values=None, n=COUNT) -> jitvm.runtime.vm.objects.Ref:
    ref = HalBuffer.allocate(4 * n, t.MEMORY_TYPE_DEVICE_LOCAL, t.USAGE_DEFAULT)
    if values is not None:
        ref.payload.write(0, np.asarray(values, np.int32).tobytes())
    return ref


def _read(ref) -> np.ndarray:
    return np.frombuffer(bytes(ref.payload.view(0, ref.payload.byte_length)), np.int32).copy()


def _program(exe, steps, capacity=3):
    """A finalized command buffer: ("fill", slot, pattern, width), ("copy", from slot, to slot)
    and ("dispatch", function, in slot, out slot, factor, failing workgroup[, workgroups])
    steps, a barrier after each."""
    ref = command_buffer.HalCommandBuffer.new(0, 0, capacity)
    c = ref.payload
    for step in steps:
        if step[0] == "fill":
            _, slot, pattern, width = step
            c.record(cb.FillCommand(c.make_ref(None, slot, 0, t.WHOLE_BUFFER), pattern, width))
        elif step[0] == "copy":
            _, src, dst = step
            c.record(cb.CopyCommand(c.make_ref(None, src, 0, 4 * COUNT), c.make_ref(None, dst, 0, 4 * COUNT)))
        else:
            _, function, src, dst, factor, fail, *count = step
            grid = (count[0] if count else COUNT, 1, 1)
            c.record(cb.DispatchCommand(own(exe), function, grid, None, (factor, fail),
                                        (c.make_ref(None, src, 0, t.WHOLE_BUFFER),
                                         c.make_ref(None, dst, 0, t.WHOLE_BUFFER)), 0))
        c.record(_barrier())
    c.finalize()
    return ref


def _barrier():
    from jitvm.runtime.modules.hal.exports_command import _Barrier

    return _Barrier()


def _outcome(program, inputs):
    """(trap text or None, every buffer's bytes) of one execution on fresh buffers."""
    buffers = [_buffer(v) for v in inputs]
    table = [(b, 0, t.WHOLE_BUFFER) for b in buffers]
    try:
        program.payload.execute(table, None)
        error = None
    except jitvm.Trap as e:
        error = (e.status_name, e.message)
    return error, [_read(b) for b in buffers]


def _both(executables, threads, steps, inputs, calls=3, upto=None):
    """The outcomes of `calls` executions, replayed and from Python; asserts they agree (in
    buffer k only below upto[k]: workgroups above a failing one may run or not)."""
    native_exe, python_exe = executables[threads]
    native, python = _program(native_exe, steps), _program(python_exe, steps)
    for _ in range(calls):
        got, want = _outcome(native, inputs), _outcome(python, inputs)
        assert got[0] == want[0]
        for k, (a, b) in enumerate(zip(got[1], want[1])):
            n = (upto or {}).get(k, COUNT)
            np.testing.assert_array_equal(a[:n], b[:n])
    return native, got


def _segments(program) -> list[DispatchSegment]:
    return [p for p in program.payload.program.parts if isinstance(p, DispatchSegment)]


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(-1000, 1000, COUNT), None, None]


STEPS = [("fill", 1, 0x01020304, 4), ("dispatch", SCALE, 0, 1, 3, -1), ("fill", 2, 0x7F, 1),
         ("dispatch", SCALE, 1, 2, -2, -1), ("fill", 0, 0xFFFF0001, 2), ("dispatch", SCALE, 2, 0, 5, -1)]


@pytest.mark.parametrize("threads", [1, 2])
def test_a_replayed_program_matches_python_and_runs_natively(executables, threads, monkeypatch):
    calls = []
    real = cb.DispatchCommand.execute
    monkeypatch.setattr(cb.DispatchCommand, "execute", lambda self, *a: (calls.append(self), real(self, *a)))
    native, (error, out) = _both(executables, threads, STEPS, _inputs())
    assert error is None
    x = np.arange(COUNT)
    first = _inputs()[0] * 3 + x
    second = first * -2 + x
    assert (out[1] == first).all() and (out[2] == second).all() and (out[0] == second * 5 + x).all()
    (segment,) = _segments(native)
    assert len(segment.commands) == len(STEPS) and segment.replicas[0].sequence is not None
    # Only the Python program's dispatches ran through Python.
    assert len(calls) == 3 * 3 and all(c.executable.payload is executables[threads][1].payload for c in calls)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("failing", [0, 17, COUNT - 1])
def test_a_trap_stops_the_sequence_where_python_stops(executables, threads, failing):
    steps = [("dispatch", SCALE, 0, 1, 3, -1), ("fill", 2, 0x55, 1), ("dispatch", SCALE, 1, 2, 7, failing),
             ("fill", 0, 0, 1), ("dispatch", SCALE, 2, 0, 5, -1)]
    _native, (error, out) = _both(executables, threads, steps, _inputs(1), upto={2: failing + 1})
    assert error is not None and "scale failed at the chosen workgroup" in error[1]
    assert (out[0] == _inputs(1)[0]).all()  # the fill and dispatch after the trap did not run


@pytest.mark.parametrize("threads", [1, 2])
def test_a_kernel_rearranging_its_bindings_gets_fresh_arguments(executables, threads):
    steps = [("dispatch", SCALE, 0, 1, 3, -1), ("dispatch", ALIAS, 1, 2, 2, -1, 1), ("dispatch", SCALE, 2, 0, 1, -1)]
    native, (error, out) = _both(executables, threads, steps, _inputs(2), calls=4)
    assert error is None
    # Reused, the alias dispatch would read its input from the out view it left in the list.
    assert out[2][0] == (_inputs(2)[0][0] * 3) * 2
    (segment,) = _segments(native)
    assert segment.replicas[0].sequence is None  # dropped after the last run: the kernel changed its list


def test_a_different_table_is_resolved_again_and_bad_tables_fail_as_in_python(executables):
    native_exe, python_exe = executables[1]
    steps = [("dispatch", SCALE, 0, 1, 3, -1), ("fill", 2, 9, 4)]
    native, python = _program(native_exe, steps), _program(python_exe, steps)

    def run(program, table):
        try:
            program.payload.execute(table, None)
            return None
        except jitvm.Trap as e:
            return e.status_name, e.message

    for lengths in [(COUNT, COUNT, COUNT), (COUNT, 2 * COUNT, 3 * COUNT), (COUNT, COUNT, COUNT)]:
        outs = []
        for program in (native, python):
            buffers = [_buffer(np.arange(n), n=n) for n in lengths]
            assert run(program, [(b, 0, t.WHOLE_BUFFER) for b in buffers]) is None
            outs.append([_read(b) for b in buffers])
        for a, b in zip(*outs):
            np.testing.assert_array_equal(a, b)
    short = [_buffer(), _buffer(n=COUNT // 2), _buffer()]  # slot 1 too small for the dispatch's stores
    for table in ([(b, 0, t.WHOLE_BUFFER) for b in short],
                  [(short[0], 0, t.WHOLE_BUFFER), (None, 0, 0), (short[2], 0, t.WHOLE_BUFFER)],
                  [(short[0], 0, t.WHOLE_BUFFER), (short[1], 4 * COUNT, 4), (short[2], 0, t.WHOLE_BUFFER)]):
        assert run(native, table) == run(python, table)


@pytest.mark.parametrize("threads", [1, 2])
def test_segments_between_other_commands_each_run_their_own_dispatches(executables, threads):
    """A copy ends a segment: the program runs segment, copy, segment, each segment with the
    dispatches it holds (natively from the second execution on)."""
    steps = [("dispatch", SCALE, 0, 1, 3, -1), ("copy", 1, 2), ("dispatch", SCALE, 2, 0, 5, -1)]
    native, (error, out) = _both(executables, threads, steps, _inputs(3), calls=3)
    assert error is None
    x = np.arange(COUNT)
    first = _inputs(3)[0] * 3 + x
    assert (out[1] == first).all() and (out[2] == first).all() and (out[0] == first * 5 + x).all()
    assert len(_segments(native)) == 2 and all(s.replicas[0].sequence is not None for s in _segments(native))
