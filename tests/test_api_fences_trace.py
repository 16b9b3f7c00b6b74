"""Modules compiled with other execution models and debug options also run through jitvm.load.

`--iree-execution-model=async-external` gives functions the coarse-fences ABI (a wait and a
signal fence after the inputs): jitvm.load passes them itself and returns when signalled.
`--iree-flow-trace-dispatch-tensors` makes the program call hal.buffer_view.trace, which
feeds the `trace` callback given to jitvm.load.
"""

from __future__ import annotations

import subprocess
import warnings

import numpy as np
import pytest

import jitvm
from jitvm.fuzz.corpus import VMVX_FLAGS, find_tool
from tests.hal_support import backend_under_test

BACKEND = backend_under_test()
SOURCE = """
func.func @scale(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %s = arith.addf %a, %b : tensor<4xf32>
  %m = arith.mulf %s, %a : tensor<4xf32>
  return %s, %m : tensor<4xf32>, tensor<4xf32>
}
"""


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    tool = find_tool("iree-compile")
    if tool is None:
        pytest.skip("iree-compile is not installed")
    d = tmp_path_factory.mktemp("fences_trace")
    (d / "scale.mlir").write_text(SOURCE)

    def build(name, *flags):
        out = d / f"{name}.vmfb"
        subprocess.run([tool, *VMVX_FLAGS, *flags, str(d / "scale.mlir"), "-o", str(out)], check=True,
                       capture_output=True)
        return out

    return {"async": build("async", "--iree-execution-model=async-external"),
            "trace": build("trace", "--iree-flow-trace-dispatch-tensors")}


def _load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return jitvm.load(str(path), backend=BACKEND, **kw)


A = np.array([1, 2, 3, 4], np.float32)
B = np.array([0.5, -1, 2, 0], np.float32)


def test_coarse_fences_functions_are_called_synchronously(compiled):
    m = _load(compiled["async"])
    fn = m.scale
    assert fn.fenced and len(fn.cconv.args) == 4
    s, p = fn(A, B)
    assert s.tolist() == (A + B).tolist() and p.tolist() == ((A + B) * A).tolist()
    with pytest.raises(jitvm.ArgumentError, match="takes 2 arguments"):
        fn(A)


def test_traced_tensors_reach_the_trace_callback(compiled):
    seen = []
    m = _load(compiled["trace"], trace=lambda key, arrays: seen.append((key, arrays)))
    s, p = m.scale(A, B)
    assert p.tolist() == ((A + B) * A).tolist()
    assert seen, "the program traced nothing"
    keys = [k for k, _ in seen]
    assert any("inputs" in k for k in keys) and any("outputs" in k for k in keys)
    traced = [a for _, arrays in seen for a in arrays]
    assert any(a.tolist() == ((A + B) * A).tolist() for a in traced)
    assert _load(compiled["trace"]).scale(A, B)[0].tolist() == s.tolist()  # no callback: tracing is a no-op
