"""The native call plan (jitvm.api.plan) against Python's marshalling (jitvm.api.marshal).

Every corpus program's calls give the same bytes, dtypes and shapes either way, or the same
trap; arguments the plan does not take (lists, strided or foreign-endian arrays, other
shapes or dtypes) are declined before anything happens, so the call raises or converts as
Python's marshalling does; results are handed over without a copy only when nothing else
can reach their memory, and never alias the caller's arrays.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitvm
from jitvm.api import marshal
from jitvm.api.plan import DECLINED, CallPlan
from jitvm.runtime.modules.hal.buffer_view import HalBufferView
from jitvm.fuzz.corpus import make_inputs
from tests.corpus import source_files

MLIR = [name for name, kind, _ in source_files() if kind == "mlir"]


def _outcome(call):
    try:
        r = call()
    except jitvm.Error as e:
        return ("error", type(e).__name__, str(e))
    out = [] if r is None else list(r) if isinstance(r, tuple) else [r]
    return ("ok", [(x.tobytes(), x.dtype.str, x.shape) if isinstance(x, np.ndarray) else repr(x) for x in out])


@pytest.mark.parametrize("name", MLIR)
def test_native_calls_equal_pythons_marshalling(corpus_module, name, monkeypatch):
    m = corpus_module(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        native = jitvm.load(str(m.vmfb))
        python = jitvm.load(str(m.vmfb))
    for i, call in enumerate(m.calls):
        args = make_inputs(m, i)
        python_fn = python.function(call.function)
        python_fn._planned = True  # no plan: marshal.py's path
        for _ in range(2):
            assert _outcome(lambda: native[call.function](*args)) == _outcome(lambda: python_fn(*args)), call


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
    base = out
    while isinstance(base, np.ndarray):
        base = base.base
    assert isinstance(base.owner, HalBufferView)  # the result buffer itself, kept alive, no copy
    assert base.owner.buffer.data_address == out.ctypes.data


@pytest.mark.parametrize("case", ["strided", "big_endian", "list", "shape", "dtype", "count"])
def test_other_arguments_are_declined_and_marshalled_by_python(corpus_module, case):
    fn = _matmul(corpus_module)
    a, b = np.ones((4, 8), np.float32), np.ones((8, 5), np.float32)
    fn(a, b)
    args = {"strided": (np.ones((4, 16), np.float32)[:, ::2], b), "big_endian": (a.astype(">f4"), b),
            "list": (a.tolist(), b), "shape": (np.ones((4, 7), np.float32), b),
            "dtype": (a.astype(np.float64), b), "count": (a,)}[case]
    if case != "count":
        assert fn._plan(args) is DECLINED
    python = _matmul(corpus_module)
    python._planned = True
    assert _outcome(lambda: fn(*args)) == _outcome(lambda: python(*args))


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
