"""The two backends against each other: the JIT equals the reference interpreter bit for bit.

Every call of the whole corpus (VM assembly, the interpreter's own IREE-fact programs, and
the MLIR programs through jitvm.load, dispatches included) runs under both backends: results
must be identical to the bit (floats and NaN payloads included, transcendental functions too,
since both backends call the same implementations), and a trap in one must be a trap in the
other with the same status code and message. No function may fall back to the interpreter.
Scalar programs are also called with random edge-value arguments, divisors that crash IREE
included (both jitvm backends must trap there).
"""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

import jitvm
from jitvm.fallback_interp import InterpreterBackend
from jitvm.fuzz.corpus import make_inputs
from jitvm.fuzz.oracles.calls import describe, instantiate, outcome, same_outcome, same_value, show
from jitvm.lower.backend import STATS, JitBackend
from tests.corpus import source_files
from tests.interp_support import program, program_stems
from tests.test_interp_random import DTYPE, PROGRAMS as SCALAR_PROGRAMS, _float, _int

VMASM = [name for name, kind, _ in source_files() if kind == "vmasm"]
MLIR = [name for name, kind, _ in source_files() if kind == "mlir"]


@pytest.fixture(scope="module")
def backends():
    return {"interp": InterpreterBackend(), "jit": JitBackend(use_cache=False, progress=False)}


@pytest.fixture(autouse=True)
def no_fallbacks():
    before = STATS["fallback_functions"]
    yield
    assert STATS["fallback_functions"] == before, "the JIT fell back to the interpreter"


def compare_raw_calls(vmfb, calls, backends) -> list[str]:
    """Runs `calls` ((function, args) pairs) in order in one instance per backend."""
    instances = {name: instantiate(vmfb, backend) for name, backend in backends.items()}
    problems = []
    for function, args in calls:
        got = {name: outcome(inst.lookup(function), args) for name, (_ctx, inst) in instances.items()}
        if not same_outcome(got["interp"], got["jit"]):
            shown = ", ".join(map(describe, args))
            problems.append(f"@{function}({shown}): interp {show(got['interp'])} != jit {show(got['jit'])}")
    return problems


@pytest.mark.parametrize("name", VMASM)
def test_vmasm_corpus(corpus_by_name, backends, name):
    cm = corpus_by_name[name]
    calls = [(c.function, [a.value for a in c.args]) for c in cm.calls]
    problems = compare_raw_calls(cm.vmfb, calls, backends)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("stem", program_stems())
def test_interpreter_fact_programs(backends, stem):
    cm = program(stem)
    calls = [(c.function, [a.value for a in c.args]) for c in cm.calls]
    problems = compare_raw_calls(cm.vmfb, calls, backends)
    assert not problems, "\n".join(problems)


def _random_args(rng: random.Random, codes) -> list:
    return [_int(rng, 32 if c == "i" else 64) if c in "iI" else _float(rng, c) for c in codes]


@pytest.mark.parametrize("name", SCALAR_PROGRAMS)
def test_random_scalar_calls(corpus_by_name, backends, name):
    """Edge values and random bit patterns; division by zero and INT_MIN / -1 are kept."""
    cm = corpus_by_name[name]
    _ctx, probe = instantiate(cm.vmfb, backends["interp"])
    rng = random.Random(f"{name}/jit-vs-interp")
    calls = []
    for function in cm.exports:
        codes = probe.lookup(function).cconv.args
        if codes:
            calls += [(function, _random_args(rng, codes)) for _ in range(40)]
    problems = compare_raw_calls(cm.vmfb, calls, backends)
    assert not problems, "\n".join(problems[:40])


def _results(module, function, args):
    try:
        r = module[function](*args)
    except jitvm.Trap as e:
        return ("trap", e.status_name, e.message)
    return ("ok", [] if r is None else list(r) if isinstance(r, tuple) else [r])


def _same_api_value(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape and a.tobytes() == b.tobytes())
    return same_value(a, b)


@pytest.mark.parametrize("name", MLIR)
def test_mlir_corpus(corpus_module, name):
    """Whole programs through jitvm.load: the HAL, dispatches and host code under each backend."""
    m = corpus_module(name)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a JIT fallback warning fails the test
        modules = {b: jitvm.load(str(m.vmfb), backend=b) for b in ("interp", "jit")}
    problems = []
    for round_ in (1, 2):
        for i, call in enumerate(m.calls):
            args = make_inputs(m, i)
            got = {b: _results(mod, call.function, args) for b, mod in modules.items()}
            a, b = got["interp"], got["jit"]
            if a[0] != b[0] or (a[0] == "trap" and a[1:] != b[1:]):
                problems.append(f"round {round_} {call}: interp {a[:2]} != jit {b[:2]}")
            elif a[0] == "ok" and (len(a[1]) != len(b[1]) or not all(map(_same_api_value, a[1], b[1]))):
                problems.append(f"round {round_} {call}: results differ")
    assert not problems, "\n".join(problems)


def test_yielding_functions(corpus_by_name, backends):
    """vm.yield and vm.call.yieldable (IREE's own invoke never returns from these, so the
    corpus does not call them under the oracle): both backends resume and agree."""
    cm = corpus_by_name["vmasm/yield_variadic"]
    calls = [("yield_twice", [5]), ("yield_twice", [-3]), ("yieldable_call", [7]), ("yieldable_call", [0])]
    assert not compare_raw_calls(cm.vmfb, calls, backends)
    _ctx, jit = instantiate(cm.vmfb, backends["jit"])
    assert jit.lookup("yield_twice").call([5]) == [12]
    assert jit.lookup("yieldable_call").call([7]) == [21, 14, 121]
