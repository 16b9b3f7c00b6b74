"""Whatever bytes come in, loading and verifying either succeeds or raises jitvm.Error.

Mutants (1-3 changed bytes, mostly in the bytecode and the function descriptors) of every
corpus module and VMVX executable run in worker processes, so a segfault or a hang would be
counted against the property instead of killing pytest. The 10,000-mutant campaign that
also compares with IREE's loader is slow-marked; `bench/mutant_campaign.py` runs it by hand.
"""

from __future__ import annotations

from functools import lru_cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.corpus import build_corpus
from tests.mutation import ACCEPTED, CRASH, HANG, REGION_WEIGHTS, REJECTED, MutantPool, seed_from_file


@lru_cache(maxsize=1)
def seeds():
    return tuple(seed_from_file(p, f"{cm.name}:{p.name}") for cm in build_corpus()
                 for p in (cm.vmfb, *cm.executables))


_REGIONS = [name for name, weight in REGION_WEIGHTS for _ in range(weight // 10)]


@st.composite
def mutants(draw):
    """(seed name, changes, bytes): 1-3 bytes of one corpus module changed, hypothesis-shrinkable."""
    seed = draw(st.sampled_from(seeds()))
    data = bytearray(seed.data)
    changes = []
    for _ in range(draw(st.integers(1, 3))):
        region = draw(st.sampled_from([r for r in _REGIONS if r in seed.regions]))
        start, length = seed.regions[region]
        at = start + draw(st.integers(0, length - 1))
        new = draw(st.integers(0, 255).filter(lambda b, old=data[at]: b != old))
        changes.append((at, data[at], new))
        data[at] = new
    return seed.name, tuple(changes), bytes(data)


@pytest.fixture(scope="module")
def pool():
    with MutantPool("jitvm", workers=2, timeout=30.0, batch=8) as p:
        yield p


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(batch=st.lists(mutants(), min_size=1, max_size=8))
def test_mutants_are_rejected_with_jitvm_errors_or_verify(pool, batch):
    outcomes = dict(pool.run((i, data) for i, (_, _, data) in enumerate(batch)))
    failures = [(batch[i][0], batch[i][1], status, detail) for i, (status, detail) in outcomes.items()
                if status not in (ACCEPTED, REJECTED)]
    assert not failures, failures


def test_pool_counts_crashes_and_hangs_without_dying():
    items = [(i, d) for i, d in enumerate([b"a", b"crash", b"b", b"hang", b"c", b"crash"])]
    with MutantPool("selftest", workers=2, timeout=1.0, batch=3) as p:
        out = {k: status for k, (status, _) in p.run(items)}
    assert out == {0: ACCEPTED, 1: CRASH, 2: ACCEPTED, 3: HANG, 4: ACCEPTED, 5: CRASH}


@pytest.mark.slow
def test_campaign_of_ten_thousand_mutants():
    """The issue's campaign: zero jitvm crashes, hangs and non-jitvm exceptions; IREE compared."""
    from bench.mutant_campaign import run_campaign

    report = run_campaign(count=10_000, seed=2026, workers=2, iree=True)
    assert report.total == 10_000
    for status in ("crash", "hang", "bug"):
        assert report.jitvm[status] == 0, report.examples(status)
