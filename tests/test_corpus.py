"""The corpus itself: it builds, the cache works, and IREE runs every CALL as the directives say.

These tests pin the corpus to IREE's own runtime (iree.runtime, driver "local-sync"), so that
when a jitvm backend disagrees with IREE on a corpus call, the corpus is known to be right.
"""

from __future__ import annotations

import numpy as np
import pytest

from jitvm.fuzz.corpus import Corpus, CorpusError, make_inputs, parse_directives
from jitvm.fuzz.oracles.iree import run_module
from jitvm.runtime.vm import semantics
from tests.corpus import CORPUS, build_corpus


def test_corpus_builds(corpus):
    names = {m.name for m in corpus}
    with_exes = [m for m in corpus if m.executables]
    assert len(with_exes) >= 20, "VMVX executables were not dumped"
    assert any(n.startswith("mlir/") for n in names)
    assert any(n.startswith("vmasm/") for n in names)
    for m in corpus:
        assert m.vmfb.is_file() and m.vmfb.stat().st_size > 0, m.name
        assert m.kind in ("mlir", "vmasm")
        if m.kind == "mlir":
            # Host-only programs (scalars) have no dispatches, hence no executables.
            assert all(e.is_file() for e in m.executables)
            assert m.calls, f"{m.name}: no CALL directives and not a check-test file"
        else:
            assert m.executables == ()
        called = {c.function for c in m.calls}
        assert m.expect_trap <= called | set(m.exports), m.name
        for c in m.calls:
            assert c.function in m.exports, f"{m.name}: CALL of unknown export @{c.function}"


def test_check_fail_control_present(corpus_module):
    m = corpus_module("mlir/check_fail_control")
    assert m.check_tests and m.expect_trap == {c.function for c in m.calls}


def test_cache_hit_runs_no_subprocess(corpus, monkeypatch):
    import subprocess

    def boom(*a, **k):
        raise AssertionError(f"subprocess started on a warm cache: {a[0] if a else k}")

    monkeypatch.setattr(subprocess, "run", boom)
    monkeypatch.setattr(subprocess, "Popen", boom)
    again = build_corpus(cache_dir=corpus[0].vmfb.parent.parent)
    assert CORPUS.last_build_subprocess_count == 0
    assert [m.vmfb for m in again] == [m.vmfb for m in corpus]


def test_cache_key_changes_with_source(tmp_path):
    # A private corpus and cache: one small program compiled, then recompiled after a flag change.
    src_dir = tmp_path / "vmasm"
    src_dir.mkdir()
    (tmp_path / "mlir").mkdir()
    text = (
        "// CALL @f(i32=2)\nvm.module @k version 0\nvm.export @f\n"
        "vm.func @f(%i0: i32) -> (i32) {\n^bb0:\n  %i1 = vm.add.i32 %i0, %i0\n"
        "  vm.return %i1\n}\n"
    )
    (src_dir / "k.vmasm").write_text(text)
    private = Corpus(tmp_path)
    cache = tmp_path / "cache"
    first = private.build(cache_dir=cache)
    assert private.last_build_subprocess_count == 1
    private.build(cache_dir=cache)
    assert private.last_build_subprocess_count == 0
    (src_dir / "k.vmasm").write_text(text.replace("add.i32", "mul.i32"))
    second = private.build(cache_dir=cache)
    assert private.last_build_subprocess_count == 1
    assert first[0].vmfb != second[0].vmfb


def test_directive_parsing():
    d = parse_directives(
        "// FLAGS: --a=1 --b\n// CALL @f(2x3xf32, i32)\n// EXPECT-TRAP @g\n"
        "func.func @f(%a: tensor<2x3xf32>, %b: i32) {\n  return\n}\n"
        "func.func private @h() {\n  return\n}\n",
        "mlir",
    )
    assert d.flags == ("--a=1", "--b")
    assert d.calls[0].function == "f"
    assert d.calls[0].args[0].shape == (2, 3) and d.calls[0].args[0].dtype == "f32"
    assert d.calls[0].args[1].is_scalar
    assert d.expect_trap == {"g"} and d.exports == ("f",)
    assert d.targets == ("vmvx", "llvm-cpu")
    h = parse_directives("// TARGETS: llvm-cpu\n// LLVM-CPU-FLAGS: --x\n// CALL @f(4xf16, 2x2xbf16)\n", "mlir")
    assert h.targets == ("llvm-cpu",) and [a.dtype for a in h.calls[0].args] == ["f16", "bf16"]
    assert h.flags_for("llvm-cpu") == ("--x",) and h.flags_for("vmvx") == ()
    with pytest.raises(CorpusError, match="bad TARGETS directive 'cuda'"):
        parse_directives("// TARGETS: cuda\n", "mlir")
    v = parse_directives("// CALL @f(i32=0xFFFFFFFF, f32=-0.0, f64=nan)\n", "vmasm")
    a = v.calls[0].args
    assert a[0].value == -1 and str(a[1].value) == "-0.0" and np.isnan(a[2].value)


def test_inputs_are_deterministic(corpus_module):
    m = corpus_module("mlir/matmul")
    a, b = make_inputs(m, 0), make_inputs(m, 0)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert a[0].shape == (4, 8) and a[0].dtype == np.float32
    c = make_inputs(m, 1)
    assert c[0].shape == (33, 17)


def test_programs_build_for_their_first_target(corpus_module):
    """f16/bf16 programs are llvm-cpu modules (VMVX cannot lower them); the rest VMVX ones."""
    half = corpus_module("mlir/f16_math")
    assert half.target == "llvm-cpu" and half.executables == ()
    assert corpus_module("mlir/matmul").target == "vmvx"
    args = make_inputs(corpus_module("mlir/bf16_math"), 0)
    assert args[0].dtype.name == "bfloat16" and args[0].shape == (37,)
    with pytest.raises(CorpusError, match="f64_math.mlir: does not compile for llvm-cpu"):
        build_corpus(names=["f64_math"], target="llvm-cpu")


def _ids(corpus_list):
    return [m.name for m in corpus_list]


@pytest.fixture(scope="session")
def outcomes(corpus):
    return {m.name: (m, run_module(m)) for m in corpus}


def test_every_call_runs_as_directed(outcomes):
    problems = []
    for name, (m, outs) in outcomes.items():
        for o in outs:
            if o.call.function in m.oracle_quirks:
                continue  # IREE misbehaves there by definition; jitvm's tests hold the line
            want_trap = o.call.function in m.expect_trap
            if o.call.function in m.oracle_crash and not semantics.IREE_DIVISION_FAULTS:
                want_trap = False  # IREE's aarch64 build divides on (jitvm traps: its VM semantics)
            if want_trap != o.trapped:
                what = o.error.strip().splitlines()[-1] if o.error else o.results
                problems.append(f"{name} {o.call}: trapped={o.trapped}, expected {want_trap}: {what}")
    assert not problems, "\n".join(problems)


def test_check_tests_pass_and_control_fails(outcomes):
    # The check module is implemented in Python (jitvm/fuzz/oracles/iree_check.py) because
    # iree.runtime does not ship IREE's C++ check module.
    seen = 0
    for name, (m, outs) in outcomes.items():
        if not m.check_tests:
            continue
        for o in outs:
            seen += 1
            if o.call.function in m.expect_trap:
                assert o.trapped and "expect_" in o.error, f"{name} {o.call}: {o.error}"
            else:
                assert not o.trapped, f"{name} {o.call}: {o.error}"
    assert seen >= 10


def _sdiv_udiv(function: str, a: int, b: int, bits: int) -> int:
    """What aarch64's sdiv/udiv (and the msub of a remainder) give: x / 0 == 0, INT_MIN / -1
    == INT_MIN; as the signed value the VM register holds."""
    mask = (1 << bits) - 1
    signed = "_s_" in function
    x, y = (a, b) if signed else (a & mask, b & mask)
    q = 0 if y == 0 else (abs(x) // abs(y)) * (1 if (x < 0) == (y < 0) else -1)
    r = (q * y) & mask
    v = (((x - r) if "rem" in function else q)) & mask
    return v - (1 << bits) if v >> (bits - 1) else v


def test_oracle_crash_calls_as_the_host_build_does(outcomes):
    # x86's IREE dies of SIGFPE there; aarch64's returns what the hardware divide gives.
    found = 0
    for name, (m, outs) in outcomes.items():
        for o in outs:
            if o.call.function in m.oracle_crash:
                found += 1
                if semantics.IREE_DIVISION_FAULTS:
                    assert o.trapped and "signal" in o.error, f"{name} {o.call}: {o.error}"
                    continue
                assert not o.trapped, f"{name} {o.call}: {o.error}"
                a, b = (arg.value for arg in o.call.args)
                bits = 64 if "i64" in o.call.function else 32
                assert o.results == [_sdiv_udiv(o.call.function, a, b, bits)], f"{name} {o.call}"
    assert found > 0


def test_mlir_results_match_numpy(outcomes):
    # Sanity of the harness itself: a few programs recomputed with numpy.
    m, outs = outcomes["mlir/matmul"]
    for o in outs:
        args = make_inputs(m, o.index)
        ref = args[0].astype(np.float64) @ args[1].astype(np.float64)
        if len(args) == 3:
            ref = ref + args[2]
        np.testing.assert_allclose(o.results[0], ref, rtol=1e-4, atol=1e-4)
    m, outs = outcomes["mlir/quant_matmul_i8"]
    args = make_inputs(m, 0)
    ref = args[0].astype(np.int32) @ args[1].astype(np.int32)
    np.testing.assert_array_equal(outs[0].results[0], ref)


def test_vmasm_spot_values(outcomes):
    m, outs = outcomes["vmasm/int_arith"]
    first = outs[0]
    assert first.results == [-2147483648, 2147483646, 2147483647, -1]  # i32 wraparound
    m, outs = outcomes["vmasm/control"]
    by_call = {str(o.call): o for o in outs}
    assert by_call["@loop_sum(i32=10)"].results == [45, 10]
    assert by_call["@factorial(i64=20)"].results == [2432902008176640000]
