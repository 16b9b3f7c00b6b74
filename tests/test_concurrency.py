"""Several Python threads calling one loaded module at once (issue 18): every result equals
the sequential call's. The calls share the module's memoized command buffers (each
execution takes a replica of its own, hal.prepared), its dispatch runner and pool; the JIT's
run with the GIL released from the arguments' arrival to the results' return."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import jitvm

THREADS = 4


def _inputs(seed: int):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((33, 17), dtype=np.float32), rng.standard_normal((17, 9), dtype=np.float32))


def _hammer(fn, calls: int) -> list[str]:
    """Runs `calls` calls on each of THREADS threads at once; the mismatches with sequential calls."""
    wanted = {seed: fn(*_inputs(seed)) for seed in range(THREADS * 4)}
    problems: list[str] = []
    start = threading.Barrier(THREADS)

    def work(k: int) -> None:
        start.wait()
        for i in range(calls):
            seed = (k * 4 + i) % len(wanted)
            got = fn(*_inputs(seed))
            if got.tobytes() != wanted[seed].tobytes():
                problems.append(f"thread {k} call {i}: differs from the sequential result")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return problems


@pytest.mark.parametrize("backend, calls", [("jit", 1000), ("interp", 10)])
def test_threads_calling_one_module_get_the_sequential_results(corpus_module, backend, calls):
    module = jitvm.load(str(corpus_module("mlir/matmul").vmfb), backend=backend, threads=2)
    fn = module.function("matmul_33x17x9")
    assert not _hammer(fn, calls)
    if backend == "jit":
        assert fn._plan is not None  # the native call (jitvm.api.plan) ran them


def test_threads_calling_while_results_are_kept_alive(corpus_module):
    """Results handed over to numpy stay valid while other threads' calls reuse the heap."""
    module = jitvm.load(str(corpus_module("mlir/matmul").vmfb), threads=1)
    fn = module.function("matmul_33x17x9")
    kept = {}

    def work(k: int) -> None:
        for i in range(200):
            kept[(k, i % 8)] = (i, fn(*_inputs((k + i) % 8)))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for (k, _), (i, got) in kept.items():
        assert got.tobytes() == fn(*_inputs((k + i) % 8)).tobytes()


def test_a_memoized_call_runs_no_python_between_arguments_and_results(corpus_module, monkeypatch):
    """After the first calls (which prepare the command buffer's replay), a call's HAL
    functions, queue execution and dispatches are native: no HAL function implemented in
    Python, no call back from native execution, no dispatch from Python."""
    from jitvm.runtime.exec.runner import NativeDispatchRunner
    from jitvm.runtime.modules.hal import native
    from jitvm.runtime.vm.interface import PythonFunction

    module = jitvm.load(str(corpus_module("mlir/matmul").vmfb), threads=1)
    fn = module.function("matmul_33x17x9")
    args = _inputs(0)
    for _ in range(3):
        fn(*args)
    seen = []
    callback = native._callback
    monkeypatch.setattr(native, "_callback", lambda *a: (seen.append("hal callback"), callback(*a))[1])
    python_call = PythonFunction.call
    monkeypatch.setattr(PythonFunction, "call", lambda self, a: (seen.append(self.name), python_call(self, a))[1])
    run = NativeDispatchRunner.run_sequence
    monkeypatch.setattr(NativeDispatchRunner, "run_sequence", lambda *a: (seen.append("dispatch"), run(*a))[1])
    for _ in range(20):
        fn(*args)
    assert not seen
