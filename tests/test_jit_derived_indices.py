"""Jammed copies derive their element indices from one copy's (guard.proven_index).

Copy k's index is the first copy's plus coeff * (lane(k) - lane(j)) * step per jammed loop:
a constant when the coefficient and the step are, a product of invariants otherwise. The
programs must give the interpreter's bytes either way, with the derivation on and off,
and the derived lowering must leave LLVM less index arithmetic."""

from __future__ import annotations

import re

import pytest

from jitvm.fallback_interp import InterpreterBackend
from jitvm.frontend.asm import assemble
from jitvm.frontend.module import load_module
from jitvm.fuzz.oracles.calls import instantiate
from jitvm.lower.backend import JitBackend
from jitvm.lower.module import ModuleLowering
from jitvm.verify import verify_module
from tests.matmul_program import matmul_vmasm, run_matmul

SHAPES = {  # name -> matmul_vmasm's (rows, cols, depth); None: from the call's arguments
    "constant extents": (8, 64, 5),
    "extents at run time": (None, None, None),  # the row coefficient (depth) is a register
}


def _index_muls(source: str, derive: bool) -> int:
    vm = verify_module(load_module(assemble(source, "<derive>")))
    text = str(ModuleLowering(vm, "derive", derive_indices=derive).lower([0]))
    return len(re.findall(r"= mul ", text))


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
def test_derived_copies_leave_less_index_arithmetic(shape):
    source = matmul_vmasm(*shape, fused=False)
    on, off = _index_muls(source, True), _index_muls(source, False)
    assert on < 0.7 * off, (on, off)


@pytest.fixture(scope="module", params=list(SHAPES), ids=list(SHAPES))
def backends(request):
    shape = SHAPES[request.param]
    vmfb = assemble(matmul_vmasm(*shape, fused=False), "<derive>")
    made = {}
    for name, be in (("derived", JitBackend(use_cache=False, progress=False, threads=1)),
                     ("full", JitBackend(use_cache=False, progress=False, threads=1,
                                         loop_steps={"derive_indices": False})),
                     ("interp", InterpreterBackend())):
        made[name] = instantiate(vmfb, be)[1]
    return shape, made


@pytest.mark.parametrize("m,n,k", [(8, 64, 5), (4, 64, 3), (9, 70, 2), (13, 128, 7), (5, 16, 1)])
def test_derived_indices_agree_with_the_interpreter(backends, m, n, k):
    shape, insts = backends
    m, n, k = (given if given is not None else asked for given, asked in zip(shape, (m, n, k)))
    out = {name: run_matmul(inst, m, n, k, m * n + k) for name, inst in insts.items()}
    assert out["derived"] == out["interp"]
    assert out["full"] == out["interp"]
