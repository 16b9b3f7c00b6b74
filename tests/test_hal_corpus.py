"""Every MLIR corpus program through jitvm.load equals IREE's runtime, call for call, on each
backend (the JIT and the reference interpreter).

Each program's CALL list runs twice in a row in ONE jitvm module and ONE IREE context, so
module state (mutable globals, memoized command buffers, executables) must persist and
evolve identically. Integers and arithmetic floats must match bit for bit; programs whose
results go through libm-style functions (exp, log, tanh, ...) may differ by a few ulps.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitvm
from tests.corpus import source_files
from tests.hal_support import backends_under_test, corpus_calls_differ_from_iree

MLIR = [name for name, kind, _ in source_files() if kind == "mlir"]
BACKENDS = backends_under_test()

# Programs whose results involve transcendental functions: IREE uses its own polynomial
# approximations, so a few ulps of difference are allowed there.
TRANSCENDENTAL_ULPS = {"mlir/f32_transcendental": 4, "mlir/f64_math": 4, "mlir/softmax": 4, "mlir/check_float": 4}

# Programs too slow for the default run on the reference interpreter (measured; they run
# under -m slow, and on the JIT in the default run).
SLOW_ON_INTERPRETER: set[str] = set()


def _params():
    for backend in BACKENDS:
        for name in MLIR:
            marks = [pytest.mark.slow] if backend == "interp" and name in SLOW_ON_INTERPRETER else []
            yield pytest.param(backend, name, marks=marks, id=f"{backend}-{name}")


@pytest.mark.parametrize("backend,name", list(_params()))
def test_corpus_program_equals_iree(corpus_module, backend, name):
    m = corpus_module(name)
    allowed = TRANSCENDENTAL_ULPS.get(name, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "JIT not available" / interpreter fallbacks
        module = jitvm.load(str(m.vmfb), backend=backend)
    problems = corpus_calls_differ_from_iree(module, m, m.vmfb, allowed)
    assert not problems, "\n".join(problems)
    assert m.calls, "every corpus program has calls"


@pytest.mark.parametrize("backend", BACKENDS)
def test_expected_traps_really_trap(corpus_module, backend):
    m = corpus_module("mlir/check_fail_control")
    module = jitvm.load(str(m.vmfb), backend=backend)
    with pytest.raises(jitvm.Trap, match=r"check.expect_eq failed"):
        module.must_fail()


@pytest.mark.parametrize("backend", BACKENDS)
def test_results_are_fresh_copies(corpus_module, backend):
    """A returned array is the caller's: later calls must not change it."""
    m = corpus_module("mlir/mutable_global")
    module = jitvm.load(str(m.vmfb), backend=backend)
    first = module.accumulate(np.ones(4, np.float32))
    second = module.accumulate(np.ones(4, np.float32))
    assert first.tolist() == [1.0] * 4 and second.tolist() == [2.0] * 4
    count, state = module.read_state()
    assert state.tolist() == [2.0] * 4 and isinstance(count, int)
