"""jitvm.load and jitvm.runtime for code written against iree.runtime: each of these failed
before (TypeError, wrong exception class, refused inputs, missing names)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import jitvm
from tests.dropin_support import build
from tests.test_dropin_differential import ABS, ASYNC, MUL_ABS, SCALARS, _tiny_onnx

LIST = """
func.func @count(%l: !util.list<?>) -> (index, tensor<2xf32>) {
  %n = util.list.size %l : !util.list<?>
  %c0 = arith.constant 0 : index
  %bv = util.list.get %l[%c0] : !util.list<?> -> !hal.buffer_view
  %x = hal.tensor.import %bv : !hal.buffer_view -> tensor<2xf32>
  %y = arith.addf %x, %x : tensor<2xf32>
  return %n, %y : index, tensor<2xf32>
}
"""
TWO_DEVICES = """
module @two attributes {stream.affinity.default = #hal.device.affinity<@device_a>} {
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = arith.addf %x, %x : tensor<4xf32>
  %b = flow.tensor.transfer %a : tensor<4xf32> to #hal.device.promise<@device_b>
  %c = arith.mulf %b, %b : tensor<4xf32>
  %d = flow.tensor.transfer %c : tensor<4xf32> to #hal.device.promise<@device_a>
  return %d : tensor<4xf32>
}
}
"""
TWO_DEVICE_TARGET = ("--iree-hal-target-device=device_a=local[0]", "--iree-hal-target-device=device_b=local[1]",
                     "--iree-hal-local-target-device-backends=vmvx")


def test_load_takes_iree_drivers():
    m = jitvm.load(str(build("scalars", SCALARS)), driver="local-sync")
    a, b = m.rank0(np.float32(3), np.int32(4))
    assert a.shape == () and float(a) == 9 and int(b) == 8
    with pytest.raises(jitvm.ArgumentError, match="unknown driver 'cuda'"):
        jitvm.load(str(build("scalars", SCALARS)), driver="cuda")


def test_errors_are_value_and_runtime_errors():
    assert issubclass(jitvm.ArgumentError, ValueError)
    assert issubclass(jitvm.Trap, RuntimeError)
    assert isinstance(jitvm.Trap(3, "x"), ValueError) and isinstance(jitvm.Trap(11, "x"), IndexError)
    assert isinstance(jitvm.Trap(12, "x"), NotImplementedError) and not isinstance(jitvm.Trap(2, "x"), ValueError)
    assert jitvm.Trap(18, "x").status_name == "INCOMPATIBLE"
    m = jitvm.load(str(build("scalars", SCALARS)))
    for lookup in (lambda: m.nope, lambda: m["nope"]):
        with pytest.raises(jitvm.Error) as e:
            lookup()
        assert isinstance(e.value, AttributeError) and isinstance(e.value, KeyError)
    with pytest.raises(ValueError):
        m.rank0(np.zeros(2, np.float32), np.int32(1))


def test_load_takes_examples_by_name():
    assert jitvm.load("example:cnn").exports == ["predict"]


def test_several_modules_in_one_context():
    m = jitvm.load([str(build("ma", ABS)), str(build("mb", MUL_ABS))])
    x = np.array([-1.5, 2, -3, 4], np.float32)
    assert m.name == "module_b" and sorted(m.modules) == ["module_a", "module_b"]
    assert m.mul_abs(x, x).tolist() == (np.abs(x) * x).tolist()
    assert m.modules["module_a"].abs(x).tolist() == np.abs(x).tolist()


def test_a_missing_import_says_which():
    with pytest.raises(jitvm.UnsupportedError, match="module_a"):
        jitvm.load(str(build("mb", MUL_ABS)))


def test_functions_without_reflection_take_numpy():
    """iree-import-onnx writes no iree.abi.declaration: marshal by the VM signature."""
    rt = pytest.importorskip("iree.runtime")
    path = str(build("onnx_tiny", "", onnx_model=_tiny_onnx()))
    m = jitvm.load(path)
    assert not m.g.reflected
    x = np.arange(8, dtype=np.float32).reshape(2, 4) / 7
    want = rt.load_vm_flatbuffer_file(path, driver="local-sync").g(x).to_host()
    assert m.g(x).tobytes() == want.tobytes()


def test_python_lists_for_list_arguments():
    m = jitvm.load(str(build("list", LIST)))
    n, y = m.count([np.array([1.5, -2], np.float32), 5, 2.5, [1, 2]])
    assert n == 4 and y.tolist() == [3.0, -4.0]


def test_bf16_arrays():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    m = jitvm.load(str(build("scalars", SCALARS)))
    x = np.array([1.5, -2.25, 3e3], ml_dtypes.bfloat16)
    t, s = m.bf16(x)
    wide = x.astype(np.float32)
    assert t.dtype == ml_dtypes.bfloat16 and s.tobytes() == (wide * wide).tobytes()
    assert t.tobytes() == (wide * wide).astype(ml_dtypes.bfloat16).tobytes()


def test_caller_fences_for_async_functions():
    from jitvm.runtime.modules.hal.fence import HalFence, Semaphore

    m = jitvm.load(str(build("async", ASYNC, "--iree-execution-model=async-external")))
    a, b = np.array([1, 2, 3, 4], np.float32), np.array([0.5, -1, 2, 0], np.float32)
    sem = Semaphore(0)
    wait, signal = HalFence.new([(sem, 1)]), HalFence.new([(sem, 2)])
    sem.signal(1)
    got = m.scale(a, b, wait, signal)
    assert sem.value == 2 and got.tolist() == ((a + b) * a).tolist()
    assert m.scale(a, b).tolist() == got.tolist()  # without fences: waited for as before


def test_a_second_device():
    path = str(build("two_devices", TWO_DEVICES, target=TWO_DEVICE_TARGET))
    x = np.array([1, 2, 3, 4], np.float32)
    assert jitvm.load(path, driver=["local-sync", "local-sync"]).f(x).tolist() == ((2 * x) ** 2).tolist()
    with pytest.raises(jitvm.Trap, match="INCOMPATIBLE; HAL device `device_b` not found"):
        jitvm.load(path, driver="local-sync")


def test_runtime_names_load_lazily():
    """`import jitvm.runtime.vm.objects` does not load the API; `jitvm.runtime.Config` does."""
    code = ("import sys, jitvm.runtime.vm.objects; a = 'jitvm.api.dropin' in sys.modules; "
            "import jitvm.runtime as rt; rt.Config; print(a, 'jitvm.api.dropin' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True"]
    import jitvm.runtime as rt

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        rt.nope
    assert {"Config", "SystemContext", "VmModule", "DeviceArray", "ParameterIndex"} <= set(dir(rt))


def test_the_dropin_compiles_lazily_in_jitvm_tier(monkeypatch):
    """Like jitvm.load: nothing compiled at load, each function at its first call, in
    JITVM_TIER's tier (auto without it); a tier it does not know is an ArgumentError."""
    import jitvm.runtime as ireert
    from jitvm.lower import lazy

    monkeypatch.setenv("JITVM_TIER", "baseline")
    config = ireert.Config("local-task")
    vm = ireert.VmModule.mmap(config.vm_instance, str(build("scalars", SCALARS)))
    ctx = ireert.SystemContext(vm_modules=[vm], config=config)
    exe = vm._loaded[id(config.vm_instance.backend)].executable
    assert isinstance(exe, lazy.LazyExecutable) and exe.tier == "baseline"
    untouched = exe.compile_stats()["uncompiled"]
    a, b = getattr(ctx.modules, vm.name).rank0(np.float32(3), np.int32(4))
    assert float(a.to_host()) == 9 and int(b.to_host()) == 8
    assert exe.compile_stats()["uncompiled"] == untouched - 1  # bf16 never called: never compiled
    monkeypatch.delenv("JITVM_TIER")
    assert ireert.VmInstance().backend.tier == "auto"
    monkeypatch.setenv("JITVM_TIER", "fast")
    with pytest.raises(jitvm.ArgumentError, match="unknown tier"):
        ireert.VmInstance()
