"""Shared pytest fixtures: the compiled test corpus (see tests/corpus/__init__.py)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

# Compiled code goes to a cache of this session's own, never the user's ~/.cache/jitvm
# (subprocesses the tests start inherit it).
_JIT_CACHE = tempfile.mkdtemp(prefix="jitvm-test-cache-")
os.environ["JITVM_CACHE_DIR"] = _JIT_CACHE
# Hypothesis keeps files of its own (a constants cache) in .hypothesis/ of the working directory.
os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = os.path.join(_JIT_CACHE, "hypothesis")
# jitvm.load compiles each function when first called; "full" makes that the optimised code
# at once, with no background tier-up (tests of the other tiers pass tier= themselves).
os.environ.setdefault("JITVM_TIER", "full")
# No tier-up outlives a process of the run (lower.handoff): a test that wants one asks, and waits.
os.environ["JITVM_DETACHED_TIER_UP"] = "0"




def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_JIT_CACHE, ignore_errors=True)


try:  # no example database in the checkout either
    from hypothesis import settings

    settings.register_profile("jitvm", database=None)
    settings.load_profile("jitvm")
except ImportError:
    pass


def _hypothesis_skips_jitvm_fuzz() -> None:
    """Hypothesis mixes the literals of local modules into what it draws, test files excepted.
    jitvm/fuzz is test tooling (it lived in tests/ until the structure issue): its edge-value
    tables and op names are no constants of the system under test, and would make every
    example depend on the tooling's own source. Private API: without it, examples only differ."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:
        return
    is_local = getattr(providers, "is_local_module_file", None)
    if is_local is None:
        return
    fuzz_dir = os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, "jitvm", "fuzz")
    fuzz_dir = os.path.realpath(fuzz_dir) + os.sep
    providers.is_local_module_file = lambda path: is_local(path) and not os.path.realpath(path).startswith(fuzz_dir)


_hypothesis_skips_jitvm_fuzz()

_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:  # `pytest` (not `python -m pytest`) does not put the root on sys.path
    sys.path.insert(0, _ROOT)

from jitvm.fuzz.corpus import CorpusError, CorpusModule
from tests.corpus import build_corpus


@pytest.fixture(scope="session")
def corpus() -> list[CorpusModule]:
    """Every corpus program, compiled (or taken from the content-keyed cache, which serves a
    machine without IREE's compiler too: bench/aarch64.sh fills it on the host)."""
    try:
        return build_corpus()
    except CorpusError as e:
        pytest.fail(f"building the test corpus failed:\n{e}", pytrace=False)


@pytest.fixture(scope="session")
def corpus_module(corpus):
    """``corpus_module("mlir/matmul")`` (or just ``"matmul"``) -> that CorpusModule."""
    by_name = {m.name: m for m in corpus}

    def get(name: str) -> CorpusModule:
        if name in by_name:
            return by_name[name]
        hits = [m for m in corpus if m.source.stem == name]
        if len(hits) == 1:
            return hits[0]
        raise KeyError(f"no single corpus module named {name!r} (have: {sorted(by_name)})")

    return get


@pytest.fixture(scope="session")
def corpus_by_name(corpus) -> dict[str, CorpusModule]:
    """Every corpus module by its full name ("mlir/matmul", "vmasm/lists")."""
    return {m.name: m for m in corpus}
