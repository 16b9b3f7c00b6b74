"""The native thread-choice policy (runtime.exec.replay): which way a dispatch runs, given costs.

The policy runs in native code before every dispatch; these tests hand it measured costs of
their own (a CostT) and read its choices run by run."""

from __future__ import annotations

import pytest

from jitvm.runtime.exec import nativecode, replay
from jitvm.runtime.exec.nativecode import REPROBE, REPROBE_MAX
from jitvm.runtime.native.layout import CostT
from jitvm.runtime.exec.runner import NativeDispatchRunner
from jitvm.runtime.vm.objects import VmBuffer

FN = 0x1000  # an entry address the policy only uses as the key of its cost record
GRID = (8, 1, 1)


@pytest.fixture
def step():
    """(a one-step sequence of an 8-workgroup grid on 2 threads, that entry's cost record)."""
    if not nativecode.native().pooled:
        pytest.skip("no thread pool on this host")
    runner = NativeDispatchRunner(threads=2)
    seq = replay.Sequence(runner, 1)
    seq.set_step(0, (FN, 0), 0, 0, VmBuffer.allocate(16), GRID)
    yield seq, CostT.from_address(runner.cost_address(FN))
    runner.close()


def _measured(cost, one: float, many: float, runs: int = 10) -> None:
    cost.runs, cost.one, cost.many, cost.has_one, cost.has_many = runs, one, many, 1, 1


def test_first_runs_measure_both_ways(step):
    seq, cost = step
    assert seq.choose_threads(0) == 2  # first run: all threads (it is not measured)
    assert seq.choose_threads(0) == 1  # then the calling thread alone ...
    cost.has_one, cost.one = 1, 1e-4
    assert seq.choose_threads(0) == 2  # ... then all threads
    cost.has_many, cost.many = 1, 0.5e-4
    assert seq.choose_threads(0) == 2  # both known: the faster way


def test_threads_only_when_clearly_faster(step):
    seq, cost = step
    _measured(cost, one=1.1e-4, many=1e-4)  # faster on all threads, but within the margin
    assert seq.choose_threads(0) == 1
    _measured(cost, one=1e-4, many=1e-4)  # a tie: the calling thread
    assert seq.choose_threads(0) == 1
    _measured(cost, one=2e-4, many=1e-4)
    assert seq.choose_threads(0) == 2


def test_a_small_grid_stays_on_the_calling_thread_and_is_never_probed(step):
    """A grid one thread runs in under SMALL_GRID_S: never all threads, whatever they measured
    (a wake-up and the pool's spinning cost more than it could gain)."""
    seq, cost = step
    per_workgroup = 0.9 * nativecode.SMALL_GRID_S / GRID[0]
    _measured(cost, one=per_workgroup, many=per_workgroup / 4)
    assert all(seq.choose_threads(0) == 1 for _ in range(4 * REPROBE_MAX))
    cost.one = 1.2 * nativecode.SMALL_GRID_S / GRID[0]  # it grew: measured both ways again
    assert seq.choose_threads(0) == 2


def test_reprobes_back_off_while_the_choice_holds(step):
    seq, cost = step
    _measured(cost, one=2e-4, many=1e-4)
    picks = [seq.choose_threads(0) for _ in range(4000)]
    probes = [i for i, p in enumerate(picks) if p == 1]
    gaps = [b - a for a, b in zip(probes, probes[1:])]
    assert probes[0] == REPROBE
    assert gaps[:5] == [2 * REPROBE, 4 * REPROBE, 8 * REPROBE, 16 * REPROBE,
                        REPROBE_MAX]
    assert set(gaps[4:]) == {REPROBE_MAX}
    assert len(probes) < 4000 // REPROBE // 4  # well under one in REPROBE runs


def test_a_changed_choice_restarts_the_interval(step):
    seq, cost = step
    _measured(cost, one=2e-4, many=1e-4)
    picks = [seq.choose_threads(0) for _ in range(1000)]  # interval grown to 512 by now
    cost.one = 0.5e-4  # the calling thread alone became clearly faster
    picks = [seq.choose_threads(0) for _ in range(2000)]
    assert picks.count(1) > 1900
    probes = [i for i, p in enumerate(picks) if p == 2]
    gaps = [b - a for a, b in zip(probes, probes[1:])]
    assert probes[0] == 1  # the way dropped is measured again at once ...
    assert gaps[:2] == [2 * REPROBE, 4 * REPROBE]  # ... then looks start over from REPROBE


def test_forced_threads_bypass_the_policy(step):
    seq, cost = step
    _measured(cost, one=0.5e-4, many=1e-4)
    seq.struct.force = 2
    assert all(seq.choose_threads(0) == 2 for _ in range(100))


def test_a_flip_between_looks_rechecks_the_dropped_way_next_run(step):
    seq, cost = step
    _measured(cost, one=2e-4, many=1e-4)
    for _ in range(1000):
        seq.choose_threads(0)  # long since settled on all threads: looks are far apart
    cost.many = 9e-4  # one slow run on all threads (say, a core taken away) flips the choice
    assert seq.choose_threads(0) == 1
    assert seq.choose_threads(0) == 2  # ... and the way dropped is measured again at once


def test_one_slow_run_is_bounded_but_a_real_change_is_believed(step):
    """A run counts at most twice the larger of the two ways' averages: one run slowed by a
    core taken away cannot flip a settled choice, but a grid that became a thousand times
    costlier on both ways is believed at once (bounded by this way's average alone, the
    calling thread's estimate took ten runs to catch up, choosing by a stale figure)."""
    seq, cost = step
    _measured(cost, one=2e-4, many=1e-4)
    seq.record_cost(0, 2, 100 * 1e-4 * GRID[0])  # one run on all threads 100x slower
    assert cost.many <= 0.25 * 1e-4 + 0.75 * 2 * 2e-4 + 1e-12
    _measured(cost, one=1e-6, many=1e-3)  # all threads measured after the cost grew
    seq.record_cost(0, 1, 1e-3 * GRID[0])  # the calling thread alone sees the same growth
    assert cost.one > 0.5e-3
