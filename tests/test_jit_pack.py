"""A register-blocked matmul whose right-hand side is stored transposed reads it from a
transposed copy (lower.loops.pack): the plan, and results against the interpreter.

b[j*K + k] with constant column and reduction extents: the blocked copies read the copy
(ordinary blocking instead of jam.STRIDED_FACTOR x STRIDED_INNER), made TILE x TILE at a time
when both extents are multiples of pack.TILE, element by element otherwise. The JIT must stay
bit-identical to the interpreter with row counts leaving 0-3 rows to the remainder, with no
rows at all (the copy must not run: the right-hand side may then be too short), when the
output is the right-hand side (not apart: no copy, no blocking), and when the right-hand side
is too short (the guard fails: the checked copy traps where the interpreter does)."""

from __future__ import annotations

import numpy as np
import pytest

from jitvm.errors import Error
from jitvm.fallback_interp import InterpreterBackend
from jitvm.frontend.asm import assemble
from jitvm.frontend.module import load_module
from jitvm.fuzz.oracles.calls import instantiate
from jitvm.lower.backend import JitBackend
from jitvm.lower.loops import jam, pack
from jitvm.lower.loops.analysis import find_nests
from jitvm.runtime.vm.objects import VmBuffer
from jitvm.verify import verify_module
from tests.matmul_program import matmul_vmasm, run_matmul

N = 32  # columns: P's trip count


def _plan(cols, depth, transposed_b=True, do_pack=True, wide=False):
    source = matmul_vmasm(None, cols, depth, fused=False, transposed_b=transposed_b)
    vf = verify_module(load_module(assemble(source, "<packed>"))).functions[0]
    (nest,) = find_nests(vf)
    return jam.plan(vf, nest, wide=wide, pack=do_pack)


def test_a_transposed_right_hand_side_is_packed_and_blocked_as_usual():
    for depth, wide, inner in ((32, False, jam.OUTER_INNER), (5, False, jam.OUTER_INNER),
                               (32, True, jam.OUTER_INNER_WIDE)):
        p = _plan(N, depth, wide=wide)
        assert p is not None and p.outer is not None
        assert (p.outer.factor, p.outer.inner) == (jam.OUTER_FACTOR, inner), (depth, wide)
        (pk,) = p.outer.packs
        assert (pk.p.id, pk.r.id, pk.p_trips, pk.r_trips) == (p.loop.id, 2, N, depth)
        assert dict(pk.packed.element.terms) == {p.loop.id: ("const", 1), 2: ("const", N)}


def test_without_packing_or_constant_extents_the_blocking_stays_strided():
    for kwargs in ({"do_pack": False}, {"depth": None}, {"cols": None}):
        args = {"cols": N, "depth": 32, **kwargs}
        p = _plan(args["cols"], args["depth"], do_pack=args.get("do_pack", True))
        assert p is None or p.outer is None or not p.outer.packs, kwargs
        if p is not None and p.outer is not None:
            assert (p.outer.factor, p.outer.inner) == (jam.STRIDED_FACTOR, jam.STRIDED_INNER), kwargs


def test_an_ordinary_right_hand_side_is_not_packed():
    p = _plan(N, 32, transposed_b=False)
    assert p.outer is not None and p.outer.packs == ()


def test_a_copy_larger_than_the_limit_is_not_made():
    depth = pack.PACK_BYTES // (4 * N) + 16
    p = _plan(N, depth)
    assert p.outer is None or not p.outer.packs


@pytest.fixture(scope="module", params=[32, 5], ids=["tiled copy (K = 32)", "element copy (K = 5)"])
def backends(request):
    depth = request.param
    vmfb = assemble(matmul_vmasm(None, N, depth, fused=False, transposed_b=True), "<packed>")
    made = (("jit", JitBackend(use_cache=False, progress=False, threads=1)),
            ("unpacked", JitBackend(use_cache=False, progress=False, threads=1, loop_steps={"pack_operands": False})),
            ("interp", InterpreterBackend()))
    return depth, {name: instantiate(vmfb, be)[1] for name, be in made}


@pytest.mark.parametrize("m", [4, 5, 6, 7, 9, 12])
@pytest.mark.parametrize("overlap", [False, True], ids=["apart", "output is the right-hand side"])
def test_packed_rows_agree_with_the_interpreter(backends, m, overlap):
    depth, insts = backends
    out = {name: run_matmul(inst, m, N, depth, m, out_rows=max(m, depth), overlap=overlap)
           for name, inst in insts.items()}
    assert out["jit"] == out["interp"] and out["unpacked"] == out["interp"]


def _call(inst, m: int, depth: int, b_elements: int):
    rng = np.random.default_rng(m)
    a = VmBuffer.from_bytes(rng.standard_normal(max(m, 1) * depth).astype(np.float32).tobytes())
    out = VmBuffer.from_bytes(rng.standard_normal(max(m, 1) * N).astype(np.float32).tobytes())
    b = VmBuffer.from_bytes(rng.standard_normal(b_elements).astype(np.float32).tobytes())
    try:
        inst.lookup("mm").call([out, a, b, m, N, depth])
    except Error as e:
        return type(e).__name__, out.tobytes()
    return None, out.tobytes()


def test_no_rows_copy_nothing_and_a_short_right_hand_side_traps_as_the_interpreter_does(backends):
    depth, insts = backends
    for m, b_elements in ((0, 0), (0, 3), (4, N * depth - 1), (5, 7)):
        got = {name: _call(inst, m, depth, b_elements) for name, inst in insts.items()}
        assert got["jit"] == got["interp"], (m, b_elements)
        assert (got["interp"][0] is not None) == (m > 0), (m, b_elements)
