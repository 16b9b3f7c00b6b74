"""A replayed sequence wakes the pool first only when its last run used the pool
(runtime.exec.replay: SequenceT.used_pool). A woken pool thread spins; where the dispatches all
run on the calling thread that bought nothing and, on this project's VM, slowed one-thread
sequences by 20-45%. The pool's generation word counts wake-ups and posts."""

from __future__ import annotations

import pytest

import jitvm
from jitvm.fuzz.corpus import make_inputs
from jitvm.runtime.exec import nativecode
from jitvm.lower.backend import JitBackend


@pytest.fixture(scope="module")
def scale_rowsum(corpus_module):
    """(function, its inputs, the runner) of a call replaying two dispatches, on 2 threads."""
    if not nativecode.native().pooled:
        pytest.skip("no thread pool on this host")
    m = corpus_module("mlir/workgroups")
    index = next(i for i, c in enumerate(m.calls) if c.function == "scale_rowsum")
    backend = JitBackend(threads=2, progress=False, use_cache=False)
    module = jitvm.load(str(m.vmfb), backend=backend)
    runner = backend.dispatch_runner()
    yield module["scale_rowsum"], make_inputs(m, index), runner
    runner.force_threads = None


def _wakes(fn, args, runner, force: int) -> int:
    """Generation bumps of the third call after switching to `force` threads."""
    runner.force_threads = force
    fn(*args)
    fn(*args)
    before = runner.pool().state.generation
    fn(*args)
    return runner.pool().state.generation - before


def test_a_sequence_on_the_calling_thread_leaves_the_pool_asleep(scale_rowsum):
    assert _wakes(*scale_rowsum, force=1) == 0


def test_a_sequence_that_posts_wakes_the_pool_first(scale_rowsum):
    assert _wakes(*scale_rowsum, force=2) == 3  # the warm-up, then one post per dispatch
    assert _wakes(*scale_rowsum, force=1) == 0  # and stops once it no longer posts


def test_pool_threads_sleep_once_the_sequence_ends(corpus_module, monkeypatch):
    """A pool thread spins for the next job only while its holder posts: after a sequence
    (and during a step on the calling thread) it sleeps at once, not after its spin, which
    took a core from the caller and the host code between calls on a busy machine. With a
    spin of a minute, only the rest word can put it to sleep within the wait below."""
    import time

    from jitvm.runtime.exec import workers

    if not nativecode.native().pooled:
        pytest.skip("no thread pool on this host")
    monkeypatch.setattr(workers, "SPIN_NS", 60 * 10**9)
    m = corpus_module("mlir/workgroups")
    index = next(i for i, c in enumerate(m.calls) if c.function == "scale_rowsum")
    backend = JitBackend(threads=2, progress=False, use_cache=False)
    fn = jitvm.load(str(m.vmfb), backend=backend)["scale_rowsum"]
    runner = backend.dispatch_runner()
    runner.force_threads = 2
    args = make_inputs(m, index)
    try:
        for _ in range(3):
            fn(*args)
            assert runner.last_threads == 2
            state = runner.pool().state
            deadline = time.monotonic() + 20
            while state.generation_sleepers != 1 and time.monotonic() < deadline:
                time.sleep(0.005)
            assert state.generation_sleepers == 1, "the pool thread kept spinning after the sequence"
    finally:
        runner.close()
