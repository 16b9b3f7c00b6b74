"""Kernels whose output starts as a constant (sort, scatter, insert_slice into a constant,
matmul with a narrow N, ONNX ScatterND/TopK/Gather) give IREE's bits, small constants
(inline) and large ones (imported from rodata by hal.allocator.import) alike."""

from __future__ import annotations

import numpy as np
import pytest

import jitvm
from tests.dropin_support import build


def _program(n: int) -> str:
    vals = ", ".join(str(int(v)) for v in np.random.default_rng(n).integers(-100, 100, n))
    w = ", ".join(f"[{v:.3f}]" for v in np.random.default_rng(n + 1).normal(size=n))
    return f"""
func.func @sort() -> tensor<{n}xi32> {{
  %c = arith.constant dense<[{vals}]> : tensor<{n}xi32>
  %r = iree_linalg_ext.sort dimension(0) outs(%c : tensor<{n}xi32>) {{
  ^bb0(%a: i32, %b: i32):
    %p = arith.cmpi slt, %a, %b : i32
    iree_linalg_ext.yield %p : i1
  }} -> tensor<{n}xi32>
  return %r : tensor<{n}xi32>
}}
func.func @scatter(%u: tensor<2xi32>, %i: tensor<2x1xi32>) -> tensor<{n}xi32> {{
  %c = arith.constant dense<[{vals}]> : tensor<{n}xi32>
  %r = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true) ins(%u, %i : tensor<2xi32>, tensor<2x1xi32>)
       outs(%c : tensor<{n}xi32>) {{
  ^bb0(%a: i32, %b: i32):
    iree_linalg_ext.yield %a : i32
  }} -> tensor<{n}xi32>
  return %r : tensor<{n}xi32>
}}
func.func @insert(%x: tensor<2xi32>) -> tensor<{n}xi32> {{
  %c = arith.constant dense<[{vals}]> : tensor<{n}xi32>
  %r = tensor.insert_slice %x into %c[2] [2] [1] : tensor<2xi32> into tensor<{n}xi32>
  return %r : tensor<{n}xi32>
}}
func.func @narrow(%x: tensor<2x{n}xf32>) -> tensor<2x1xf32> {{
  %w = arith.constant dense<[{w}]> : tensor<{n}x1xf32>
  %z = arith.constant dense<0.5> : tensor<2x1xf32>
  %r = linalg.matmul ins(%x, %w : tensor<2x{n}xf32>, tensor<{n}x1xf32>) outs(%z : tensor<2x1xf32>) -> tensor<2x1xf32>
  return %r : tensor<2x1xf32>
}}
"""


@pytest.mark.parametrize("n", [8, 4096])
def test_kernels_writing_into_constants(n):
    rt = pytest.importorskip("iree.runtime")
    path = str(build(f"constants{n}", _program(n)))
    theirs = rt.load_vm_flatbuffer_file(path, driver="local-sync")
    ours = jitvm.load(path)
    x = np.linspace(-1, 1, 2 * n, dtype=np.float32).reshape(2, n)
    calls = [("sort", ()), ("scatter", (np.array([7, 8], np.int32), np.array([[3], [n - 1]], np.int32))),
             ("insert", (np.array([7, 8], np.int32),)), ("narrow", (x,))]
    for name, args in calls * 2:  # twice: the constants are unchanged by the first calls
        assert ours.function(name)(*args).tobytes() == theirs[name](*args).to_host().tobytes(), name
