"""Jammed copies share the values they compute alike (lower.loops.sharing).

The analysis must give a matmul's left-hand element the row lane, its right-hand element
the column lane, the accumulator both and the reduction counter neither; and the JIT must
stay bit-identical to the interpreter when IREE-style register reuse puts values of
different lanes in one register within one block, and when a shared value is updated in
place. With sharing off, the same programs give the same bytes and lower more code."""

from __future__ import annotations

import pytest

from jitvm.fallback_interp import InterpreterBackend
from jitvm.frontend.asm import assemble
from jitvm.frontend.module import load_module
from jitvm.fuzz.oracles.calls import instantiate
from jitvm.lower.loops import sharing as copy_sharing, jam
from jitvm.lower.backend import JitBackend
from jitvm.lower.loops.sharing import ALL_LANES, P_LANE, Q_LANE
from jitvm.lower.loops.analysis import find_nests
from jitvm.lower.module import ModuleLowering
from jitvm.verify import verify_module
from tests.matmul_program import matmul_vmasm, run_matmul

N, K = 32, 5

# The matmul's innermost block rewritten the way register allocation reuses registers:
# %i22 holds the row's index (row lane), then the column's (column lane), then k + 1 (no
# lane); %i30 is an index built in place (%i30 = %i30 + k); %i24 becomes a product.
_REUSING_BODY = """^bb6:
  %i30:31 = vm.mul.i64 %i14:15, %i8:9
  %i30:31 = vm.add.i64 %i30:31, %i20:21
  %i22:23 = vm.fma.i64 %i14:15, %i8:9, %i20:21
  %i24 = vm.buffer.load.f32 %r1, %i22:23
  %i22:23 = vm.fma.i64 %i20:21, %i6:7, %i16:17
  %i25 = vm.buffer.load.f32 %r2, %i22:23
  %i22:23 = vm.add.i64 %i20:21, %i12:13
  %i32 = vm.buffer.load.f32 %r1, %i30:31
  %i24 = vm.mul.f32 %i24, %i25
  %i24 = vm.add.f32 %i24, %i32
  %i24 = vm.sub.f32 %i24, %i32
  %i28 = vm.buffer.load.f32 %r0, %i18:19
  %i28 = vm.add.f32 %i28, %i24
  vm.buffer.store.f32 %i28, %r0, %i18:19
  %i20:21 = vm.add.i64 %i20:21, %i12:13
  vm.br ^bb5()
"""


def _reusing(rows: int | None) -> str:
    src = matmul_vmasm(rows, N, K, fused=False)
    start, end = src.index("^bb6:"), src.index("^bb7:")
    return src[:start] + _REUSING_BODY + src[end:]


def _taints(source: str, share: bool = True) -> tuple[list, object]:
    """The CopySharing analyses made while lowering `source`, and its verified function."""
    made = []
    real_init = copy_sharing.CopySharing.__init__

    def recording(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        made.append(self)

    vm = verify_module(load_module(assemble(source, "<sharing>")))
    copy_sharing.CopySharing.__init__ = recording
    try:
        ModuleLowering(vm, "sharing", share_copies=share).lower([0])
    finally:
        copy_sharing.CopySharing.__init__ = real_init
    return made, vm.functions[0]


def _def_taint(sharing, vf, op: str, result: int) -> int:
    hits = [idx for idx, ins in enumerate(vf.instructions)
            if ins.op.name == op and ins["result"].index == result and idx in sharing._def_taint]
    assert hits, (op, result)
    return {sharing._def_taint[i] for i in hits}


def test_each_value_depends_on_the_lanes_it_reads():
    made, vf = _taints(matmul_vmasm(8, N, K, fused=False))
    blocked = [s for s in made if s.factor == jam.OUTER_FACTOR]
    assert blocked, "the nest should be register-blocked"
    s = blocked[0]
    assert _def_taint(s, vf, "buffer.load.f32", 24) == {Q_LANE}  # a[i*K + k]: one per row
    assert _def_taint(s, vf, "buffer.load.f32", 25) == {P_LANE}  # b[k*N + j]: one per column
    assert _def_taint(s, vf, "buffer.load.f32", 28) == {ALL_LANES}  # the output element
    assert _def_taint(s, vf, "add.i64", 20) == {0}  # k + 1: the same in every copy


def test_a_reused_register_takes_each_values_own_lanes():
    made, vf = _taints(_reusing(8))
    s = next(s for s in made if s.factor == jam.OUTER_FACTOR)
    taints = _def_taint(s, vf, "fma.i64", 22)
    assert taints == {Q_LANE, P_LANE}, taints  # the row index, then the column index
    assert _def_taint(s, vf, "add.i64", 22) == {0}
    assert _def_taint(s, vf, "add.i64", 30) == {Q_LANE}  # built in place
    assert _def_taint(s, vf, "mul.f32", 24) == {ALL_LANES}
    # Holders: copy k is row lane k % 4 and column lane k // 4; a column's values stay with
    # every copy (CopySharing.holder_of).
    assert s.holder_of(13, Q_LANE) == 1 and s.holder_of(13, 0) == 0
    assert s.holder_of(13, P_LANE) == 13 and s.holder_of(13, ALL_LANES) == 13


def test_sharing_off_lowers_every_copy():
    made, _ = _taints(_reusing(8), share=False)
    assert made and all(not s._def_taint for s in made)
    on = str(ModuleLowering(verify_module(load_module(assemble(_reusing(8), "<s>"))), "a").lower([0]))
    off = str(ModuleLowering(verify_module(load_module(assemble(_reusing(8), "<s>"))), "b",
                             share_copies=False).lower([0]))
    assert len(on) < 0.7 * len(off)


def _run(inst, m: int, seed: int) -> bytes:
    return run_matmul(inst, m, N, K, seed)


@pytest.fixture(scope="module", params=[None, 8], ids=["rows from the argument", "8 rows"])
def backends(request):
    vmfb = assemble(_reusing(request.param), "<sharing>")
    made = {}
    for name, be in (("shared", JitBackend(use_cache=False, progress=False, threads=1)),
                     ("unshared", JitBackend(use_cache=False, progress=False, threads=1,
                                             loop_steps={"share_copies": False})),
                     ("interp", InterpreterBackend())):
        made[name] = instantiate(vmfb, be)[1]
    return request.param, made


@pytest.mark.parametrize("m", [4, 5, 7, 8, 13])
def test_reused_registers_agree_with_the_interpreter(backends, m):
    rows, insts = backends
    if rows is not None:
        m = rows
    out = {name: _run(inst, m, m) for name, inst in insts.items()}
    assert out["shared"] == out["interp"]
    assert out["unshared"] == out["interp"]
