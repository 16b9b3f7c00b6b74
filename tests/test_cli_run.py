"""`jitvm run`, `jitvm check` and `jitvm demo`.

`jitvm run` must print exactly what iree-run-module prints for the same module and inputs
(the result lines and their number formatting), and accept the same --input syntax.
"""

from __future__ import annotations

import subprocess
import warnings

import numpy as np
import pytest

from jitvm.cli import main
from jitvm.api.declaration import parse_declaration
from jitvm.cli.values import parse_input
from jitvm.fuzz.corpus import find_tool
from tests.hal_support import backend_under_test

BACKEND = backend_under_test()

RUN_CASES = [
    ("mlir/multi_result", "mixed", ["3xi32=1,2,3", "2x2xf32=[1 2][3 4]", "5"]),
    ("mlir/multi_result", "split_stats", ["5x6xf32=@NPY"]),
    ("mlir/scalars", "scalar_mixed", ["1", "2.123456789", "7"]),
    ("mlir/scalars", "scalar_f32", ["1e20", "-0.0"]),
    ("mlir/scalars", "scalar_i64", ["-123456789012"]),
    ("mlir/compare_select", "cmp_f32", ["16xf32=1", "16xf32=2,1,2,1,2,1,2,1,nan,1,2,1,2,1,-inf,1"]),
    ("mlir/elementwise_f32", "sub_div_neg", ["4xf32=1e20,nan,-inf,0.123456789", "4xf32=0"]),
    ("mlir/reductions", "sum_all_i32", ["64xi32=3"]),
    ("mlir/dynamic_shapes", "dyn_rowsum", ["2x3xf32=1,2,3,4,5,6"]),
    ("mlir/f64_math", "f64_convert", ["6xf64=1.5,-2.25,3,1e300,-0,7", "6xf32=0.1,0.2,0.3,0.4,0.5,0.6"]),
    ("mlir/elementwise_int", "i8_ops", ["16xi8=-128,127,3,-3,5,6,7,8,9,10,11,12,13,14,15,16", "16xi8=2"]),
]


def _inputs(inputs, tmp_path):
    out = []
    for text in inputs:
        if "@NPY" in text:
            path = tmp_path / "x.npy"
            np.save(path, np.arange(30, dtype=np.float32).reshape(5, 6))
            text = f"@{path}"
        out.append(text)
    return out


@pytest.mark.parametrize("name,function,inputs", RUN_CASES, ids=[f"{c[0]}:{c[1]}" for c in RUN_CASES])
def test_run_prints_what_iree_run_module_prints(corpus_module, capsys, tmp_path, name, function, inputs):
    tool = find_tool("iree-run-module")
    if tool is None:
        pytest.skip("iree-run-module is not installed")
    vmfb = str(corpus_module(name).vmfb)
    inputs = _inputs(inputs, tmp_path)
    want = subprocess.run([tool, f"--module={vmfb}", "--device=local-sync", f"--function={function}",
                           *[f"--input={i}" for i in inputs]], capture_output=True, text=True, check=True).stdout
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        rc = main(["run", vmfb, f"--function={function}", f"--backend={BACKEND}", *[f"--input={i}" for i in inputs]])
    assert rc == 0
    assert capsys.readouterr().out == want


def test_run_errors_name_the_input(corpus_module, capsys):
    vmfb = str(corpus_module("mlir/multi_result").vmfb)
    rc = main(["run", vmfb, "--function=mixed", f"--backend={BACKEND}", "--input=4xi32=1", "--input=2x2xf32=0",
               "--input=1"])
    err = capsys.readouterr().err
    assert rc == 1
    assert "module.mixed input 0 (%input0: tensor<3xi32>) expects shape (3,), got (4,)" in err
    rc = main(["run", vmfb, "--function=mixed", f"--backend={BACKEND}", "--input=1"])
    assert rc == 1 and "takes 3 inputs" in capsys.readouterr().err


def test_run_saves_outputs(corpus_module, tmp_path, capsys):
    vmfb = str(corpus_module("mlir/multi_result").vmfb)
    out = tmp_path / "r1.npy"
    assert main(["run", vmfb, "--function=mixed", f"--backend={BACKEND}", "--input=3xi32=1,2,3",
                 "--input=2x2xf32=1", "--input=4", "--output=-", f"--output=@{out}", "--output=-", "--output=-"]) == 0
    assert np.load(out).tolist() == [5, 6, 7]
    printed = capsys.readouterr().out
    assert "[5 6 7]" not in printed and "3xi32=5 6 7" not in printed  # a saved result is not printed


def test_input_syntax():
    d = parse_declaration("sync func @f(%input0: tensor<2x2xf32>, %input1: i32, %input2: tensor<3xi1>, "
                          "%input3: f64) -> ()")
    assert parse_input("2x2xf32=[1 2][3 4]", d.inputs[0], "r").tolist() == [[1, 2], [3, 4]]
    assert parse_input("2x2xf32=7", d.inputs[0], "r").tolist() == [[7, 7], [7, 7]]
    assert parse_input("2x2xf32", d.inputs[0], "r").tolist() == [[0, 0], [0, 0]]
    assert parse_input("0x10", d.inputs[1], "i") == 16
    assert parse_input("3xi1=1,0,true", d.inputs[2], "r").tolist() == [True, False, True]
    assert parse_input("-inf", d.inputs[3], "F") == float("-inf")
    h = parse_declaration("sync func @f(%input0: f16, %input1: bf16) -> ()")
    assert parse_input("f16=1.5", h.inputs[0], "i").dtype == np.float16  # marshalled to its bits
    assert parse_input("bf16=2", h.inputs[1], "i").dtype.name == "bfloat16"
    assert parse_input("15872", h.inputs[0], "i") == 15872  # a bare number: the i32's bits, as iree-run-module
    with pytest.raises(Exception, match="must be written SHAPExTYPE=VALUES"):
        parse_input("1,2,3,4", d.inputs[0], "r")
    with pytest.raises(Exception, match=r"3 values given for a tensor of shape \(2, 2\)"):
        parse_input("2x2xf32=1,2,3", d.inputs[0], "r")


def test_check_runs_every_test_and_counts(corpus_module, capsys):
    files = [str(corpus_module(n).vmfb) for n in ("mlir/check_int", "mlir/check_float", "mlir/check_control_flow")]
    assert main(["check", f"--backend={BACKEND}", *files]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "11 passed, 0 failed"
    assert sum(line.startswith("PASS ") for line in out) == 11


def test_check_reports_a_failed_expectation_with_a_diff(corpus_module, capsys):
    files = [str(corpus_module(n).vmfb) for n in ("mlir/check_int", "mlir/check_fail_control")]
    assert main(["check", f"--backend={BACKEND}", *files]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == "4 passed, 1 failed"
    assert "FAIL module.vmfb::must_fail" in out
    assert "check.expect_eq failed: Expected equality of these values. Contents does not match." in out
    assert "1 of 3 elements differ; first at:\n    [2]: lhs=6 rhs=7" in out
    assert "at module.must_fail pc " in out  # the backtrace names the failing test


def test_demo_runs_the_bundled_cnn(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert main(["demo", f"--backend={BACKEND}", "--repeat=1"]) == 0
    out = capsys.readouterr().out
    assert "cnn.vmfb" in out and "top class:" in out and "mean call:" in out
    probs = out.split("result:", 1)[1].split("\n", 1)[0].replace("[", " ").replace("]", " ").split()
    assert len(probs) == 10 and abs(sum(float(p) for p in probs) - 1.0) < 1e-3
    assert "results bit-identical" in out  # the demo compares with IREE's interpreter (test extra installed)
