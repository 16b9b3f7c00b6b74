"""A reflected function's native entry: `m.f(x)` from the caller straight into native code.

A call plan's Python closure (CallPlan.direct) costs 3-5 us a call around jv_invoke: the
ctypes slot array and crossing, then each result array made in Python. The entry is a
CPython builtin function (METH_FASTCALL | METH_KEYWORDS), made once per function, whose body
(entry.ll) takes the argument vector as CPython passes it, calls jv_invoke with the GIL
released, and makes the result arrays with numpy's C API, each based on a capsule that
releases its buffer view (and so its memory) when the array dies. Everything else (keywords,
a wrong count, a declined argument, a trap, results not handed over) goes to the same
Python code as before: the function's general call, or the plan's completion of jv_invoke's
io array, so results and errors are exactly the Python path's.

CPython's functions are resolved from the running interpreter (ctypes.pythonapi), numpy's
from its `_ARRAY_API` capsule (the table numpy's public `__multiarray_api.h` indexes), both
as the engine resolves every symbol: `provide`d before the module is linked.
"""

from __future__ import annotations

import ctypes
import threading
import weakref

import numpy as np

from ..errors import Error
from ..runtime.native import engine, template
from ..runtime.native.layout import PlanEntryT, PyMethodDefT
from . import plan as plans

METH_FASTCALL, METH_KEYWORDS = 0x80, 0x02  # CPython's methodobject.h
NPY_ARRAY_CARRAY = 0x0001 | 0x0100 | 0x0400  # numpy's ndarraytypes.h: C_CONTIGUOUS | ALIGNED | WRITEABLE
NPY_ABI_VERSION = 0x02000000  # numpy's _numpyconfig.h: the ABI whose table the indices below are of
# numpy's C API table (`_ARRAY_API`; __multiarray_api.h): entry index of each function used
NUMPY_API = {"PyArray_NewFromDescr": 94, "PyArray_SetBaseObject": 282}
_NUMPY_TYPE, _NUMPY_ABI = 2, 0  # PyArray_Type, PyArray_GetNDArrayCVersion
PYTHON_API = ("PyEval_SaveThread", "PyEval_RestoreThread", "PyObject_Vectorcall", "PyCapsule_New",
              "PyCapsule_GetPointer", "PyLong_FromLong", "PyLong_FromVoidPtr", "Py_DecRef", "Py_IncRef",
              "PyTuple_New", "PyTuple_SetItem")

_api = ctypes.pythonapi
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
    ("PyCapsule_New", _api))
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))
_function_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.py_object, ctypes.py_object)(
    ("PyCFunction_NewEx", _api))
_incref = ctypes.PYFUNCTYPE(None, ctypes.py_object)(("Py_IncRef", _api))

_lock = threading.Lock()
_code = None  # the compiled entry.ll, once; False when numpy's C API is not the one expected


def _numpy_api() -> dict[str, int] | None:
    """The addresses of the numpy functions entry.ll calls, or None when the running numpy's
    table is not the one whose indices NUMPY_API holds (its ABI, its array type)."""
    capsule = getattr(getattr(getattr(np, "_core", None), "_multiarray_umath", None), "_ARRAY_API", None)
    table_at = _capsule_pointer(capsule, None) if capsule is not None else None
    if not table_at:
        return None
    table = (ctypes.c_void_p * (max(NUMPY_API.values()) + 1)).from_address(table_at)
    abi = ctypes.CFUNCTYPE(ctypes.c_uint)(table[_NUMPY_ABI])()
    if abi != NPY_ABI_VERSION or table[_NUMPY_TYPE] != id(np.ndarray):
        return None
    return {name: table[index] for name, index in NUMPY_API.items()}


def ir_text() -> str:
    return template.render(__package__, "entry.ll", DECLINED=plans.DECLINED, NPY_ARRAY_CARRAY=NPY_ARRAY_CARRAY)


def native_code():
    """entry.ll compiled once per process (after jv_invoke), or False when it cannot run here."""
    global _code
    with _lock:
        if _code is None:
            numpy_api = _numpy_api() if plans.native_code() else None
            if numpy_api is None:
                _code = False
                return _code
            engine.provide({name: ctypes.cast(getattr(_api, name), ctypes.c_void_p).value for name in PYTHON_API})
            engine.provide(numpy_api)
            _code = engine.jit_module(ir_text())
    return _code


def native_entry(plan: "plans.CallPlan", general, name: str):
    """The builtin calling `plan` natively, `general(*args, **kwargs)` for what it declines;
    None when the plan's results are not all of static shapes or entry.ll cannot run here.

    The builtin keeps the plan (and what keeps the function's code alive) through its capsule,
    but `general` only weakly: the builtin lives in the function object's class, so a strong
    reference back would be a cycle the collector cannot see through the capsule."""
    if not plan.static_results:
        return None
    code = native_code()
    if not code:
        return None
    general = _weak_call(general, name)
    dtypes = [dtype for _, dtype, _, _ in plan.result_kinds]
    descrs = (ctypes.c_void_p * max(1, len(dtypes)))(*map(id, dtypes))
    complete = plan.complete  # one bound method, kept: the record holds its address
    record = PlanEntryT(plan=plan.address, general=id(general), complete=id(complete),
                        descrs=ctypes.addressof(descrs), words=plan.io_words)
    label = name.encode()
    method = PyMethodDefT(name=ctypes.cast(ctypes.c_char_p(label), ctypes.c_void_p).value,
                          meth=code.address("jv_plan_entry"), flags=METH_FASTCALL | METH_KEYWORDS)
    owner = (plan, general, complete, dtypes, descrs, record, label, method, code)
    record.owner = id(owner)
    capsule = _capsule_new(ctypes.addressof(record), None, code.address("jv_plan_entry_release"))
    _incref(owner)  # the capsule's, dropped by its destructor
    return _function_new(ctypes.addressof(method), capsule, None)


def _weak_call(method, name: str):
    """`method` (a bound method) called through a weak reference to its object."""
    ref, func = weakref.ref(method.__self__), method.__func__

    def general(*args, **kwargs):
        owner = ref()
        if owner is None:
            raise Error(f"{name}: its jitvm.Function was released; call it through its module")
        return func(owner, *args, **kwargs)
    return general
