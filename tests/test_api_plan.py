"""The native call plan (jitvm.api.plan) and entry (jitvm.api.entry) against Python's
marshalling (jitvm.api.marshal).

Every corpus program's calls give the same bytes, dtypes, shapes and array flags each way
(the native entry, the plan's ctypes call, Python's marshalling), or the same trap; arguments
the plan does not take (lists, strided or foreign-endian arrays, other shapes or dtypes,
keywords) are declined before anything happens, so the call raises or converts as Python's
marshalling does; results are handed over without a copy only when nothing else can reach
their memory, and never alias the caller's arrays. The entry runs no Python on its path,
keeps every reference count, releases a result's memory when its array dies, and serves
several threads at once.
"""

from __future__ import annotations

import ctypes
import gc
import subprocess
import sys
import threading
import types
import warnings
import weakref

import numpy as np
import pytest

import jitvm
from jitvm.lower import lazy
from jitvm.api import entry, marshal
from jitvm.api.plan import DECLINED, CallPlan
from jitvm.runtime.modules.hal.buffer_view import HalBufferView
from jitvm.fuzz.corpus import find_tool, make_inputs
from tests.corpus import source_files
from tests.hal_support import corpus_calls_differ_from_iree

MLIR = [name for name, kind, _ in source_files() if kind == "mlir"]

_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


def _outcome(call):
    try:
        r = call()
    except (jitvm.Error, TypeError) as e:
        return ("error", type(e).__name__, str(e))
    out = [] if r is None else list(r) if isinstance(r, tuple) else [r]
    return ("ok", [(x.tobytes(), x.dtype.str, x.shape, _flags(x)) if isinstance(x, np.ndarray) else repr(x)
                   for x in out])


def _flags(x: np.ndarray) -> tuple:
    return tuple(x.flags[f] for f in ("C_CONTIGUOUS", "F_CONTIGUOUS", "OWNDATA", "WRITEABLE", "ALIGNED"))


def _python(fn):
    """`fn` (not called yet) marshalled by Python alone: no plan, no entry."""
    fn._direct = None
    return fn


def _entered(fn) -> bool:
    """Whether `fn` is called through its native entry (a builtin as its class's __call__)."""
    return isinstance(type(fn).__dict__.get("__call__"), types.BuiltinFunctionType)


def _without_entry(fn):
    """`fn` (not called yet) calling its plan through ctypes (CallPlan.direct), no native entry."""
    fn.native_entry = False
    return fn


@pytest.mark.parametrize("name", MLIR)
def test_native_calls_equal_pythons_marshalling(corpus_module, name):
    m = corpus_module(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        native = jitvm.load(str(m.vmfb))
        ctypes_call = jitvm.load(str(m.vmfb))
        python = jitvm.load(str(m.vmfb))
    for i, call in enumerate(m.calls):
        args = make_inputs(m, i)
        python_fn = _python(python.function(call.function))
        for _ in range(2):
            want = _outcome(lambda: python_fn(*args))
            assert _outcome(lambda: native[call.function](*args)) == want, call
            assert _outcome(lambda: _without_entry(ctypes_call[call.function])(*args)) == want, call
        fn = native.function(call.function)
        assert _entered(fn) == (fn._plan is not None and fn._plan.static_results and bool(entry.native_code()))


@pytest.mark.parametrize("name", ["matmul", "multi_result", "softmax", "elementwise_f32", "conv2d", "reductions"])
def test_native_entry_calls_equal_iree_runtime(corpus_module, name):
    """The same calls under iree.runtime (local-sync): the same bits, twice (the second time
    through entries built by the first)."""
    m = corpus_module(f"mlir/{name}")
    module = jitvm.load(str(m.vmfb))
    problems = corpus_calls_differ_from_iree(module, m, m.vmfb)
    assert not problems, "\n".join(problems)
    assert any(_entered(module.function(call.function)) for call in m.calls)


def _matmul(corpus_module):
    return jitvm.load(str(corpus_module("mlir/matmul").vmfb)).function("matmul_4x8x5")


def test_the_plan_takes_contiguous_arrays_and_copies_them(corpus_module, monkeypatch):
    fn = _matmul(corpus_module)
    a, b = np.ones((4, 8), np.float32), np.full((8, 5), 2, np.float32)
    fn(a, b)
    assert isinstance(fn._plan, CallPlan)
    monkeypatch.setattr(marshal, "array_argument", lambda *a: pytest.fail("marshalled in Python"))
    out = fn(a, b)
    np.testing.assert_array_equal(out, np.full((4, 5), 16, np.float32))
    assert out.flags.writeable and not np.shares_memory(out, a) and not np.shares_memory(out, b)
    assert _entered(fn) and out.base is not None and not isinstance(out.base, np.ndarray)
    view = HalBufferView(_capsule_pointer(out.base, None))  # the result buffer itself, kept alive, no copy
    assert view.buffer.data_address == out.ctypes.data


class _Subclass(np.ndarray):
    pass


DECLINED_CASES = ["strided", "big_endian", "list", "shape", "dtype", "count", "subclass", "keywords"]


def _declined_call(fn, case):
    a, b = np.ones((4, 8), np.float32), np.ones((8, 5), np.float32)
    args = {"strided": (np.ones((4, 16), np.float32)[:, ::2], b), "big_endian": (a.astype(">f4"), b),
            "list": (a.tolist(), b), "shape": (np.ones((4, 7), np.float32), b),
            "dtype": (a.astype(np.float64), b), "count": (a,), "subclass": (a.view(_Subclass), b)}.get(case)
    if case == "keywords":
        return lambda: fn(a, b=b)
    if case != "count" and fn._plan is not None:
        assert fn._plan(args) is DECLINED
    return lambda: fn(*args)


@pytest.mark.parametrize("case", DECLINED_CASES)
def test_other_arguments_are_declined_and_marshalled_by_python(corpus_module, case):
    fn = _matmul(corpus_module)
    fn(np.ones((4, 8), np.float32), np.ones((8, 5), np.float32))
    assert _entered(fn)
    python = _python(_matmul(corpus_module))
    for _ in range(2):
        assert _outcome(_declined_call(fn, case)) == _outcome(_declined_call(python, case))


def test_the_native_entry_runs_no_python(corpus_module):
    """From `m.f(a, b)` to its result array and back to the array's release, no Python
    function runs (the profiler sees Python frames as "call" events)."""
    m = jitvm.load(str(corpus_module("mlir/matmul").vmfb))
    a, b = np.ones((4, 8), np.float32), np.full((8, 5), 2, np.float32)
    m.matmul_4x8x5(a, b)
    events = []
    sys.setprofile(lambda frame, event, arg: events.append((event, frame.f_code.co_name)))
    try:
        out = m.matmul_4x8x5(a, b)
        del out
    finally:
        sys.setprofile(None)
    assert not [e for e in events if e[0] == "call" and e[1] != "<lambda>"], events
    assert "matmul_4x8x5" in vars(m)  # the attribute itself, found without Module.__getattr__


def _split_stats(corpus_module):
    return jitvm.load(str(corpus_module("mlir/multi_result").vmfb)).function("split_stats")


def test_the_native_entry_keeps_reference_counts(corpus_module):
    """Over many calls, the arguments', the results' and the dtypes' reference counts stay
    where they were: one result (an array), several (a tuple of arrays), a declined call."""
    fn, several = _matmul(corpus_module), _split_stats(corpus_module)
    a, b = np.ones((4, 8), np.float32), np.full((8, 5), 2, np.float32)
    x = np.arange(30, dtype=np.float32).reshape(5, 6)
    strided = np.ones((4, 16), np.float32)[:, ::2]
    fn(a, b), several(x), fn(strided, b)
    assert _entered(fn) and _entered(several)
    fn(a, b), several(x)  # called again: hot; its tier-up ends before counting (its thread
    assert lazy.wait_for_tier_up(300)  # holds references to shared objects such as the dtype)
    watched = (a, b, x, strided, np.dtype(np.float32), fn, several)
    before = [sys.getrefcount(o) for o in watched]
    for _ in range(500):
        out = fn(a, b)
        assert sys.getrefcount(out) == 2 and sys.getrefcount(out.base) == 3  # the array's, out.base's, the call's
        outs = several(x)
        assert isinstance(outs, tuple) and len(outs) == 4 and sys.getrefcount(outs) == 2
        assert all(sys.getrefcount(o) == 3 for o in outs)  # the tuple's, the loop's, getrefcount's
        assert fn(strided, b).shape == (4, 5)
    del out, outs
    assert [sys.getrefcount(o) for o in watched] == before


def test_the_native_entry_releases_a_results_memory_with_its_array(corpus_module):
    """A result array's base holds one reference to the result's buffer view, dropped when
    the array dies (the view's memory goes with its last reference)."""
    fn = _matmul(corpus_module)
    a, b = np.ones((4, 8), np.float32), np.full((8, 5), 2, np.float32)
    fn(a, b)
    out = fn(a, b)
    view = HalBufferView(_capsule_pointer(out.base, None))  # one more reference, ours
    assert view.refcount == 2
    reshaped = out.reshape(20)  # a view of the array keeps it alive
    del out
    assert view.refcount == 2
    del reshaped
    assert view.refcount == 1


@pytest.fixture(scope="module")
def checked_module(tmp_path_factory):
    """A function of tensors that traps (check.expect_eq) unless its input is [1, 2, 3]."""
    src = tmp_path_factory.mktemp("checked") / "checked.mlir"
    src.write_text("""
func.func @checked(%x: tensor<3xi32>) -> tensor<3xi32> {
  %b = arith.addi %x, %x : tensor<3xi32>
  check.expect_eq_const(%b, dense<[2, 4, 6]> : tensor<3xi32>) : tensor<3xi32>
  return %b : tensor<3xi32>
}
""")
    out = src.with_suffix(".vmfb")
    subprocess.run([find_tool("iree-compile"), str(src), "-o", str(out), "--iree-hal-target-device=local",
                    "--iree-hal-local-target-device-backends=vmvx"], check=True)
    return str(out)


def test_a_trap_under_the_native_entry_is_pythons(checked_module):
    fn = jitvm.load(checked_module).checked
    python = _python(jitvm.load(checked_module).checked)
    good, bad = np.array([1, 2, 3], np.int32), np.array([1, 2, 4], np.int32)
    np.testing.assert_array_equal(fn(good), [2, 4, 6])
    assert _entered(fn)
    before = sys.getrefcount(bad)
    for _ in range(3):
        outcome = _outcome(lambda: fn(bad))
        assert outcome[0] == "error" and outcome[1] == "Trap" and "check.expect_eq failed" in outcome[2]
        assert outcome == _outcome(lambda: python(bad))
        assert _outcome(lambda: fn(good)) == _outcome(lambda: python(good))
    assert sys.getrefcount(bad) == before


def test_the_native_entry_serves_several_threads(corpus_module):
    fn = _matmul(corpus_module)
    python = _python(_matmul(corpus_module))
    rng = np.random.default_rng(7)
    cases = [(rng.standard_normal((4, 8), np.float32), rng.standard_normal((8, 5), np.float32)) for _ in range(8)]
    want = [python(a, b).tobytes() for a, b in cases]
    fn(*cases[0])
    assert _entered(fn)
    wrong = []

    def work(k):
        for i in range(300):
            a, b = cases[(k + i) % len(cases)]
            if fn(a, b).tobytes() != want[(k + i) % len(cases)]:
                wrong.append((k, i))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong


def test_a_function_with_a_native_entry_is_collected(corpus_module):
    """The entry holds its plan, not its function: a module and its functions go with their
    last references (no cycle hidden from the collector), and an entry kept alone still
    answers (its declined calls with a jitvm.Error, the function being gone)."""
    m = jitvm.load(str(corpus_module("mlir/matmul").vmfb))
    a, b = np.ones((4, 8), np.float32), np.full((8, 5), 2, np.float32)
    want = m.matmul_4x8x5(a, b)
    call = type(m.matmul_4x8x5).__call__
    alive = [weakref.ref(m), weakref.ref(m.matmul_4x8x5), weakref.ref(type(m.matmul_4x8x5))]
    del m
    gc.collect()
    assert [r() for r in alive] == [None, None, None]
    np.testing.assert_array_equal(call(a, b), want)
    with pytest.raises(jitvm.Error, match="released"):
        call(a)


def _dropin_pair(corpus_module):
    import jitvm.runtime as rt

    vmfb = str(corpus_module("mlir/matmul").vmfb)
    native = rt.load_vm_flatbuffer_file(vmfb, driver="local-sync").matmul_4x8x5
    python = rt.load_vm_flatbuffer_file(vmfb, driver="local-sync").matmul_4x8x5
    python._plan = False  # no plan: the drop-in's own conversion
    return native, python


def _dropin_outcome(call):
    try:
        r = call()
    except jitvm.Error as e:
        return ("error", type(e).__name__, str(e))
    host = r.to_host()
    return ("ok", type(r).__name__, host.tobytes(), host.dtype.str, host.shape)


def test_the_dropin_invoker_calls_through_the_plan_with_device_arrays(corpus_module, monkeypatch):
    """jitvm.runtime's FunctionInvoker takes the native plan for a reflected function of
    tensors: DeviceArray results with the bytes the drop-in's own conversion gives."""
    from jitvm.api.dropin import invoke

    native, python = _dropin_pair(corpus_module)
    a, b = np.ones((4, 8), np.float32), np.full((8, 5), 2, np.float32)
    assert _dropin_outcome(lambda: native(a, b)) == _dropin_outcome(lambda: python(a, b))
    assert isinstance(native._plan, CallPlan) and native._plan.raw_results
    monkeypatch.setattr(invoke, "as_array_argument", lambda *a: pytest.fail("converted in Python"))
    np.testing.assert_array_equal(native(a, b).to_host(), np.full((4, 5), 16, np.float32))


@pytest.mark.parametrize("case", ["strided", "list", "shape", "dtype", "count"])
def test_the_dropin_invoker_declines_to_its_own_conversion(corpus_module, case):
    native, python = _dropin_pair(corpus_module)
    a, b = np.ones((4, 8), np.float32), np.ones((8, 5), np.float32)
    native(a, b)
    args = {"strided": (np.ones((4, 16), np.float32)[:, ::2], b), "list": ([[1.0] * 8] * 4, b),
            "shape": (np.ones((4, 7), np.float32), b), "dtype": (a.astype(np.float64), b), "count": (a,)}[case]
    if case != "count":
        assert native._plan(args) is DECLINED
    assert _dropin_outcome(lambda: native(*args)) == _dropin_outcome(lambda: python(*args))
