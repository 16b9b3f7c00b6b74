"""The work estimate that picks a kernel's first tier (jitvm.lower.work).

Two loops in a row, each loading and storing one element per iteration, their bounds in one
register written before each (so the loop analysis's written-once rule knows neither): the
estimate reads each bound from the constant last written before its loop, directly or
through a branch's register move; a bound from an argument stays unknown and counts once.
And a flat loop over delinearised rows (a division of its induction variable: the nest
analysis declines it) around a counted loop, its bound a workgroup's tile, min(rest, 64)
times 3, the rest from the workgroup's id: the tile counts, and so does the flat loop.
"""

from __future__ import annotations

import pytest

from jitvm.frontend.asm import assemble
from jitvm.frontend.module import load_module
from jitvm.lower import work
from jitvm.lower.loops.analysis import find_nests, static_trips
from jitvm.verify import verify_module

# @copy2(dst, src, n): dst[i] = src[i] for i < FIRST, then for i < SECOND
SOURCE = """
vm.module @twice version 0
vm.export @copy2
vm.func @copy2(%r0: !vm.buffer, %r1: !vm.buffer, %i0: i32) -> () {
^bb0:
  %i2:3 = vm.ext.i32.i64.s %i0
  %i10:11 = vm.const.i64.zero
  %i12:13 = vm.const.i64 1
  %i30:31 = vm.const.i64 50
  %i20:21 = FIRST_BOUND
  vm.br ^bb1(%i10->%i14, %i11->%i15)
^bb1:
  %i4 = vm.cmp.lt.i64.s %i14:15, %i20:21
  vm.cond_br %i4, ^bb2(), ^bb3()
^bb2:
  %i5 = vm.buffer.load.f32 %r1, %i14:15
  vm.buffer.store.f32 %i5, %r0, %i14:15
  %i14:15 = vm.add.i64 %i14:15, %i12:13
  vm.br ^bb1()
^bb3:
  SECOND_BOUND
^bb4:
  %i4 = vm.cmp.lt.i64.s %i14:15, %i20:21
  vm.cond_br %i4, ^bb5(), ^bb6()
^bb5:
  %i5 = vm.buffer.load.f32 %r1, %i14:15
  vm.buffer.store.f32 %i5, %r0, %i14:15
  %i14:15 = vm.add.i64 %i14:15, %i12:13
  vm.br ^bb4()
^bb6:
  vm.return
}
"""

CONST_100 = """%i20:21 = vm.const.i64 100
  vm.br ^bb4(%i10->%i14, %i11->%i15)"""
MOVED_50 = "vm.br ^bb4(%i10->%i14, %i11->%i15, %i30->%i20, %i31->%i21)"
ARGUMENT = "vm.br ^bb4(%i10->%i14, %i11->%i15, %i2->%i20, %i3->%i21)"


def _function(first: str, second: str):
    text = SOURCE.replace("FIRST_BOUND", first).replace("SECOND_BOUND", second)
    return verify_module(load_module(assemble(text, "<twice>"))).functions[0]


@pytest.mark.parametrize("second, trips", [(CONST_100, 100), (MOVED_50, 50), (ARGUMENT, None)])
def test_a_reused_bound_register_is_read_from_its_last_constant(second, trips):
    vf = _function("vm.const.i64 8", second)
    nests = find_nests(vf)
    assert len(nests) == 2
    loops = [nest.loops[0] for nest in nests]
    assert [static_trips(vf, loop) for loop in loops] == [None, None]  # written twice: the analysis declines
    assert [work.trip_count(vf, loop) for loop in loops] == [8, trips]
    # two accesses an iteration; a loop of unknown count counts once
    assert work.accesses_per_workgroup(vf) == 2 * 8 + 2 * (trips or 1)


def test_a_bound_computed_at_run_time_stays_unknown():
    vf = _function("vm.add.i64 %i2:3, %i12:13", CONST_100)
    first, second = (nest.loops[0] for nest in find_nests(vf))
    assert work.trip_count(vf, first) is None and work.trip_count(vf, second) == 100
    assert work.accesses_per_workgroup(vf) == 2 * 1 + 2 * 100


# @rows(dst, src, id): for i < min(112 - 64 * id, 64) * 3: row = i / 3; for j < 3: dst[row*3+j] = src[row*3+j]
TILE = """
vm.module @tile version 0
vm.export @rows
vm.func @rows(%r0: !vm.buffer, %r1: !vm.buffer, %i0: i32) -> () {
^bb0:
  %i2:3 = vm.ext.i32.i64.s %i0
  %i10:11 = vm.const.i64.zero
  %i12:13 = vm.const.i64 1
  %i30:31 = vm.const.i64 64
  %i32:33 = vm.const.i64 -64
  %i34:35 = vm.const.i64 112
  %i36:37 = vm.const.i64 3
  %i20:21 = vm.fma.i64 %i2:3, %i32:33, %i34:35
  %i20:21 = vm.min.i64.s %i20:21, %i30:31
  %i20:21 = vm.mul.i64 %i20:21, %i36:37
  vm.br ^bb1(%i10->%i14, %i11->%i15)
^bb1:
  %i4 = vm.cmp.lt.i64.s %i14:15, %i20:21
  vm.cond_br %i4, ^bb2(), ^bb6()
^bb2:
  %i16:17 = vm.div.i64.s %i14:15, %i36:37
  vm.br ^bb3(%i10->%i18, %i11->%i19)
^bb3:
  %i5 = vm.cmp.lt.i64.s %i18:19, %i36:37
  vm.cond_br %i5, ^bb4(), ^bb5()
^bb4:
  %i22:23 = vm.mul.i64 %i16:17, %i36:37
  %i22:23 = vm.add.i64 %i22:23, %i18:19
  %i6 = vm.buffer.load.f32 %r1, %i22:23
  vm.buffer.store.f32 %i6, %r0, %i22:23
  %i18:19 = vm.add.i64 %i18:19, %i12:13
  vm.br ^bb3()
^bb5:
  %i14:15 = vm.add.i64 %i14:15, %i12:13
  vm.br ^bb1()
^bb6:
  vm.return
}
"""


def test_a_flat_loop_around_a_nest_counts_with_its_tile_bound():
    vf = verify_module(load_module(assemble(TILE, "<tile>"))).functions[0]
    nests = find_nests(vf)
    assert [[loop.header for loop in nest.loops] for nest in nests] == [[3]]  # the inner loop alone
    assert work.accesses_per_workgroup(vf) == 2 * 3 * (64 * 3)
    assert work.flat_loops(vf) == 1


def test_loops_of_nests_are_not_flat():
    vf = _function("vm.const.i64 8", CONST_100)
    assert work.flat_loops(vf) == 0
