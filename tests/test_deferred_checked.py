"""Quick tiers compile a nest's checked copy only when its guard first fails (lower.deferred).

The checked copy runs where the guard finds an access out of range: until the trap the
interpreter raises at the same pc. Generated kernel programs (whose accesses run out of
range on some inputs) must agree with the interpreter bit for bit, traps included, on the
baseline tier, with some deferred copies compiled on the way; a module that never fails a
guard compiles none.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import jitvm
from jitvm.fallback_interp import InterpreterBackend
from jitvm.fuzz.generators.strategies import programs
from jitvm.fuzz.oracles.differential import run_program
from jitvm.lower import deferred
from jitvm.lower.backend import JitBackend
from jitvm.lower.emit.types import I1, const
from jitvm.lower.loops import versioning
from jitvm.lower.loops.guard import all_iterations_in_range

pytestmark = pytest.mark.filterwarnings("ignore:The recursion limit will not be reset")


@pytest.fixture(scope="module")
def backends():
    return {"interp": InterpreterBackend(),
            "jit": JitBackend(use_cache=False, progress=False, threads=2, split_calls_from=4, tier="baseline")}


def _agree(backends, examples: int) -> None:
    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
    @given(program=programs("kernel"))
    def check(program):
        report = run_program(program, backends)
        assert not report.problems, "\n".join(report.problems[:5]) + "\n\nprogram:\n" + program.listing()

    check()


def test_kernel_programs_agree_with_deferred_checked_copies(backends):
    before = dict(deferred.STATS)
    _agree(backends, 80)
    # some guards failed: their copies were compiled then, and ran to the trap
    assert all(deferred.STATS[k] > before[k] for k in ("compiled", "trapped")), deferred.STATS


def _failing_guards(monkeypatch):
    def failing_guard(e, nest):
        ok, ranges, rest, boxes = all_iterations_in_range(e, nest)
        return const(I1, 0), ranges, rest, boxes
    monkeypatch.setattr(versioning, "all_iterations_in_range", failing_guard)


def test_kernel_programs_agree_when_every_guard_fails(monkeypatch):
    """A guard that fails on the way to no trap (generated programs that fail one trap)
    hands the nest's registers to the copy and takes back what it writes: with every guard
    made to fail, generated kernels run every nest through its deferred copy."""
    _failing_guards(monkeypatch)
    before = dict(deferred.STATS)
    _agree({"interp": InterpreterBackend(), "jit": JitBackend(use_cache=False, progress=False, tier="baseline")}, 30)
    assert deferred.STATS["ran_to_exit"] > before["ran_to_exit"], deferred.STATS


def test_every_nest_through_its_deferred_checked_copy_computes_the_interpreters_bits(tmp_path, monkeypatch):
    """With every guard made to fail, the CNN's nests all run their deferred copies to the
    exit and give the interpreter's bits, on the second call (copies compiled) too."""
    monkeypatch.setenv("JITVM_CACHE_DIR", str(tmp_path / "store"))
    _failing_guards(monkeypatch)
    before = dict(deferred.STATS)
    x = np.random.default_rng(4).random((1, 28, 28, 1), np.float32)
    m = jitvm.load("example:cnn", backend=JitBackend(progress=False, tier="baseline"))
    want = jitvm.load("example:cnn", backend="interp").predict(x)
    for _ in range(2):
        assert np.array_equal(m.predict(x).view(np.uint32), want.view(np.uint32))
    assert deferred.STATS["ran_to_exit"] > before["ran_to_exit"]
    assert deferred.STATS["compiled"] - before["compiled"] == deferred.STATS["ran_to_exit"] - before["ran_to_exit"]
    assert deferred.STATS["trapped"] == before["trapped"]


def test_a_module_that_never_fails_a_guard_compiles_no_checked_copy(tmp_path, monkeypatch):
    monkeypatch.setenv("JITVM_CACHE_DIR", str(tmp_path / "store"))
    before = deferred.STATS["compiled"]
    backend = JitBackend(progress=False, tier="baseline")
    x = np.random.default_rng(3).random((1, 28, 28, 1), np.float32)
    got = jitvm.load("example:cnn", backend=backend).predict(x)
    want = jitvm.load("example:cnn", backend="interp").predict(x)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert deferred.STATS["compiled"] == before
    assert deferred._cells  # its nests' checked copies were deferred
