"""A register-blocked matmul whose right-hand side is stored transposed runs its rows in vector
lanes where they fill whole vectors (lower.loops.jam.ROW_LANES): the plan, and results against
the interpreter and the blocking it replaces.

out[i*N + j] += a[i*K + k] * b[j*K + k] with constant extents, ROW_LANES rows and at least
ROW_MIN_COLUMNS columns:
the blocked copies read the left-hand side from a transposed copy, the right-hand side in place,
and keep the output tile transposed on the stack while they run (pack.TilePlan), copied back on
the way out. Every output element must see the same multiplies and adds in the same order: the
JIT must stay bit-identical to the interpreter for odd reduction lengths, several groups of
rows and columns, when the output is the right-hand side (not apart: nothing is copied), with a
pool of two threads that may split loops (the blocked root loop itself is never split), and when
the right-hand side is too short (the checked copy traps)."""

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


def _plan(rows, cols, depth, wide=True, do_pack=True, rows_in_lanes=True, transposed_b=True):
    source = matmul_vmasm(rows, cols, depth, fused=False, transposed_b=transposed_b)
    vf = verify_module(load_module(assemble(source, "<rows>"))).functions[0]
    (nest,) = find_nests(vf)
    return jam.plan(vf, nest, wide=wide, pack=do_pack, rows=rows_in_lanes)


def test_whole_vectors_of_rows_run_in_the_lanes():
    for rows, cols, depth in ((16, 64, 33), (16, 72, 5), (16, 128, 3)):
        p = _plan(rows, cols, depth)
        assert p is not None and p.outer is not None, (rows, cols, depth)
        assert (p.outer.factor, p.outer.inner) == (jam.ROW_LANES, jam.ROW_INNER), (rows, cols, depth)
        lhs, tile = p.outer.packs
        assert isinstance(lhs, pack.PackPlan) and isinstance(tile, pack.TilePlan)
        assert (lhs.p.id, lhs.p_trips, lhs.r_trips) == (p.outer.loop.id, rows, depth)  # a^T: [k][i]
        assert (tile.q_trips, tile.p_trips) == (rows, cols)
        assert {a.store for a in tile.accesses} == {False, True}  # the accumulator's load and store


def test_elsewhere_the_right_hand_side_is_packed_as_before():
    """Other than ROW_LANES rows or not constant, fewer than ROW_MIN_COLUMNS columns or no
    multiple of ROW_INNER, 256-bit vectors, the step switched off, or an ordinary right-hand
    side: no rows in lanes."""
    for kwargs in ({"rows": 12}, {"rows": 32}, {"rows": None}, {"cols": 48}, {"cols": 68}, {"wide": False},
                   {"rows_in_lanes": False}, {"transposed_b": False}):
        args = {"rows": 16, "cols": 64, "depth": 32, **kwargs}
        p = _plan(**args)
        assert p is not None, kwargs
        if p.outer is not None:  # 68 columns are not blocked at all
            assert not any(isinstance(pk, pack.TilePlan) for pk in p.outer.packs), kwargs
            assert p.outer.factor != jam.ROW_LANES, kwargs


SHAPES = [(16, 64, 33), (16, 72, 5), (16, 128, 3), (32, 64, 7)]  # rows, columns, reduction length (the last: packed)


def _backends(rows, cols, depth):
    vmfb = assemble(matmul_vmasm(rows, cols, depth, fused=False, transposed_b=True), "<rows>")
    steps = {"wide_vectors": True}  # the plan needs it; on a host without 512-bit vectors only a preference
    made = (("jit", JitBackend(use_cache=False, progress=False, threads=1, loop_steps=steps)),
            ("packed", JitBackend(use_cache=False, progress=False, threads=1, loop_steps={**steps, "row_lanes": False})),
            ("split", JitBackend(use_cache=False, progress=False, threads=2, split_calls_from=0, loop_steps=steps)),
            ("interp", InterpreterBackend()))
    return {name: instantiate(vmfb, be)[1] for name, be in made}


@pytest.fixture(scope="module", params=SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
def shape_and_instances(request):
    return request.param, _backends(*request.param)


@pytest.mark.parametrize("overlap", [False, True], ids=["apart", "output is the right-hand side"])
def test_rows_in_lanes_agree_with_the_interpreter(shape_and_instances, overlap):
    (m, n, k), insts = shape_and_instances
    out_rows = max(m, k) if overlap else m
    for seed in (1, 2):
        out = {name: run_matmul(inst, m, n, k, seed, out_rows=out_rows, overlap=overlap) for name, inst in insts.items()}
        assert out["jit"] == out["interp"], (seed, "rows in lanes")
        assert out["packed"] == out["interp"] and out["split"] == out["interp"], seed


def test_a_short_right_hand_side_traps_as_the_interpreter_does(shape_and_instances):
    (m, n, k), insts = shape_and_instances

    def call(inst, b_elements):
        rng = np.random.default_rng(b_elements)
        a = VmBuffer.from_bytes(rng.standard_normal(m * k).astype(np.float32).tobytes())
        out = VmBuffer.from_bytes(rng.standard_normal(m * n).astype(np.float32).tobytes())
        b = VmBuffer.from_bytes(rng.standard_normal(b_elements).astype(np.float32).tobytes())
        try:
            inst.lookup("mm").call([out, a, b, m, n, k])
        except Error as e:
            return type(e).__name__, out.tobytes()
        return None, out.tobytes()

    for b_elements in (n * k - 1, 3):
        got = {name: call(inst, b_elements) for name, inst in insts.items()}
        assert got["interp"][0] is not None
        assert got["jit"] == got["interp"] and got["split"] == got["interp"], b_elements


def test_the_corpus_transposed_matmul_runs_its_rows_in_lanes(corpus_module):
    """The corpus's out = a * b^T (compiled by iree-compile; the corpus tests check its results
    against IREE's runtime): IREE tiles 16 x 128 outputs as 16 x 64 workgroups, which take the
    rows in lanes, while 32 rows a workgroup keep the packed blocking."""
    from jitvm.verify.embedded import embedded_modules

    m = corpus_module("mlir/matmul_transposed_rhs")
    found = {}
    for _, data in embedded_modules(load_module(m.vmfb.read_bytes())):
        for vf in verify_module(load_module(bytes(data))).functions:
            for nest in find_nests(vf):
                p = jam.plan(vf, nest, wide=True, pack=True)
                if p is not None and p.outer is not None:
                    found[vf.name.split("_dispatch")[0]] = (p.outer.factor, p.outer.inner)
    assert found.get("mmt_16x128x40") == (jam.ROW_LANES, jam.ROW_INNER), found
    assert found.get("mmt_32x64x24") == (jam.OUTER_FACTOR, jam.OUTER_INNER_WIDE), found
