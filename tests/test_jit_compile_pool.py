"""Parallel compilation (lower.llvm.compile_pool): function groups go to worker processes as
they are lowered; whatever the workers do, every group comes back as its own object code."""

from __future__ import annotations

import subprocess
import sys

import pytest

from jitvm.frontend.module import load_module
from jitvm.lower.llvm import compile_pool, compiler
from jitvm.runtime.native import target as targets
from jitvm.lower.backend import function_groups
from jitvm.lower.module import ModuleLowering
from jitvm.verify import verify_module

SOURCE = "define i64 @f{n}(i64 %x) {{\n  %y = mul i64 %x, {n}\n  ret i64 %y\n}}\n"


def _texts(count: int) -> list[str]:
    host = targets.host()
    return [f'target triple = "{host.triple}"\n' + SOURCE.format(n=n + 2) for n in range(count)]


def _build(texts):
    return compiler.build_objects(iter(texts), len(texts), targets.host(), 2, 2, True)


def test_pooled_objects_are_the_in_process_ones():
    texts = _texts(5)
    local = [compiler.build_object(t, targets.host(), 2, 2, True) for t in texts]
    assert _build(texts) == local


@pytest.mark.parametrize("worker", ["exits at once", "fails every job"])
def test_groups_no_worker_compiles_are_compiled_in_process(monkeypatch, tmp_path, worker):
    texts = _texts(4)
    local = [compiler.build_object(t, targets.host(), 2, 2, True) for t in texts]
    if worker == "exits at once":
        monkeypatch.setattr(compile_pool.sys, "executable", "/bin/false")
    else:  # a worker answering "fail": its jobs' IR cannot be read where it looks
        fake = tmp_path / "fake_worker.py"
        fake.write_text("import sys\nfor line in sys.stdin:\n    print('fail', flush=True)\n")
        real_popen = subprocess.Popen

        def popen(args, **kw):
            return real_popen([sys.executable, str(fake)], **kw)

        monkeypatch.setattr(subprocess, "Popen", popen)  # compile_pool imports it when starting workers
    assert _build(texts) == local


def test_functions_with_loops_get_modules_of_their_own(corpus_module, monkeypatch):
    import jitvm
    from jitvm.lower import backend

    monkeypatch.setattr(backend, "PARALLEL_COMPILE_MIN_INSTRUCTIONS", 0)  # split even a small module
    path = str(corpus_module("vmasm/loops").vmfb)
    vm = verify_module(load_module(path))
    groups = function_groups(vm, 2)
    looped = {vf.ordinal for vf in vm.functions if compiler.has_loops_in(vf)}
    assert sorted(o for g in groups for o in g) == [vf.ordinal for vf in vm.functions]
    assert len(looped) > 1 and len(groups) > len(looped) - 1
    calls = {(vf.ordinal, site.callee) for vf in vm.functions for site in vf.calls.values() if not site.is_import}
    for g in groups:  # a function with loops shares its module only with functions it calls or is called by
        if looped.intersection(g) and len(g) > 1:
            assert all(any((o, c) in calls or (c, o) in calls for c in g if c != o) for o in g), g
    # The module compiled from those groups on the pool runs as the interpreter runs it.
    runs = {}
    for name in ("jit", "interp"):
        be = backend.JitBackend(use_cache=False, progress=False) if name == "jit" else name
        m = jitvm.load(path, backend=be)
        runs[name] = [m.gather(8, 1, 0, 8), m.progress(), m.scatter(10, 10), m.progress(), m.stride2(9, 10)]
    assert runs["jit"] == runs["interp"]


def test_each_job_is_compiled_with_its_own_options():
    """One pool takes a first call's baseline and full-tier units together: each job's
    object is what its own options give in process (and the options make a difference)."""
    texts = _texts(4)
    options = [(2, 2, True), (compiler.BASELINE, 0, True), (2, 2, True), (compiler.BASELINE, 0, True)]
    local = [compiler.build_object(t, targets.host(), *o) for t, o in zip(texts, options)]
    assert compiler.build_object(texts[1], targets.host(), 2, 2, True) != local[1]
    assert compiler.build_jobs(iter(zip(texts, options)), len(texts), targets.host()) == local
