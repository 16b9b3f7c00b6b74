"""Modules IREE 3.13 runs (or refuses) that jitvm must treat the same way: i64 fills and
splats through the compiler's __builtin_* executables, functions without names in dumps,
and functions declaring fewer registers than their arguments (IREE's loader refuses those)."""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

import jitvm
from tests.dropin_support import _CACHE, build, tool

FILLS = """
func.func @fill(%v: i64) -> tensor<16xi64> {
  %e = tensor.empty() : tensor<16xi64>
  %f = linalg.fill ins(%v : i64) outs(%e : tensor<16xi64>) -> tensor<16xi64>
  return %f : tensor<16xi64>
}
func.func @fill2(%v: i64, %x: tensor<3x5xi64>) -> tensor<3x5xi64> {
  %e = tensor.empty() : tensor<3x5xi64>
  %f = linalg.fill ins(%v : i64) outs(%e : tensor<3x5xi64>) -> tensor<3x5xi64>
  %r = arith.addi %f, %x : tensor<3x5xi64>
  return %r : tensor<3x5xi64>
}
func.func @fillf(%v: f64) -> tensor<7xf64> {
  %e = tensor.empty() : tensor<7xf64>
  %f = linalg.fill ins(%v : f64) outs(%e : tensor<7xf64>) -> tensor<7xf64>
  return %f : tensor<7xf64>
}
"""
FLAGS = ("--iree-input-demote-f64-to-f32=false", "--iree-input-demote-i64-to-i32=false")


@pytest.mark.parametrize("backend", ["jit", "interp"])
def test_i64_fills_and_splats_run_the_builtin_kernels(backend):
    rt = pytest.importorskip("iree.runtime")
    path = str(build("fills", FILLS, *FLAGS))
    theirs = rt.load_vm_flatbuffer_file(path, driver="local-sync")
    ours = jitvm.load(path, backend=backend)
    x = np.arange(15, dtype=np.int64).reshape(3, 5) - 7
    for name, args in (("fill", (-3,)), ("fill", (1 << 40,)), ("fill2", (7, x)), ("fillf", (2.5,))):
        assert ours.function(name)(*args).tobytes() == theirs[name](*args).to_host().tobytes(), name


def _func_names(text: str) -> list[str]:
    return re.findall(r"^vm\.func @(\S+?)\(", text, re.M)


def test_unnamed_functions_dump_as_iree_dump_module_names_them():
    """iree-compile 3.13 keeps one debug name (the last function's): the rest print as their
    export's name or `fnN`, the names iree-dump-module prints."""
    path = build("fills", FILLS, *FLAGS)
    theirs = _func_names(subprocess.run([tool("iree-dump-module"), str(path)], capture_output=True, text=True,
                                        check=True).stdout)
    ours = _func_names(subprocess.run(["python", "-m", "jitvm", "dump", str(path)], capture_output=True,
                                      text=True, check=True).stdout)
    assert any(re.fullmatch(r"fn\d+", n) for n in ours) or ours == theirs
    assert ours[1:] == theirs[1:]  # function 0: IREE labels it with the single debug entry
    assert not any(":" in n for n in ours)


UNUSED_ARGUMENTS = """vm.module @regs version 0
vm.type i32
vm.type !vm.buffer

vm.export @f
vm.func @f(%i0:1: i64, %i2: i32, %r0: !vm.ref<?>) -> (i32) {
^bb0:
  %i0 = vm.const.i32 7
  vm.return %i0
}
"""


def test_fewer_registers_than_arguments_is_refused_as_iree_refuses_it():
    """iree-as-module counts only used registers; IREE 3.13's loader then refuses the module
    (INVALID_ARGUMENT: insufficient register storage for function arguments/results)."""
    rt = pytest.importorskip("iree.runtime")
    source, out = _CACHE / "regs.vmasm", _CACHE / "regs.vmfb"
    source.write_text(UNUSED_ARGUMENTS)
    subprocess.run([tool("iree-as-module"), f"--output={out}", str(source)], check=True, capture_output=True)
    with pytest.raises(ValueError, match="insufficient register storage"):
        rt.load_vm_flatbuffer_file(str(out), driver="local-sync")
    with pytest.raises(jitvm.VerifyError, match="needs 3 i32 and 1 ref registers for its arguments"):
        jitvm.load(str(out))
