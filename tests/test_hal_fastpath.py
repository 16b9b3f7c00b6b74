"""The HAL's native fast paths (runtime.modules.hal.fastpath) against the Python exports.

Each case calls an export twice through the native import ABI, as compiled code does: once
through its fast path and once through the Python trampoline alone. Outcomes must be equal:
the same result ref (with one new reference) or the same error, status and message. Cases
cover the ordinary answer and every way a fast path must defer: null and foreign refs,
failing checks, IREE's compatible element types, more dims than the facts hold, and i32
bit sets whose top bit Python reads sign-extended."""

from __future__ import annotations

import ctypes

import pytest

from jitvm.errors import Error
from jitvm.runtime.vm import abi, traps
from jitvm.runtime.native.layout import TrapT
from jitvm.runtime.modules import HalModule
from jitvm.runtime.modules.hal import fastpath
from jitvm.runtime.modules.hal import types as t
from jitvm.runtime.vm.objects import Ref, VmBuffer

F32 = t.element_type(t.NUMERICAL_FLOAT_IEEE, 32)
I32 = t.element_type(t.NUMERICAL_INTEGER, 32)
SI32 = t.element_type(t.NUMERICAL_INTEGER_SIGNED, 32)
DENSE = t.ENCODING_DENSE_ROW_MAJOR


@pytest.fixture(scope="module")
def hal():
    return HalModule(None)


def _call_python(hal, name, *args):
    out = hal.lookup(name).call(list(args))
    return out[0] if out else None


def _native(hal, name, args, fast: bool):
    """(result slots, None) or (None, (error type, status, message)) of one call through the
    native ABI: the fast path (which may defer to Python) or the Python trampoline."""
    fn = hal.lookup(name)
    entry, ctx = fn.native_entry()
    if fast:
        assert ctx, f"{name} has no fast path"
    else:
        entry, ctx = ctx or entry, 0  # the trampoline alone
    results = abi.result_array(fn.cconv)
    trap = TrapT()
    slots = abi.pack_args(fn.cconv, args)
    status = abi.NATIVE_FN(entry)(ctx, slots, results, ctypes.addressof(trap))
    if status:
        exc = traps.take_exception(trap, lambda *a: None)
        return None, (type(exc), getattr(exc, "status", None), str(exc).split("\n")[0])
    return [results[i] for i in range(len(fn.cconv.results))], None


def _same(hal, name, *args):
    """Both ways agree; returns the fast path's outcome."""
    fast = _native(hal, name, args, fast=True)
    slow = _native(hal, name, args, fast=False)
    if fast[1] is None:
        assert slow[1] is None, (name, slow[1])
        assert fast[0] == slow[0]
        for addr in fast[0] + slow[0]:  # both handed over one reference each
            if name.endswith(("buffer", "allocator")) and addr:
                Ref(addr, retain_it=False)
    else:
        assert fast[1] == slow[1], (name, fast[1], slow[1])
    return fast


@pytest.fixture(scope="module")
def objects(hal):
    device = _call_python(hal, "devices.get", 0)
    allocator = _call_python(hal, "device.allocator", device)
    buf = _call_python(hal, "allocator.allocate", allocator, -1, t.MEMORY_TYPE_DEVICE_LOCAL, t.USAGE_DEFAULT, 96)
    view = _call_python(hal, "buffer_view.create", buf, 0, 96, F32, DENSE, [(4,), (6,)])
    ints = _call_python(hal, "buffer_view.create", buf, 0, 96, SI32, DENSE, [(24,)])
    opaque = _call_python(hal, "buffer_view.create", buf, 0, 96, F32, t.ENCODING_OPAQUE, [(24,)])
    deep = _call_python(hal, "buffer_view.create", buf, 0, 4, F32, DENSE, [(1,)] * 9)
    message = VmBuffer.from_bytes(b"input 0")
    return dict(device=device, allocator=allocator, buf=buf, view=view, ints=ints, opaque=opaque,
                deep=deep, message=message)


def test_fast_paths_are_bound_to_the_four_queries(hal):
    for name in ("buffer_view.buffer", "buffer_view.assert", "buffer.assert", "device.allocator"):
        entry, ctx = hal.lookup(name).native_entry()
        assert ctx and entry != ctx
    entry, ctx = hal.lookup("fence.create").native_entry()
    assert ctx == 0


def test_buffer_view_buffer_and_device_allocator(hal, objects):
    o = objects
    before = o["buf"].refcount
    (got,), err = _native(hal, "buffer_view.buffer", [o["view"]], fast=True)
    assert err is None and got == o["buf"].addr and o["buf"].refcount == before + 1
    Ref(got, retain_it=False)  # drop the reference the call handed over
    assert o["buf"].refcount == before
    _same(hal, "buffer_view.buffer", o["view"])
    assert _same(hal, "buffer_view.buffer", None)[1][0] is not None
    assert _same(hal, "buffer_view.buffer", o["buf"])[1] is not None  # a buffer is not a view
    (alloc,), err = _same(hal, "device.allocator", o["device"])
    assert err is None and alloc == o["allocator"].addr
    assert _same(hal, "device.allocator", o["allocator"])[1] is not None


@pytest.mark.parametrize("case", [
    "ok", "exact_length", "too_short", "memory_type", "usage", "top_bit_usage", "top_bit_types",
    "null_message", "message_not_a_buffer", "allocator_is_a_device", "not_a_buffer",
])
def test_buffer_assert(hal, objects, case):
    o = objects
    args = dict(buffer=o["buf"], message=o["message"], allocator=o["allocator"], minimum=64,
                types=t.MEMORY_TYPE_DEVICE_LOCAL, usage=t.USAGE_DISPATCH_STORAGE)
    args.update({
        "ok": {}, "exact_length": dict(minimum=96), "too_short": dict(minimum=97),
        "memory_type": dict(types=t.MEMORY_TYPE_DEVICE_LOCAL | 0x400),
        "usage": dict(usage=0x40000000), "top_bit_usage": dict(usage=-0x80000000 | t.USAGE_DISPATCH_STORAGE),
        "top_bit_types": dict(types=-0x80000000), "null_message": dict(message=None),
        "message_not_a_buffer": dict(message=o["view"]), "allocator_is_a_device": dict(allocator=o["device"]),
        "not_a_buffer": dict(buffer=o["view"]),
    }[case])
    _, err = _same(hal, "buffer.assert", args["buffer"], args["message"], args["allocator"], args["minimum"],
                   args["types"], args["usage"])
    assert (err is None) == (case in ("ok", "exact_length")), err


@pytest.mark.parametrize("case", [
    "ok", "opaque_view", "wrong_encoding", "wrong_type", "compatible_ints", "rank", "dim", "dim_smaller",
    "nine_dims", "nine_dims_wrong", "null_view", "null_message", "buffer_not_view",
])
def test_buffer_view_assert(hal, objects, case):
    o = objects
    view, message, etype, enc, dims = o["view"], o["message"], F32, DENSE, [(4,), (6,)]
    if case == "opaque_view":
        view, enc, dims = o["opaque"], 0x1234, [(24,)]
    elif case == "wrong_encoding":
        enc = 0x1234
    elif case == "wrong_type":
        etype = I32
    elif case == "compatible_ints":
        view, etype, dims = o["ints"], I32, [(24,)]
    elif case == "rank":
        dims = [(24,)]
    elif case == "dim":
        dims = [(4,), (7,)]
    elif case == "dim_smaller":
        dims = [(3,), (6,)]
    elif case in ("nine_dims", "nine_dims_wrong"):
        view, dims = o["deep"], [(1,)] * 8 + [(1 if case == "nine_dims" else 2,)]
    elif case == "null_view":
        view = None
    elif case == "null_message":
        message = None
    elif case == "buffer_not_view":
        view = o["buf"]
    _, err = _same(hal, "buffer_view.assert", view, message, etype, enc, dims)
    assert (err is None) == (case in ("ok", "opaque_view", "compatible_ints", "nine_dims")), err
    if err is not None:
        assert issubclass(err[0], Error)


def test_disabled_fast_paths_bind_the_python_implementation(monkeypatch):
    monkeypatch.setattr(fastpath, "enabled", False)
    fresh = HalModule(None)
    entry, ctx = fresh.lookup("buffer_view.assert").native_entry()
    assert ctx == 0


@pytest.mark.parametrize("bad", ["shape", "rank", "element_type"])
def test_compiled_host_code_reports_iree_s_errors_through_its_fast_paths(corpus_module, bad):
    """A raw call of a compiled function with a wrong buffer view fails in its
    hal.buffer_view.assert: the JIT (fast path deferring to Python) raises what the
    interpreter (Python directly) raises, message and backtrace included."""
    import numpy as np

    import jitvm
    from jitvm.api.marshal import array_to_view

    vmfb = str(corpus_module("mlir/matmul").vmfb)
    a = {"shape": np.zeros((4, 7), np.float32), "rank": np.zeros((32,), np.float32),
         "element_type": np.zeros((4, 8), np.int32)}[bad]
    b = np.zeros((8, 5), np.float32)
    outcomes = []
    for backend in ("jit", "interp"):
        fn = jitvm.load(vmfb, backend=backend).function("matmul_4x8x5")
        hal = fn.module.hal
        views = [array_to_view(hal, x, t.ELEMENT_OF_NUMPY[x.dtype]) for x in (a, b)]
        with pytest.raises(jitvm.Trap) as e:
            fn.vm_function.call(views)
        outcomes.append((e.value.status, str(e.value)))
    assert outcomes[0] == outcomes[1]
    assert "input0" in outcomes[0][1] or "input 0" in outcomes[0][1]
