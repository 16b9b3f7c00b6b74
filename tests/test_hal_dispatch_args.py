"""Dispatch arguments kept across executions of a reusable command buffer (hal/dispatch_args).

A recorded dispatch builds its binding views, list and local memory once and repoints them
per run. These tests check that every call still sees its own buffers, and that a kernel
keeping or rearranging what it was handed makes the set be dropped with valid memory
behind every view it kept.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import jitvm
from jitvm.runtime.native import layout
from jitvm.runtime.vm import listops
from jitvm.runtime.exec.dispatch_args import DispatchArgs
from jitvm.runtime.vm.objects import Ref, VmBuffer

from tests.hal_support import backends_under_test


def _memory(data: bytes) -> VmBuffer:
    return VmBuffer.from_bytes(data)


def _pointed(n: int = 2) -> tuple[DispatchArgs, list[VmBuffer]]:
    args = DispatchArgs(n, 64)
    mems = [_memory(bytes([k + 1]) * 32) for k in range(n)]
    for k, m in enumerate(mems):
        args.point(k, m.data_address + 8, 16, k == 0, m)
    return args, mems


def test_views_show_the_pointed_ranges_and_are_reused_when_untouched():
    args, mems = _pointed()
    assert [v.tobytes() for v in args.views] == [b"\x01" * 16, b"\x02" * 16]
    assert args.views[0].mutable and not args.views[1].mutable
    assert args.finish()
    other = _memory(b"\x07" * 16)
    args.point(0, other.data_address, 4, True, other)
    assert args.views[0].tobytes() == b"\x07" * 4
    assert args.finish()


def test_local_memory_starts_zeroed_every_run():
    args, _ = _pointed()
    args.prepare_local()
    ctypes.memset(args.local.data_address, 0xAB, 64)
    assert args.finish()
    args.prepare_local()
    assert args.local.tobytes() == bytes(64)


def test_a_kept_view_is_given_its_memory_and_the_set_dropped():
    args, mems = _pointed()
    kept = Ref(args.views[1].addr)  # what a kernel storing its binding in a global would hold
    memory_refs = mems[1].refcount
    assert not args.finish()
    assert mems[1].refcount == memory_refs + 1  # the kept view now owns its memory
    del args, mems
    assert VmBuffer(kept.addr).tobytes() == b"\x02" * 16


@pytest.mark.parametrize("change", ["replace", "swap", "resize", "keep list", "keep local"])
def test_a_rearranged_or_kept_list_drops_the_set(change):
    args, mems = _pointed()
    extra = []
    if change == "replace":
        extra.append(_memory(b"x"))
        listops.set_ref(args.list.addr, 0, extra[0].addr, False)
    elif change == "swap":
        a, b = args.views
        listops.set_ref(args.list.addr, 0, b.addr, False)
        listops.set_ref(args.list.addr, 1, a.addr, False)
    elif change == "resize":
        args.list.append(_memory(b"y"))
    elif change == "keep list":
        extra.append(Ref(args.list.addr))
    else:
        extra.append(Ref(args.local.addr))
    assert not args.finish()


def _add_module(tmp_path):
    from jitvm.fuzz.corpus import find_tool
    import subprocess

    src = tmp_path / "add.mlir"
    src.write_text("func.func @add(%a: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<64xf32> {\n"
                   "  %c = arith.addf %a, %b : tensor<64xf32>\n  return %c : tensor<64xf32>\n}\n")
    out = tmp_path / "add.vmfb"
    subprocess.run([find_tool("iree-compile"), str(src), "-o", str(out), "--iree-hal-target-device=local",
                    "--iree-hal-local-target-device-backends=vmvx"], check=True)
    return out


@pytest.mark.parametrize("backend", backends_under_test())
def test_every_call_sees_its_own_buffers(tmp_path, backend):
    m = jitvm.load(str(_add_module(tmp_path)), backend=backend)
    rng = np.random.default_rng(1)
    for _ in range(4):
        a, b = rng.standard_normal((2, 64), dtype=np.float32)
        np.testing.assert_array_equal(m.add(a, b), a + b)
