"""Whatever bytes come in, loading and verifying either succeeds or raises jitvm.Error, and
what verifies runs under both backends returning or raising jitvm.Error.

Mutants (1-3 changed bytes, mostly in the bytecode and the function descriptors) of every
corpus module and VMVX executable run in worker processes, so a segfault or a hang would be
counted against the property instead of killing pytest. Accepted mutants (one in RUN_EVERY,
picked by their bytes so hypothesis can replay them) then have every export called under
the reference interpreter and the JIT (jitvm/fuzz/mutation/runners.py): calls may return or trap, a
call may run past its budget (a mutated loop bound), but nothing may crash, hang while
loading or compiling, or raise anything but jitvm.Error; both backends must agree on every
call's outcome. The 10,000-mutant campaign that also compares with IREE's loader is
slow-marked; `bench/mutant_campaign.py` runs it (and the backends' campaigns) by hand.
"""

from __future__ import annotations

import zlib
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jitvm.fuzz.mutation import (ACCEPTED, CRASH, HANG, REGION_WEIGHTS, REJECTED, RUNNER_MODULE, SLOW_CALL,
                                 MutantPool, seed_from_file)
from tests.corpus import build_corpus

RUN_EVERY = 2  # accepted mutants whose bytes' CRC32 is 0 modulo this are also run
RUN_BUDGETS = {"compile": 30.0, "init": 1.0, "call": 1.0}
RUN_MEMORY_LIMIT = 4 << 30


@lru_cache(maxsize=1)
def seeds():
    return tuple(seed_from_file(p, f"{cm.name}:{p.name}") for cm in build_corpus()
                 for p in (cm.vmfb, *cm.executables))


_REGIONS = [name for name, weight in REGION_WEIGHTS for _ in range(weight // 10)]


@st.composite
def mutants(draw):
    """(seed name, changes, bytes): 1-3 bytes of one corpus module changed, hypothesis-shrinkable
    (never in an embedded native library's machine code: Seed.mutable)."""
    seed = draw(st.sampled_from(seeds()))
    data = bytearray(seed.data)
    changes = []
    for _ in range(draw(st.integers(1, 3))):
        region = draw(st.sampled_from([r for r in _REGIONS if r in seed.regions]))
        start, length = seed.regions[region]
        at = start + draw(st.integers(0, length - 1).filter(lambda k: seed.mutable(start + k)))
        new = draw(st.integers(0, 255).filter(lambda b, old=data[at]: b != old))
        changes.append((at, data[at], new))
        data[at] = new
    return seed.name, tuple(changes), bytes(data)


@pytest.fixture(scope="module")
def pool():
    with MutantPool("jitvm", workers=2, timeout=30.0, batch=8) as p:
        yield p


@pytest.fixture(scope="module")
def runner_pools():
    """One worker per backend (the two run side by side on two cores)."""
    pools = {name: MutantPool("jitvm", workers=1, timeout=30.0, batch=8, budgets=RUN_BUDGETS,
                              options={"run": name, "runner_modules": (RUNNER_MODULE,),
                                       "memory_limit": RUN_MEMORY_LIMIT})
             for name in ("interp", "jit")}
    try:
        yield pools
    finally:
        for p in pools.values():
            p.close()


def _run_under_backends(pools, batch, indices) -> list:
    """Runs batch[i] for i in indices under every backend; the failures found."""
    runs = {name: p.run((i, batch[i][2]) for i in indices) for name, p in pools.items()}
    outcomes = {name: {} for name in pools}
    pending = dict(runs)
    while pending:  # interleave the two pools so both workers are busy
        for name, it in list(pending.items()):
            try:
                key, outcome = next(it)
            except StopIteration:
                del pending[name]
                continue
            outcomes[name][key] = outcome
    failures = [(name, batch[i][0], batch[i][1], status, detail) for name, got in outcomes.items()
                for i, (status, detail, _) in got.items() if status not in (ACCEPTED, SLOW_CALL)]
    for i in indices:  # both backends ran it to the end: same outcome of every call
        got = {name: outcomes[name][i] for name in pools}
        if all(o[0] == ACCEPTED and not o[2].get("out_of_memory") for o in got.values()):
            digests = {name: o[2].get("digest") for name, o in got.items()}
            if len(set(digests.values())) > 1:
                failures.append(("interp vs jit", batch[i][0], batch[i][1], "outcomes differ", digests))
    return failures


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(batch=st.lists(mutants(), min_size=1, max_size=8))
def test_mutants_are_rejected_with_jitvm_errors_or_verify(pool, runner_pools, batch):
    outcomes = dict(pool.run((i, data) for i, (_, _, data) in enumerate(batch)))
    failures = [(batch[i][0], batch[i][1], status, detail) for i, (status, detail, _) in outcomes.items()
                if status not in (ACCEPTED, REJECTED)]
    assert not failures, failures
    run = [i for i, (status, _, _) in outcomes.items()
           if status == ACCEPTED and zlib.crc32(batch[i][2]) % RUN_EVERY == 0]
    if run:
        failures = _run_under_backends(runner_pools, batch, run)
        assert not failures, failures


def test_pool_counts_crashes_and_hangs_without_dying():
    items = [(i, d) for i, d in enumerate([b"a", b"crash", b"b", b"hang", b"c", b"crash", b"slow", b"d"])]
    with MutantPool("selftest", workers=2, timeout=1.0, batch=3, budgets={"call": 0.5}) as p:
        out = {k: (status, counts) for k, (status, _, counts) in p.run(items)}
    assert {k: status for k, (status, _) in out.items()} == {
        0: ACCEPTED, 1: CRASH, 2: ACCEPTED, 3: HANG, 4: ACCEPTED, 5: CRASH, 6: SLOW_CALL, 7: ACCEPTED}
    assert out[6][1] == {"calls": 1, "slow_calls": 1}  # what the worker reported before it stopped answering


@pytest.mark.slow
def test_campaign_of_ten_thousand_mutants():
    """The issue's campaign: zero jitvm crashes, hangs and non-jitvm exceptions; IREE compared."""
    from bench.mutant_campaign import run_campaign

    report = run_campaign(count=10_000, seed=2026, workers=2, iree=True)
    assert report.total == 10_000
    for status in ("crash", "hang", "bug"):
        assert report.jitvm[status] == 0, report.examples(status)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["interp", "jit"])
def test_campaign_accepted_mutants_run(backend):
    """The issue's campaign with the backends: accepted mutants' exports return or raise jitvm.Error."""
    from bench.mutant_campaign import run_campaign

    report = run_campaign(count=10_000, seed=2026, workers=2, iree=False, run=backend)
    assert report.failures() == 0, report.runs[backend].notable


def test_a_transient_no_dispatch_writes_reads_the_same_under_both_backends():
    """A mutant seen in a campaign: the command buffer dispatches the first kernel twice (the
    second lookup names rodata 15 instead of 16), so one output's transient bytes are never
    written. IREE leaves transient contents undefined, and so does jitvm outside the runners,
    which zero them (hal.native.zero_transients): heap garbage made the backends' outcomes differ."""
    import re

    from jitvm.frontend.asm import assemble
    from jitvm.frontend.module import load_module
    from jitvm.frontend.vmasm import module_text
    from jitvm.fuzz.mutation import runners
    from jitvm.runtime.modules.hal import native as hal_native
    from jitvm.verify import verify_module

    (cm,) = build_corpus(names=["mlir/int_divrem_shifts"])
    text, changed = re.subn(r"(vm\.const\.ref\.rodata) 16\b", r"\1 15", module_text(load_module(cm.vmfb.read_bytes())),
                            count=1)
    assert changed == 1
    data = assemble(text)
    try:
        digests = {name: runners.run(verify_module(load_module(data)), data, name)["digest"] for name in ("jit", "interp")}
    finally:
        hal_native.zero_transients(False)
    assert digests["jit"] == digests["interp"]


def test_mutants_leave_embedded_machine_code_alone():
    """Bytes of an llvm-cpu module's native code run as given (as in IREE): a mutant there
    crashes the mutated code itself, which the campaign counted as five crashes in 8,000."""
    import random

    from jitvm.fuzz.mutation import mutate

    seed = next(s for s in seeds() if s.machine_code)
    (start, length), *_ = seed.machine_code
    elf = seed.data.rfind(b"\x7fELF", 0, start)
    assert elf >= 0 and length > 0 and start + length <= len(seed.data)
    rng = random.Random(0)
    for _ in range(2000):
        _, changes = mutate(seed, rng)
        assert all(seed.mutable(at) for at, _, _ in changes)
