"""The targets of jitvm.runtime: each script runs unchanged under iree.runtime and under
jitvm.runtime (only the import swapped) and the two results must be identical, bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

import jitvm
from tests.dropin_support import build, run, run_both

ABS = """
module @module_a {
  func.func @abs(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = math.absf %x : tensor<4xf32>
    return %r : tensor<4xf32>
  }
}
"""
MUL_ABS = """
module @module_b {
  func.func private @module_a.abs(tensor<4xf32>) -> tensor<4xf32>
  func.func @mul_abs(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
    %a = call @module_a.abs(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %r = arith.mulf %a, %y : tensor<4xf32>
    return %r : tensor<4xf32>
  }
}
"""
RUN = """
module @module_c {
  func.func private @module_b.mul_abs(tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.func private @host.twice(i32) -> i32
  func.func @run(%x: tensor<4xf32>, %n: i32) -> (tensor<4xf32>, i32) {
    %a = call @module_b.mul_abs(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %m = call @host.twice(%n) : (i32) -> i32
    return %a, %m : tensor<4xf32>, i32
  }
}
"""


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    d = tmp_path_factory.mktemp("three")
    for name, text in (("ma", ABS), ("mb", MUL_ABS), ("mc", RUN)):
        (d / f"{name}.vmfb").write_bytes(build(name, text).read_bytes())
    return d


def test_three_modules_and_a_python_host_module_in_one_system_context(three):
    script = """
import numpy as np
import iree.runtime as ireert
class Host:
    def __init__(self, iface):
        self.calls = 0
    def twice(self, n):
        self.calls += 1
        return 2 * n + self.calls
iface = ireert.PyModuleInterface("host", Host)
iface.export("twice", "0i_i", Host.twice)
config = ireert.Config("local-sync")
mods = [ireert.VmModule.mmap(config.vm_instance, str(WORKDIR / f"{n}.vmfb")) for n in ("ma", "mb")]
mods += [iface.create(), ireert.VmModule.mmap(config.vm_instance, str(WORKDIR / "mc.vmfb"))]
ctx = ireert.SystemContext(vm_modules=mods, config=config)
x = np.array([-1.5, 2, -3, 4], np.float32)
r1 = ctx.modules.module_c.run(x, 20)
r2 = ctx.modules.module_c["run"](x, 20)
result = [r1[0], r1[1], r2[1], ctx.modules.module_b.mul_abs(x, x).to_host(), sorted(ctx.modules.keys()),
          [m.name for m in mods], ctx.modules.module_a.vm_module.function_names]
"""
    want, got = run_both(script, three)
    assert got == want


def test_a_host_module_written_in_python_through_raw_invoke(tmp_path):
    script = """
import iree.runtime as ireert
class M:
    def __init__(self, iface):
        self.seen = []
    def add(self, a, b):
        self.seen.append((a, b))
        return a + b, a * b
    def make(self):
        l = ireert.VmVariantList(2)
        l.push_int(7)
        l.push_float(1.5)
        return l.ref
iface = ireert.PyModuleInterface("pm", M)
iface.export("add", "0II_II", M.add)
iface.export("make", "0v_r", M.make)
instance = ireert.VmInstance()
m = iface.create()
ctx = ireert.VmContext(instance, modules=(m,))
args = ireert.VmVariantList(2)
args.push_int(40)
args.push_int(2)
out = ireert.VmVariantList(2)
ctx.invoke(m.lookup_function("add"), args, out)
made = ireert.VmVariantList(1)
ctx.invoke(m.lookup_function("make"), ireert.VmVariantList(0), made)
inner = made.get_as_list(0)
result = [repr(out), len(out), out.get_variant(0), out.get_variant(1), iface.initialized, m.name,
          m.function_names, inner.get_variant(0), inner.get_variant(1), repr(made)]
"""
    want, got = run_both(script, tmp_path)
    assert got == want


PARAMS = """
util.global private @w = #flow.parameter.named<"model"::"w"> : tensor<4x4xf32>
util.global private @b = #flow.parameter.named<"model"::"b"> : tensor<4xf32>
util.global private @s = #flow.parameter.named<"model"::"s"> : tensor<4xf32>
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = util.global.load @w : tensor<4x4xf32>
  %b = util.global.load @b : tensor<4xf32>
  %s = util.global.load @s : tensor<4xf32>
  %init = tensor.empty() : tensor<4xf32>
  %z = arith.constant 0.0 : f32
  %acc = linalg.fill ins(%z : f32) outs(%init : tensor<4xf32>) -> tensor<4xf32>
  %m = linalg.matvec ins(%w, %x : tensor<4x4xf32>, tensor<4xf32>) outs(%acc : tensor<4xf32>) -> tensor<4xf32>
  %a = arith.addf %m, %b : tensor<4xf32>
  %r = arith.mulf %a, %s : tensor<4xf32>
  return %r : tensor<4xf32>
}
"""


SCALARS = """
func.func @rank0(%a: tensor<f32>, %b: tensor<i32>) -> (tensor<f32>, tensor<i32>) {
  %s = arith.mulf %a, %a : tensor<f32>
  %t = arith.addi %b, %b : tensor<i32>
  return %s, %t : tensor<f32>, tensor<i32>
}
func.func @bf16(%a: tensor<3xbf16>) -> (tensor<3xbf16>, tensor<3xf32>) {
  %e = arith.extf %a : tensor<3xbf16> to tensor<3xf32>
  %s = arith.mulf %e, %e : tensor<3xf32>
  %t = arith.truncf %s : tensor<3xf32> to tensor<3xbf16>
  return %t, %s : tensor<3xbf16>, tensor<3xf32>
}
func.func @f16(%a: tensor<2x2xf16>, %b: tensor<2xi16>) -> (tensor<2x2xf16>, tensor<2xi16>) {
  %e = tensor.empty() : tensor<2x2xf16>
  %h = linalg.transpose ins(%a : tensor<2x2xf16>) outs(%e : tensor<2x2xf16>) permutation = [1, 0]
  %t = arith.muli %b, %b : tensor<2xi16>
  return %h, %t : tensor<2x2xf16>, tensor<2xi16>
}
"""


def test_rank0_bf16_and_f16_arguments(tmp_path):
    (tmp_path / "s.vmfb").write_bytes(build("scalars", SCALARS).read_bytes())
    script = """
import numpy as np, ml_dtypes
import iree.runtime as ireert
m = ireert.load_vm_flatbuffer_file(str(WORKDIR / "s.vmfb"), driver="local-sync")
a, b = m.rank0(np.float32(3.5), np.array(-7, np.int32))
c, d = m.rank0(np.array(1.25, np.float32), np.int32(5))
e, f = m.bf16(np.array([1.5, -2.25, 3e3], ml_dtypes.bfloat16))
g, h = m.f16(np.array([[0.5, -65000], [1e-7, 3]], np.float16), np.array([300, -7], np.int16))
result = [a, b, c, d, e, f, g, h, a.shape, e.dtype.name, str(a.dtype)]
"""
    want, got = run_both(script, tmp_path)
    assert got == want


ASYNC = """
func.func @scale(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %s = arith.addf %a, %b : tensor<4xf32>
  %m = arith.mulf %s, %a : tensor<4xf32>
  return %m : tensor<4xf32>
}
"""


def test_an_async_external_function_with_caller_fences(tmp_path):
    (tmp_path / "a.vmfb").write_bytes(build("async", ASYNC, "--iree-execution-model=async-external").read_bytes())
    script = """
import numpy as np
import iree.runtime as ireert
config = ireert.Config("local-sync")
module = ireert.VmModule.mmap(config.vm_instance, str(WORKDIR / "a.vmfb"))
ctx = ireert.SystemContext(vm_modules=[module], config=config)
device = config.device
fn = module.lookup_function("scale")
a = np.array([1, 2, 3, 4], np.float32)
b = np.array([0.5, -1, 2, 0], np.float32)
args = ireert.VmVariantList(4)
for x in (a, b):
    args.push_ref(device.allocator.allocate_buffer_copy(memory_type=ireert.MemoryType.DEVICE_LOCAL,
                  allowed_usage=ireert.BufferUsage.DEFAULT, device=device, buffer=x,
                  element_type=ireert.HalElementType.FLOAT_32))
sem = device.create_semaphore(0)
args.push_ref(ireert.HalFence.create_at(sem, 1))
signal = ireert.HalFence.create_at(sem, 2)
args.push_ref(signal)
sem.signal(1)
out = ireert.VmVariantList(1)
ctx.vm_context.invoke(fn, args, out)
signal.wait()
view = out.get_as_object(0, ireert.HalBufferView)
result = [ireert.DeviceArray(device, view, implicit_host_transfer=True).to_host(), sem.query(), view.shape,
          int(view.element_type), fn.reflection, fn.name, signal.timepoint_count]
"""
    want, got = run_both(script, tmp_path)
    assert got == want


def _tiny_onnx() -> bytes:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3), "W")
    b = numpy_helper.from_array(np.array([0.1, -0.2, 0.3], np.float32), "B")
    nodes = [helper.make_node("MatMul", ["x", "W"], ["m"]), helper.make_node("Add", ["m", "B"], ["a"]),
             helper.make_node("Tanh", ["a"], ["t"]), helper.make_node("Softmax", ["t"], ["y"], axis=-1)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], initializer=[w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model.SerializeToString()


def test_an_onnx_exported_model_called_with_numpy(tmp_path):
    (tmp_path / "g.vmfb").write_bytes(build("onnx_tiny", "", onnx_model=_tiny_onnx()).read_bytes())
    script = """
import numpy as np
import iree.runtime as ireert
m = ireert.load_vm_flatbuffer_file(str(WORKDIR / "g.vmfb"), driver="local-sync")
x = np.arange(8, dtype=np.float32).reshape(2, 4) / 7
y = m.g(x)
result = [y.to_host(), np.asarray(y), y.shape, str(y.dtype), m.g.vm_function.reflection, m.vm_module.function_names]
"""
    want, got = run_both(script, tmp_path)
    assert got == want


def test_errors_are_the_exception_classes_iree_raises(tmp_path):
    (tmp_path / "s.vmfb").write_bytes(build("scalars", SCALARS).read_bytes())
    script = """
import numpy as np
import iree.runtime as ireert
m = ireert.load_vm_flatbuffer_file(str(WORKDIR / "s.vmfb"), driver="local-sync")
result = []
for call in (lambda: m.nope, lambda: m["nope"], lambda: m.rank0(np.float32(1)),
             lambda: m.rank0(np.zeros(2, np.float32), np.int32(1)),
             lambda: m.rank0(np.int32(1), np.int32(1)), lambda: m.rank0(1.5, np.int32(1))):
    try:
        call()
        result.append(None)
    except Exception as e:
        result.append(e)
"""
    want, got = run(script, "iree", tmp_path), run(script, "jitvm", tmp_path)
    assert all(type(w).__module__ == "builtins" for w in want), want
    for w, g in zip(want, got, strict=True):
        assert isinstance(g, type(w)) and isinstance(g, jitvm.Error), (w, g)
