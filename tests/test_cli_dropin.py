"""The command line as iree-run-module users expect it: several modules, parameters, devices,
expected outputs, async functions (the same stdout as iree-run-module), and bad input as one
line of error, never a Python traceback."""

from __future__ import annotations

import platform

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.dropin_support import build, tool
from tests.test_dropin_api import TWO_DEVICE_TARGET, TWO_DEVICES
from tests.test_dropin_differential import ABS, ASYNC, MUL_ABS, PARAMS, SCALARS

HALF = """
func.func @bf(%a: tensor<8xbf16>) -> tensor<8xbf16> {
  %e = tensor.empty() : tensor<8xbf16>
  %r = linalg.transpose ins(%a : tensor<8xbf16>) outs(%e : tensor<8xbf16>) permutation = [0]
  return %r : tensor<8xbf16>
}
func.func @h(%a: tensor<2x2xf16>, %b: tensor<3xi16>) -> (tensor<2x2xf16>, tensor<3xi16>) {
  %e = tensor.empty() : tensor<2x2xf16>
  %r = linalg.transpose ins(%a : tensor<2x2xf16>) outs(%e : tensor<2x2xf16>) permutation = [1, 0]
  %t = arith.addi %b, %b : tensor<3xi16>
  return %r, %t : tensor<2x2xf16>, tensor<3xi16>
}
"""
ADD = """
func.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %s = arith.addf %a, %b : tensor<4xf32>
  return %s : tensor<4xf32>
}
"""


ROOT = str(Path(__file__).resolve().parent.parent)


def jitvm_cli(*args, cwd=None):
    """`python -m jitvm ARGS` of this checkout (from any directory)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "jitvm", *args], capture_output=True, text=True, cwd=cwd, env=env)


def iree_run_module(*args, cwd=None):
    return subprocess.run([tool("iree-run-module"), *args], capture_output=True, text=True, cwd=cwd)


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    rt = pytest.importorskip("iree.runtime")
    d = tmp_path_factory.mktemp("cli")
    for name, text, flags in (("add", ADD, ()), ("ma", ABS, ()), ("mb", MUL_ABS, ()), ("scalars", SCALARS, ()),
                              ("p", PARAMS, ()), ("half", HALF, ()), ("async", ASYNC, ("--iree-execution-model=async-external",))):
        (d / f"{name}.vmfb").write_bytes(build(name, text, *flags).read_bytes())
    (d / "two.vmfb").write_bytes(build("two_devices", TWO_DEVICES, target=TWO_DEVICE_TARGET).read_bytes())
    rt.save_archive_file({"w": np.linspace(-2, 2, 16, dtype=np.float32).reshape(4, 4),
                          "b": np.array([0.5, -1, 0.25, 3], np.float32),
                          "s": np.full(4, 1.5, np.float32)}, d / "p.irpa")
    return d


SAME_AS_IREE = [
    ["--module=add.vmfb", "--input=4xf32=1,2,3,4", "--input=4xf32=10"],
    ["--module=ma.vmfb", "--module=mb.vmfb", "--input=4xf32=-1,2,-3,4", "--input=4xf32=3"],
    ["--module=p.vmfb", "--parameters=model=p.irpa", "--input=4xf32=1,-2,3.5,0.25"],
    ["--module=async.vmfb", "--input=4xf32=1,2,3,4", "--input=4xf32=0.5,-1,2,0"],
    ["--device=local-sync", "--module=add.vmfb", "--input=4xf32=1", "--input=4xf32=2"],
    ["--device=local-sync", "--device=local-sync", "--module=two.vmfb", "--input=4xf32=1,2,3,4"],
    ["--module=add.vmfb", "--input=4xf32=1,2,3,4", "--input=4xf32=10", "--expected_output=4xf32=11,12,13,14.00001"],
    ["--module=add.vmfb", "--input=4xf32=1,2,3,4", "--input=4xf32=10", "--expected_output=4xf32=11,12,13,15"],
    ["--module=add.vmfb", "--input=4xf32=1,2,3,4", "--input=4xf32=10", "--expected_output=4xi32=11,12,13,14"],
    ["--module=scalars.vmfb", "--function=rank0", "--input=f32=3", "--input=i32=5", "--expected_output=f32=9",
     "--expected_output=(ignored)"],
    ["--module=add.vmfb", "--input=4xf32=1", "--input=4xf32=2", "--output=-"],
    ["--module=half.vmfb", "--function=bf", "--input=8xbf16=1,2.5,3,4,5,6,7,-8.25"],
    ["--module=half.vmfb", "--function=h", "--input=2x2xf16=1.5,-2,3,0.1", "--input=3xi16=1,-2,300"],
]


@pytest.mark.parametrize("args", SAME_AS_IREE, ids=lambda a: " ".join(a)[:60])
def test_run_prints_what_iree_run_module_prints(modules, args):
    want = iree_run_module(*args, cwd=modules)
    got = jitvm_cli("run", *args, cwd=modules)
    assert (got.returncode, got.stdout) == (want.returncode, want.stdout), got.stderr


def test_output_to_a_file_is_not_printed(modules, tmp_path):
    out = tmp_path / "y.npy"
    got = jitvm_cli("run", "add.vmfb", "--input=4xf32=1", "--input=4xf32=2", f"--output=@{out}", cwd=modules)
    want = iree_run_module("--module=add.vmfb", "--input=4xf32=1", "--input=4xf32=2", f"--output=@{out}",
                           cwd=modules)
    assert got.returncode == 0 and got.stdout == want.stdout == "EXEC @add\n"
    assert np.load(out).tolist() == [3, 3, 3, 3]


def test_a_missing_device_is_incompatible(modules):
    got = jitvm_cli("run", "two.vmfb", "--input=4xf32=1", cwd=modules)
    assert got.returncode == 1 and "INCOMPATIBLE; HAL device `device_b` not found" in got.stderr


BAD_INPUT = [
    ["run", "add.vmfb", "--function=nope"],
    ["run", "add.vmfb", "--function=0"],
    ["run", "add.vmfb", "--input=@missing.npy", "--input=4xf32=1"],
    ["run", "add.vmfb", "--input=4xf32=@missing.bin", "--input=4xf32=1"],
    ["run", "add.vmfb", "--input=4xf32=1", "--input=4xf32=1", "--output=@/nonexistent/y.npy"],
    ["run", "add.vmfb", "--input=4xf32=1", "--input=4xf32=1", "--output=-", "--output=-"],
    ["run", "add.vmfb", "--input=@add.vmfb", "--input=4xf32=1"],
    ["run", "p.vmfb", "--parameters=missing.irpa", "--input=4xf32=1"],
    ["run", "p.vmfb", "--input=4xf32=1"],
    ["run", "random.bin"],
    ["run", "missing.vmfb"],
    ["dump", "--asm", "--target=bogus", "add.vmfb"],
    ["dump", "--llvm", "--target=riscv64", "add.vmfb"],
    ["verify", "random.bin"],
]


@pytest.mark.parametrize("args", BAD_INPUT, ids=lambda a: " ".join(a)[:60])
def test_bad_input_is_one_line_of_error(modules, args):
    (modules / "random.bin").write_bytes(bytes(range(256)) * 4)
    got = jitvm_cli(*args, cwd=modules)
    assert got.returncode != 0
    assert "Traceback" not in got.stderr, got.stderr
    errors = [line for line in got.stderr.splitlines() if not line.startswith("jitvm: compil")]
    assert errors and errors[0].startswith(f"jitvm {args[0]}: error: ") or \
        got.stdout.splitlines()[-1].startswith("random.bin: error:"), got.stderr


def test_random_bytes_are_not_a_vmfb(modules):
    (modules / "random.bin").write_bytes(bytes(range(256)) * 4)
    got = jitvm_cli("verify", "random.bin", cwd=modules)
    assert "not a .vmfb" in got.stdout and "length prefix" not in got.stdout


def test_verify_flags_executables_no_device_here_runs(modules, tmp_path):
    # llvm-cpu code for the other architecture than this host's: no loader here takes it
    other = "aarch64-unknown-linux-gnu" if platform.machine() in ("x86_64", "AMD64") else "x86_64-unknown-linux-gnu"
    cpu = build("add_cpu", ADD, target=("--iree-hal-target-device=local",
                                        "--iree-hal-local-target-device-backends=llvm-cpu",
                                        f"--iree-llvmcpu-target-triple={other}"))
    got = jitvm_cli("verify", str(cpu), str(modules / "add.vmfb"))
    assert got.returncode == 1
    first = got.stdout.splitlines()[0]
    assert first.startswith(f"{cpu}: error: no device here can run its executables (formats embedded-elf-")
    assert f"{modules / 'add.vmfb'}: ok" in got.stdout
