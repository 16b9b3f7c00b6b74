"""Workgroups on several threads: `jitvm.load(..., threads=N)` gives identical results for any N."""

from __future__ import annotations

import numpy as np
import pytest

import jitvm
from jitvm.fuzz.corpus import make_inputs
from jitvm.runtime.exec import runner as dispatch
from jitvm.lower.backend import JitBackend
from tests.corpus import source_files

MLIR = [name for name, kind, _ in source_files() if kind == "mlir"]


def _results(module, function, args):
    try:
        r = module[function](*args)
    except jitvm.Trap as e:
        return ("trap", e.status_name, e.message)
    out = [] if r is None else list(r) if isinstance(r, tuple) else [r]
    return ("ok", [x.tobytes() + str(x.dtype).encode() + bytes(str(x.shape), "ascii")
                   if isinstance(x, np.ndarray) else repr(x) for x in out])


@pytest.fixture
def workgroups_per_thread(monkeypatch):
    """Records, per dispatch, how many threads the native runner split the grid over."""
    seen = []
    real = dispatch.NativeDispatchRunner.run_sequence

    def run_sequence(self, seq, bases):
        try:
            real(self, seq, bases)
        finally:
            seen.extend(n for n in seq.threads_used() if n)

    monkeypatch.setattr(dispatch.NativeDispatchRunner, "run_sequence", run_sequence)
    return seen


@pytest.mark.parametrize("name", MLIR)
def test_any_thread_count_gives_the_same_results(corpus_module, name):
    m = corpus_module(name)
    modules = {n: jitvm.load(str(m.vmfb), threads=n) for n in (1, 2, 3)}
    for i, call in enumerate(m.calls):
        args = make_inputs(m, i)
        got = {n: _results(mod, call.function, args) for n, mod in modules.items()}
        assert got[1] == got[2] == got[3], f"{call}: results depend on the thread count"


def test_threads_split_the_grid(corpus_module, workgroups_per_thread):
    m = corpus_module("mlir/workgroups")
    # A backend of its own: the shared one remembers these small grids from earlier tests
    # and runs them on one thread (see test_jit_dispatch_traps).
    module = jitvm.load(str(m.vmfb), backend=JitBackend(threads=2, progress=False))
    for i, call in enumerate(m.calls):
        module[call.function](*make_inputs(m, i))
    assert workgroups_per_thread.count(2) >= 3, f"threads per dispatch: {workgroups_per_thread}"


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_bad_thread_counts_are_refused(corpus_module, bad):
    m = corpus_module("mlir/matmul")
    with pytest.raises(jitvm.ArgumentError, match="threads must be a positive integer"):
        jitvm.load(str(m.vmfb), threads=bad)

