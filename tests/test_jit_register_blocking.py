"""Register blocking (lower.loops.jam.OuterJam): the jammed loop's parent runs several iterations
at once too. A matmul-shaped nest with a constant column count (a multiple of the inner
factor) and a row count that leaves 0-3 rows to the remainder, or a constant one with none,
under the JIT and the interpreter; results must be bit-identical, also when the output
overlaps an input (the buffers are not apart: the blocked copy must not run). With the
right-hand side stored transposed (each column's weights a row of their own), the blocking
takes few columns and more rows (jam.STRIDED_FACTOR x STRIDED_INNER)."""

from __future__ import annotations

import pytest

from jitvm.fallback_interp import InterpreterBackend
from jitvm.frontend.asm import assemble
from jitvm.frontend.module import load_module
from jitvm.fuzz.oracles.calls import instantiate
from jitvm.lower.loops import jam
from jitvm.lower.backend import JitBackend
from jitvm.lower.loops.analysis import find_nests
from jitvm.verify import verify_module
from tests.matmul_program import matmul_vmasm, run_matmul

N, K = 32, 5  # columns (P: 2 groups of 16 per row), reduction length


def _source(rows: int | None, transposed_b: bool = False) -> str:
    """Rows from the argument (None) or the constant `rows`; N and K constant."""
    return matmul_vmasm(rows, N, K, fused=False, transposed_b=transposed_b)


def _plan(rows: int | None, transposed_b: bool = False):
    vf = verify_module(load_module(assemble(_source(rows, transposed_b), "<blocked>"))).functions[0]
    (nest,) = find_nests(vf)
    return jam.plan(vf, nest)


@pytest.fixture(scope="module", params=[(None, False), (8, False), (None, True), (8, True)],
                ids=["rows from the argument", "8 rows", "rows from the argument, b transposed",
                     "8 rows, b transposed"])
def instances(request):
    rows, transposed_b = request.param
    vmfb = assemble(_source(rows, transposed_b), "<blocked>")
    jit = JitBackend(use_cache=False, progress=False, threads=1)
    return rows, transposed_b, {name: instantiate(vmfb, be)[1] for name, be in (("jit", jit),
                                                                                ("interp", InterpreterBackend()))}


def test_the_row_loop_is_blocked_over_the_column_groups():
    for rows, remainder in ((None, True), (8, False)):
        plan = _plan(rows)
        assert plan is not None and plan.outer is not None, rows
        assert plan.outer.loop.id == 0 and plan.loop.id == 1
        assert (plan.outer.factor, plan.outer.inner) == (jam.OUTER_FACTOR, jam.OUTER_INNER)
        assert plan.outer.jammed_remainder is remainder


def test_a_transposed_right_hand_side_is_blocked_over_few_columns():
    """Each column reads its own row of b (K elements apart): jam.STRIDED_FACTOR rows at
    once, jam.STRIDED_INNER columns inside them, instead of OUTER_FACTOR x OUTER_INNER."""
    for rows in (None, 8):
        plan = _plan(rows, transposed_b=True)
        assert plan is not None and plan.outer is not None, rows
        assert (plan.outer.factor, plan.outer.inner) == (jam.STRIDED_FACTOR, jam.STRIDED_INNER)
    assert (jam.STRIDED_FACTOR, jam.STRIDED_INNER) != (jam.OUTER_FACTOR, jam.OUTER_INNER)


def _run(inst, m: int, seed: int, overlap: bool, transposed_b: bool) -> bytes:
    return run_matmul(inst, m, N, K, seed, out_rows=max(m, K), overlap=overlap)


@pytest.mark.parametrize("m", [4, 5, 6, 7, 9, 12])
@pytest.mark.parametrize("overlap", [False, True], ids=["apart", "output is the right-hand side"])
def test_blocked_rows_agree_with_the_interpreter(instances, m, overlap):
    rows, transposed_b, backends = instances
    if rows is not None:
        m = rows
    out = {name: _run(inst, m, m, overlap, transposed_b) for name, inst in backends.items()}
    assert out["jit"] == out["interp"]


def test_a_two_column_image_is_blocked_two_by_thirty_two_around_a_conv_window(corpus_module):
    """The corpus's 2x2-output 3x3 conv (compiled by iree-compile): its column loop runs
    twice and holds the channel loop around the kernel window, so it is blocked SMALL_Q x 32
    (the corpus tests check its results against IREE's interpreter)."""
    from jitvm.verify.embedded import embedded_modules

    m = corpus_module("mlir/conv_small_image")
    host = load_module(m.vmfb.read_bytes())
    plans = []
    for _, data in embedded_modules(host):
        for vf in verify_module(load_module(bytes(data))).functions:
            plans += [p for p in (jam.plan(vf, nest) for nest in find_nests(vf)) if p is not None]
    blocked = [(p.outer.factor, p.outer.inner) for p in plans if p.outer is not None]
    assert (jam.SMALL_Q, 32) in blocked, f"register-blocked nests: {blocked}"


# --- 512-bit vectors (lower.module.WIDE_VECTORS_ATTRIBUTE, jam.OUTER_INNER_WIDE) ---------------

def _plan_of(source: str, wide: bool):
    vf = verify_module(load_module(assemble(source, "<blocked>"))).functions[0]
    (nest,) = find_nests(vf)
    return jam.plan(vf, nest, wide=wide)


def test_wide_vectors_block_thirty_two_columns_where_they_divide_the_row():
    """4 x 32 with 512-bit vectors when P's trip count is a multiple of 32; 48 columns (a
    multiple of 16 only) and a transposed right-hand side keep their narrow blocking."""
    for rows in (None, 8):
        wide = _plan_of(matmul_vmasm(rows, 32, K, fused=False), wide=True)
        assert (wide.outer.factor, wide.outer.inner) == (jam.OUTER_FACTOR, jam.OUTER_INNER_WIDE), rows
        narrow = _plan_of(matmul_vmasm(rows, 32, K, fused=False), wide=False)
        assert (narrow.outer.factor, narrow.outer.inner) == (jam.OUTER_FACTOR, jam.OUTER_INNER), rows
        odd = _plan_of(matmul_vmasm(rows, 48, K, fused=False), wide=True)
        assert (odd.outer.factor, odd.outer.inner) == (jam.OUTER_FACTOR, jam.OUTER_INNER), rows
        strided = _plan_of(matmul_vmasm(rows, 32, K, fused=False, transposed_b=True), wide=True)
        assert (strided.outer.factor, strided.outer.inner) == (jam.STRIDED_FACTOR, jam.STRIDED_INNER), rows
    assert jam.OUTER_INNER_WIDE > jam.OUTER_INNER


def test_wide_vectors_mark_the_code_of_blocked_nests_only():
    """A function with a register-blocked nest asks LLVM for 512-bit vectors with
    wide_vectors; one whose nest is jammed but not blocked (columns from the argument: no
    constant trip count) never does."""
    from jitvm.lower.module import WIDE_VECTORS_ATTRIBUTE, ModuleLowering

    for source, blocked in ((_source(None), True), (matmul_vmasm(None, None, K, fused=False), False)):
        verified = verify_module(load_module(assemble(source, "<blocked>")))
        for wide in (False, True):
            text = str(ModuleLowering(verified, "t", wide_vectors=wide).lower())
            defines = [line for line in text.splitlines() if line.startswith("define") and "_f0" in line]
            assert defines and all((WIDE_VECTORS_ATTRIBUTE in line) is (wide and blocked) for line in defines), \
                (wide, blocked, defines)


@pytest.fixture(scope="module", params=[None, 8], ids=["rows from the argument", "8 rows"])
def wide_instances(request):
    vmfb = assemble(matmul_vmasm(request.param, 64, K, fused=False), "<blocked>")
    backends = (("wide", JitBackend(use_cache=False, progress=False, threads=1, loop_steps={"wide_vectors": True})),
                ("interp", InterpreterBackend()))
    return request.param, {name: instantiate(vmfb, be)[1] for name, be in backends}


@pytest.mark.parametrize("m", [4, 5, 7, 9])
@pytest.mark.parametrize("overlap", [False, True], ids=["apart", "output is the right-hand side"])
def test_wide_blocked_rows_agree_with_the_interpreter(wide_instances, m, overlap):
    """64 columns: two groups of 32 per row, rows 4 at a time and the rest alone."""
    rows, backends = wide_instances
    if rows is not None:
        m = rows
    out = {name: run_matmul(inst, m, 64, K, m, out_rows=max(m, K), overlap=overlap)
           for name, inst in backends.items()}
    assert out["wide"] == out["interp"]
