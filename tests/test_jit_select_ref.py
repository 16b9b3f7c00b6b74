"""vm.select.ref whose two operands are one register (decoding makes each register once, so
they are one object too): the JIT lowers both sides of the choice, as the interpreter runs it."""

from __future__ import annotations

import pytest

import jitvm
from jitvm.frontend.asm import assemble
from jitvm.lower.backend import JitBackend

PROGRAM = """
vm.module @sel version 0
vm.type !vm.buffer
vm.rodata[0] = 0507
vm.export @pick
vm.func @pick(%i0: i32) -> (i32, i32) {
  %r0 = vm.const.ref.rodata 0
  %r1 = vm.select.ref %i0 ? %r0 : %r0 -> !vm.buffer
  %i1 = vm.cmp.eq.ref %r1, %r0
  %i2:3 = vm.const.i64 1
  %i4 = vm.buffer.load.i8.u %r1, %i2:3
  vm.return %i1, %i4
}
"""


@pytest.mark.parametrize("condition", [0, 1])
def test_select_of_one_register_twice(tmp_path, condition):
    path = tmp_path / "sel.vmfb"
    path.write_bytes(assemble(PROGRAM))
    want = jitvm.load(str(path), backend="interp").pick(condition)
    got = jitvm.load(str(path), backend=JitBackend(use_cache=False, progress=False)).pick(condition)
    assert got == want == (1, 7)
