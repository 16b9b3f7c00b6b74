"""jitvm.load's Python surface: values in and out as iree.runtime gives them, and argument errors.

Result types are compared with what iree.runtime returns for the same call (one result
unwrapped, several as a tuple, none as None; ints, floats, arrays with IREE's dtypes incl.
bool for i1). Wrong argument counts, dtypes, shapes or scalar values raise
jitvm.ArgumentError naming the function, the argument and what was expected.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitvm
from jitvm import ArgumentError, FormatError
from jitvm.api import get_backend
from jitvm.api.declaration import parse_declaration
from tests.hal_support import backend_under_test, iree_call, iree_session

BACKEND = backend_under_test()


@pytest.fixture(scope="module")
def load(corpus_module):
    cache = {}

    def get(name):
        if name not in cache:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                cache[name] = jitvm.load(str(corpus_module(name).vmfb), backend=BACKEND)
        return cache[name]

    return get


def test_module_lists_exports_and_rejects_unknown_names(load):
    m = load("mlir/multi_result")
    assert m.exports == ["split_stats", "mixed"]
    assert callable(m.mixed) and m["mixed"] is m.mixed
    with pytest.raises(AttributeError, match="module 'module' has no exported function 'nope' "
                                             r"\(exports: split_stats, mixed\)"):
        m.nope
    with pytest.raises(KeyError):
        m["nope"]


@pytest.mark.parametrize("name,function,args", [
    ("mlir/multi_result", "mixed", (np.arange(3, dtype=np.int32), np.ones((2, 2), np.float32), 5)),
    ("mlir/scalars", "scalar_i32", (3, 4)),
    ("mlir/scalars", "scalar_mixed", (1, 2.5, 7)),
    ("mlir/compare_select", "cmp_f32", (np.arange(16, dtype=np.float32), np.full(16, 3, np.float32))),
    ("mlir/reductions", "sum_all_i32", (np.arange(64, dtype=np.int32),)),
    ("mlir/dynamic_shapes", "dyn_rowsum", (np.ones((5, 3), np.float32),)),
    ("mlir/i64_arith", "i64_scalar", (2 ** 40, -3)),
])
def test_result_types_match_iree_runtime(load, corpus_module, name, function, args):
    got = load(name)[function](*args)
    oracle, keep = iree_session(corpus_module(name).vmfb, False)
    trapped, message, want = iree_call(oracle, function, args)
    assert not trapped, message
    got_list = list(got) if isinstance(got, tuple) else [got]
    assert isinstance(got, tuple) == (len(want) > 1)
    for g, w in zip(got_list, want):
        assert type(g) is type(w)
        if isinstance(w, np.ndarray):
            assert g.dtype == w.dtype and g.shape == w.shape and np.array_equal(g, w)
        else:
            assert g == w


def test_i1_tensors_are_bool_arrays_both_ways(load):
    m = load("mlir/compare_select")
    a = np.linspace(-2, 2, 16, dtype=np.float32)
    lt, le, eq, ne, sel = m.cmp_f32(a, np.zeros(16, np.float32))
    assert lt.dtype == np.bool_ and lt.tolist() == (a < 0).tolist()
    out = m.select_mix(a > 0, a, -a)
    assert out.tolist() == np.abs(a).tolist()
    out8 = m.select_mix((a > 0).astype(np.int8), a, -a)  # same-width integers are accepted, like IREE
    assert out8.tolist() == out.tolist()


def test_zero_d_results_and_dynamic_shapes(load):
    r = load("mlir/reductions").sum_all_i32(np.arange(64, dtype=np.int32))
    assert isinstance(r, np.ndarray) and r.shape == () and int(r) == 2016
    m = load("mlir/dynamic_shapes")
    for rows, cols in ((1, 1), (3, 9)):
        a = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
        assert m.dyn_add(a, a).tolist() == ((a + a) * a).tolist()


def test_module_state_persists_across_calls(load):
    m = load("mlir/mutable_global")
    first = m.bump(5)
    assert m.bump(5) == first + 6
    count, acc = m.read_state()
    assert count == first + 6 and acc.dtype == np.float32


def test_array_likes_and_numpy_scalars(load):
    m = load("mlir/multi_result")
    r = m.mixed([1, 2, 3], [[1.0, 2.0], [3.0, 4.0]], np.int32(2))
    assert r[1].tolist() == [3, 4, 5] and r[2].tolist() == [[1, 4], [9, 16]]  # a + s, b * b
    s = load("mlir/scalars")
    assert s.scalar_f32(1, np.float32(0.5))[0] == 1.5  # ints are fine for float arguments


def test_argument_count(load):
    with pytest.raises(ArgumentError, match=r"module.mixed takes 3 arguments \(%input0: tensor<3xi32>, "
                                            r"%input1: tensor<2x2xf32>, %input2: i32\), got 1"):
        load("mlir/multi_result").mixed(np.zeros(3, np.int32))


def test_argument_dtype(load):
    m = load("mlir/compare_select")
    with pytest.raises(ArgumentError, match=r"module.select_mix argument 1 \(%input1: tensor<16xf32>\) "
                                            r"expects dtype float32, got float64"):
        m.select_mix(np.zeros(16, bool), np.zeros(16), np.zeros(16, np.float32))
    with pytest.raises(ArgumentError, match=r"argument 0 \(%input0: tensor<16xi1>\) expects dtype bool, "
                                            r"got int32"):
        m.select_mix(np.zeros(16, np.int32), np.zeros(16, np.float32), np.zeros(16, np.float32))
    with pytest.raises(ArgumentError, match=r"argument 0 \(%input0: tensor<3xi32>\) expects an array of int32, "
                                            r"got list of float64"):
        load("mlir/multi_result").mixed([1.5, 2, 3], np.ones((2, 2), np.float32), 1)
    with pytest.raises(ArgumentError, match=r"argument 0 \(%input0: tensor<3xi32>\) expects int32 values; "
                                            r"\[1, 2, 4294967296\] does not convert exactly"):
        load("mlir/multi_result").mixed([1, 2, 2 ** 32], np.ones((2, 2), np.float32), 1)


def test_argument_shape(load):
    with pytest.raises(ArgumentError, match=r"module.select_mix argument 2 \(%input2: tensor<16xf32>\) "
                                            r"expects shape \(16,\), got \(8,\)"):
        load("mlir/compare_select").select_mix(np.zeros(16, bool), np.zeros(16, np.float32),
                                               np.zeros(8, np.float32))
    with pytest.raises(ArgumentError, match=r"expects shape \(\?, \?\), got \(6,\)"):
        load("mlir/dynamic_shapes").dyn_rowsum(np.zeros(6, np.float32))


def test_scalar_arguments(load):
    s = load("mlir/scalars")
    with pytest.raises(ArgumentError, match=r"module.scalar_i32 argument 0 \(%input0: i32\) expects an integer, "
                                            r"got 3.5"):
        s.scalar_i32(3.5, 1)
    with pytest.raises(ArgumentError, match=r"argument 1 \(%input1: i32\) expects a value that fits i32, "
                                            r"got 8589934592"):
        s.scalar_i32(1, 2 ** 33)
    with pytest.raises(ArgumentError, match=r"argument 0 \(%input0: f32\) expects a float, got str"):
        s.scalar_f32("1", 2.0)


def test_half_scalar_arguments_are_their_bits():
    """An f16/bf16 scalar argument is an i32 of its bits at the VM level: numpy float16 and
    ml_dtypes bfloat16 scalars give theirs, an int is the bits themselves (as iree.runtime
    takes it); a Python float, which iree.runtime truncates to an integer, is refused."""
    from jitvm.api import marshal
    from jitvm.api.declaration import ValueDecl

    import ml_dtypes

    f16, bf16 = ValueDecl("%input1", "f16"), ValueDecl("%input1", "bf16")
    assert marshal.scalar_argument(np.float16(1.75), f16, "f") == 0x3F00
    assert marshal.scalar_argument(np.array(-2.0, np.float16), f16, "f") == 0xC000
    assert marshal.scalar_argument(ml_dtypes.bfloat16(1.75), bf16, "f") == 0x3FE0
    assert marshal.scalar_argument(0x3F00, f16, "f") == 0x3F00
    with pytest.raises(ArgumentError, match=r"f expects an f16 scalar \(numpy.float16\(x\)\) or its bit pattern as an "
                                            r"int, got float 1.75"):
        marshal.scalar_argument(1.75, f16, "f")
    with pytest.raises(ArgumentError, match=r"f expects a bf16 value, got float16"):
        marshal.scalar_argument(np.float16(1), bf16, "f")
    with pytest.raises(ArgumentError, match=r"f expects a bf16 bit pattern that fits i32, got 8589934592"):
        marshal.scalar_argument(2 ** 33, bf16, "f")


def test_functions_without_reflection_take_raw_vm_values(corpus_module):
    m = jitvm.load(str(corpus_module("vmasm/int_arith").vmfb), backend=BACKEND)
    fn = m.arith_i32
    assert not fn.reflected
    # add, sub, mul and fma (a * b + (a + b)), all wrapping
    assert fn(2147483647, 1) == (-2147483648, 2147483646, 2147483647, -1)
    with pytest.raises(ArgumentError, match=r"int_arith.arith_i32 takes 2 arguments \(0ii_iiii\), got 1"):
        fn(1)


def test_bad_inputs_and_backends():
    with pytest.raises(FormatError):
        jitvm.load(b"definitely not a module", backend=BACKEND)
    with pytest.raises(ArgumentError, match="unknown backend 'gpu'; choose one of jit, interp"):
        get_backend("gpu")


def test_declaration_parser():
    d = parse_declaration("sync func @f(%input0: tensor<2x?xf32>, %x: i32, %input2: tensor<f64>, "
                          "%input3: tensor<4xcomplex<f32>>, %input4: !hal.buffer_view) -> (%output0: tensor<2xi1>)")
    assert [v.name for v in d.inputs] == ["%input0", "%x", "%input2", "%input3", "%input4"]
    assert d.inputs[0].shape == (2, None) and d.inputs[0].dtype == np.float32
    assert d.inputs[1].is_scalar and not d.inputs[1].is_tensor
    assert d.inputs[2].shape == () and d.inputs[3].dtype == np.complex64
    assert not d.inputs[4].is_tensor and not d.inputs[4].is_scalar
    assert d.outputs[0].dtype == np.bool_ and not d.is_async
    assert parse_declaration("garbage") is None and parse_declaration(None) is None


def test_foreign_byte_order_and_strided_arrays(load):
    m = load("mlir/compare_select")
    a = np.linspace(-1, 1, 32, dtype=">f4")[::2]  # big-endian and strided
    out = m.select_mix(np.ones(16, bool), a, np.zeros(16, np.float32))
    assert out.dtype == np.float32 and out.tolist() == a.astype(np.float32).tolist()



_SHARED_RESULTS = """
func.func @constant() -> tensor<4xf32> {
  %c = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  return %c : tensor<4xf32>
}
func.func @twice(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %y = arith.addf %x, %x : tensor<4xf32>
  return %y, %y : tensor<4xf32>, tensor<4xf32>
}
"""


@pytest.fixture(scope="module")
def shared_results(tmp_path_factory):
    import subprocess

    from jitvm.fuzz.corpus import find_tool

    src = tmp_path_factory.mktemp("shared") / "shared.mlir"
    src.write_text(_SHARED_RESULTS)
    out = src.with_suffix(".vmfb")
    subprocess.run([find_tool("iree-compile"), str(src), "-o", str(out), "--iree-hal-target-device=local",
                    "--iree-hal-local-target-device-backends=vmvx"], check=True)
    return out


@pytest.mark.parametrize("backend", ["jit", "interp"])
def test_result_arrays_are_the_callers_own(corpus_module, shared_results, backend):
    """Results are writable arrays that nothing else sees: handed-over result buffers, and
    copies where the program keeps the memory (a global, a constant, one buffer twice)."""
    m = jitvm.load(str(corpus_module("mlir/mutable_global").vmfb), backend=backend)
    one = np.ones(4, np.float32)
    first = m.accumulate(one)
    first[:] = 100  # must not reach the module's global, nor any later result
    np.testing.assert_array_equal(m.accumulate(one), [2, 2, 2, 2])
    np.testing.assert_array_equal(first, [100] * 4)
    _, state = m.read_state()
    state[:] = -1
    np.testing.assert_array_equal(m.read_state()[1], [2, 2, 2, 2])
    s = jitvm.load(str(shared_results), backend=backend)
    c = s.constant()
    c[:] = 0
    np.testing.assert_array_equal(s.constant(), [1, 2, 3, 4])
    a, b = s.twice(one)
    a[:] = 7
    np.testing.assert_array_equal(b, [2, 2, 2, 2])
