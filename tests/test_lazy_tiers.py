"""Lazy compilation and tiers (jitvm.lower.lazy): what is compiled when, and that every tier
computes the interpreter's bits.

Laziness is observed through the executables' compile_stats(): exports never called stay
uncompiled, `__init` runs in the interpreter, a native caller reaching a function not yet
compiled goes through its stub (which compiles it), a kernel compiles at its first dispatch.
Tier swaps happen while other threads call; results must not change across them.
"""

from __future__ import annotations

import gc
import time

import threading
import warnings

import numpy as np
import pytest

import jitvm
from jitvm.frontend.asm import assemble
from jitvm.lower import lazy
from jitvm.lower.backend import JitBackend
from jitvm.lower.llvm import compiler, vector_math
from jitvm.runtime.modules.hal import executable as hal_executable
from jitvm.runtime.native import cache

CALLEE = """
vm.module @callee version 0

vm.export @twice
vm.func @twice(%i0: i32) -> (i32) {
  %i1 = vm.add.i32 %i0, %i0
  vm.return %i1
}

vm.export @unused
vm.func @unused(%i0: i32) -> (i32) {
  %i1 = vm.const.i32 7
  %i2 = vm.mul.i32 %i0, %i1
  vm.return %i2
}
"""

CALLER = """
vm.module @caller version 0
vm.import @callee.twice cconv "0i_i"

vm.export @sum_twice
vm.func @sum_twice(%i0: i32) -> (i32) {
^bb0:
  %i1 = vm.const.i32.zero
  %i2 = vm.const.i32 1
  vm.br ^bb1(%i1->%i3, %i1->%i4)
^bb1:
  %i5 = vm.cmp.lt.i32.s %i3, %i0
  vm.cond_br %i5, ^bb2(), ^bb3()
^bb2:
  %i6 = vm.call @callee.twice(%i3)
  %i7 = vm.add.i32 %i4, %i6
  %i8 = vm.add.i32 %i3, %i2
  vm.br ^bb1(%i8->%i3, %i7->%i4)
^bb3:
  vm.return %i4
}
"""


def _modules(tmp_path):
    a, b = tmp_path / "callee.vmfb", tmp_path / "caller.vmfb"
    a.write_bytes(assemble(CALLEE))
    b.write_bytes(assemble(CALLER))
    return str(a), str(b)


def _executable(module):
    return module._instance.loaded.executable


def test_exports_never_called_are_never_compiled(tmp_path):
    callee, _ = _modules(tmp_path)
    m = jitvm.load(callee, tier="full")
    assert _executable(m).compile_stats()["uncompiled"] == 2
    assert m.twice(21) == 42
    stats = _executable(m).compile_stats()
    assert (stats["compiled"], stats["uncompiled"]) == (1, 1)  # `unused` was never called


def test_a_native_caller_compiles_its_callee_through_the_stub(tmp_path):
    callee, caller = _modules(tmp_path)
    m = jitvm.load([callee, caller], tier="full")
    callee_exe = m.modules["callee"]._instance.loaded.executable
    assert callee_exe.compile_stats()["uncompiled"] == 2
    assert m.sum_twice(10) == sum(2 * i for i in range(10))  # caller's native loop calls callee.twice
    assert callee_exe.compile_stats()["compiled"] == 1
    assert m.sum_twice(100) == sum(2 * i for i in range(100))


def test_init_runs_in_the_interpreter_and_kernels_compile_at_first_dispatch():
    gc.collect()  # executables earlier tests left to the weak cache go first
    before = set(hal_executable._loaded_cache.keys())  # the shared JIT of a tier may hold others' kernels
    m = jitvm.load("example:cnn", tier="baseline")
    host = _executable(m).compile_stats()
    assert host["interpreted"] >= 1 and host["compiled"] == 0  # __init (and what only it calls)
    kernels = [lm.executable for key, lm in list(hal_executable._loaded_cache.items())
               if key not in before and isinstance(lm.executable, lazy.LazyExecutable) and
               lm.executable.backend is _executable(m).backend]
    assert kernels and all(k.compile_stats()["compiled"] == 0 for k in kernels)
    x = np.random.default_rng(0).random((1, 28, 28, 1), np.float32)
    got = m.predict(x)
    assert any(k.compile_stats()["compiled"] > 0 for k in kernels)
    want = jitvm.load("example:cnn", backend="interp").predict(x)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("tier", ["baseline", "full"])
def test_every_tier_computes_the_interpreters_bits(tier):
    x = np.random.default_rng(1).random((1, 28, 28, 1), np.float32)
    got = jitvm.load("example:cnn", tier=tier).predict(x)
    want = jitvm.load("example:cnn", backend="interp").predict(x)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_tier_swap_under_concurrent_calls(tmp_path, monkeypatch):
    monkeypatch.setenv("JITVM_CACHE_DIR", str(tmp_path / "store"))  # nothing cached: a real tier-up
    m = jitvm.load("example:cnn", tier="auto")
    rng = np.random.default_rng(2)
    inputs = [rng.random((1, 28, 28, 1), np.float32) for _ in range(4)]
    ref = jitvm.load("example:cnn", backend="interp")
    want = [ref.predict(x) for x in inputs]
    problems = []
    stop = threading.Event()

    def caller(k):
        n = 0
        while not stop.is_set() or n < 3:
            got = m.predict(inputs[(k + n) % 4])
            if not np.array_equal(got.view(np.uint32), want[(k + n) % 4].view(np.uint32)):
                problems.append((k, n))
            n += 1

    for x, w in zip(inputs[:2], want):  # baseline code, called again: hot
        assert np.array_equal(m.predict(x).view(np.uint32), w.view(np.uint32))
    threads = [threading.Thread(target=caller, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    try:
        assert lazy.wait_for_tier_up(300)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not problems
    kernels = [lm.executable for lm in list(hal_executable._loaded_cache.values())
               if isinstance(lm.executable, lazy.LazyExecutable) and lm.executable.backend is _executable(m).backend]
    stats = [k.compile_stats() for k in kernels]
    assert stats and all(s["baseline"] == 0 and s["full"] == s["compiled"] > 0 for s in stats), repr(stats)
    for x, w in zip(inputs, want):  # and after the swap
        assert np.array_equal(m.predict(x).view(np.uint32), w.view(np.uint32))


def test_full_tier_is_todays_pipeline_on_the_same_ir(tmp_path):
    """tier="full" lowers a function as the load-everything JIT does and compiles it with the
    same options; only the symbol prefix differs."""
    from jitvm.frontend.module import load_module
    from jitvm.lower.module import ModuleLowering
    from jitvm.runtime.vm.bytecode import LoadedModule
    from jitvm.verify import verify_module

    callee, _ = _modules(tmp_path)
    verified = verify_module(load_module(callee))
    eager = JitBackend(use_cache=False, progress=False)
    lazy_be = JitBackend(use_cache=False, progress=False, tier="full")
    exe = LoadedModule(verified, lazy_be).executable
    unit = exe.unit_of[0]
    assert exe.options(unit, "full") == eager.options(LoadedModule(verified, lazy_be))
    text, _meta = exe._lower(unit, exe.options(unit, "full"))
    today = str(ModuleLowering(verified, "K").lower([0]))
    assert text.replace(f"{exe.prefix[3:]}u{unit.index}", "K") == today
    assert exe.options(unit, "baseline")["speed"] == 1  # loop-free: today's quick options


def test_a_damaged_unit_in_the_store_is_compiled_again(tmp_path, monkeypatch):
    monkeypatch.setenv("JITVM_CACHE_DIR", str(tmp_path / "store"))
    callee, _ = _modules(tmp_path)
    assert jitvm.load(callee, tier="full").twice(4) == 8
    objects = [p for p in (tmp_path / "store").glob("*/*/code.0.o")]
    assert objects
    for p in objects:
        data = bytearray(p.read_bytes())
        data[len(data) // 2] ^= 0xFF
        p.write_bytes(bytes(data))
    cache._warned.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert jitvm.load(callee, tier="full").twice(5) == 10
    assert any("damaged or stale" in str(w.message) for w in caught)


def test_unknown_tier_is_an_argument_error():
    with pytest.raises(jitvm.ArgumentError, match="unknown tier"):
        jitvm.load("example:hello", tier="fast")


LOOP = """
vm.module @loop version 0

vm.export @sum_to
vm.func @sum_to(%i0: i32) -> (i32) {
^bb0:
  %i1 = vm.const.i32.zero
  %i2 = vm.const.i32 1
  vm.br ^bb1(%i1->%i3, %i1->%i4)
^bb1:
  %i5 = vm.cmp.lt.i32.s %i3, %i0
  vm.cond_br %i5, ^bb2(), ^bb3()
^bb2:
  %i7 = vm.add.i32 %i4, %i3
  %i8 = vm.add.i32 %i3, %i2
  vm.br ^bb1(%i8->%i3, %i7->%i4)
^bb3:
  vm.return %i4
}
"""

ONE_SHOT = """
import json, sys
import jitvm
from jitvm.runtime.native import engine
m = jitvm.load(sys.argv[1], tier="auto")
assert m.sum_to(10) == 45
print(json.dumps({**m._instance.loaded.executable.compile_stats(), "runtime": sorted(engine.PENDING_RUNTIME)}))
"""


def _one_shot(path, store, detached: bool) -> dict:
    """A process that calls once and exits before any tier-up (called once: never hot)."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "JITVM_CACHE_DIR": str(store), "JITVM_DETACHED_TIER_UP": "1" if detached else "0"}
    root = Path(__file__).resolve().parents[1]
    r = subprocess.run([sys.executable, "-c", ONE_SHOT, str(path)], env=env, cwd=root, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_a_one_shot_process_leaves_its_tier_up_to_a_detached_worker(tmp_path, monkeypatch):
    from jitvm.lower import handoff
    from jitvm.lower.executable import STATS

    path, store = tmp_path / "loop.vmfb", tmp_path / "store"
    path.write_bytes(assemble(LOOP))
    first = _one_shot(path, store, detached=True)
    assert first["baseline"] == 1 and first["runtime"]  # the runtime's code, too, on its quick build
    assert handoff.wait(600, store / handoff.JOBS)  # the worker outlived its parent; now it is done
    assert not list((store / handoff.JOBS).iterdir()) and not list((store / cache.LOCKS).iterdir())
    monkeypatch.setenv("JITVM_CACHE_DIR", str(store))
    assert all(cache.load(k) is not None for k in first["runtime"])  # its optimised build is stored
    before = STATS["compiled_modules"]
    m = jitvm.load(str(path), tier="auto")
    assert m.sum_to(100) == 4950
    stats = _executable(m).compile_stats()
    assert (stats["full"], stats["baseline"]) == (1, 0)  # the next process starts on the full tier
    assert STATS["compiled_modules"] == before  # and compiles nothing


def test_a_background_batchs_quick_units_are_watched_before_a_call_can_end(tmp_path, monkeypatch):
    """A command buffer's kernels compile in the background while its first call runs: each
    quick unit is watched for its tier-up before its waiters go on, since the call they end
    may end the process, whose exit hands the watched units to a detached tier-up (before,
    the batch was watched after its last unit: a one-shot process could exit first, and the
    next one compiled everything again)."""
    monkeypatch.setenv("JITVM_CACHE_DIR", str(tmp_path / "store"))
    watched_when_settled = []
    settle = lazy._Batch.settle

    def recording(self, ahead, unit):
        if unit.tier in lazy.QUICK:
            watched_when_settled.append(any(unit in e.units for e in lazy.TIER_UP.executables()))
        settle(self, ahead, unit)
    monkeypatch.setattr(lazy._Batch, "settle", recording)
    jitvm.load("example:cnn", backend=JitBackend(progress=False, tier="auto")).predict(
        np.zeros((1, 28, 28, 1), np.float32))
    assert watched_when_settled and all(watched_when_settled)


def test_switched_off_nothing_outlives_the_process(tmp_path, monkeypatch):
    """And the next process compiles the full tier at its first call (it found baseline code)."""
    from jitvm.lower import handoff
    from jitvm.lower.executable import STATS

    path, store = tmp_path / "loop.vmfb", tmp_path / "store"
    path.write_bytes(assemble(LOOP))
    first = _one_shot(path, store, detached=False)
    assert first["baseline"] == 1 and not first["runtime"]  # optimised runtime code at once
    assert not (store / handoff.JOBS).exists()
    monkeypatch.setenv("JITVM_CACHE_DIR", str(store))
    before = STATS["compiled_modules"]
    m = jitvm.load(str(path), tier="auto")
    assert m.sum_to(100) == 4950
    assert _executable(m).compile_stats()["full"] == 1 and STATS["compiled_modules"] == before + 1


def test_baseline_code_from_an_earlier_process_tiers_up_in_the_background(tmp_path, monkeypatch):
    """With detached tier-ups on, found baseline code runs at once and is hot: no call count needed."""
    from jitvm.lower import handoff

    path, store = tmp_path / "loop.vmfb", tmp_path / "store"
    path.write_bytes(assemble(LOOP))
    assert _one_shot(path, store, detached=False)["baseline"] == 1
    monkeypatch.setenv("JITVM_CACHE_DIR", str(store))
    monkeypatch.setenv(handoff.ENV, "1")
    m = jitvm.load(str(path), tier="auto")
    assert m.sum_to(10) == 45
    assert lazy.wait_for_tier_up(300)
    assert _executable(m).compile_stats()["full"] == 1
    assert m.sum_to(100) == 4950


def test_a_unit_another_process_compiles_is_read_not_compiled_again(tmp_path, monkeypatch):
    """The store's lock on a key: who holds it compiles; a builder waiting for it then reads."""
    from jitvm.frontend.module import load_module
    from jitvm.lower.executable import STATS
    from jitvm.runtime.vm.bytecode import LoadedModule
    from jitvm.verify import verify_module

    monkeypatch.setenv("JITVM_CACHE_DIR", str(tmp_path / "store"))
    path = tmp_path / "loop.vmfb"
    path.write_bytes(assemble(LOOP))
    exe = LoadedModule(verify_module(load_module(str(path))), JitBackend(progress=False, tier="auto")).executable
    unit = exe.units[0]
    key = exe.builder.key(unit, exe.options(unit, "full"))
    results = []
    with cache.lock(key) as held:
        assert held
        with cache.lock(key, blocking=False) as second:
            assert not second  # held (flock: per open file, so this process is "another" too)
        waiter = threading.Thread(target=lambda: results.extend(exe.builder.build([unit], "full")))
        waiter.start()
        waiter.join(0.2)
        assert waiter.is_alive() and not results  # waits for the lock
        before = STATS["compiled_modules"]
        other = JitBackend(progress=False, tier="auto", use_cache=False)  # "the other process"
        other_exe = LoadedModule(exe.loaded.verified, other).executable
        (_u, _t, objects, meta), = other_exe.builder.build([other_exe.units[0]], "full")
        cache.store(key, objects, meta)
        compiled_by_other = STATS["compiled_modules"] - before
    waiter.join(60)
    assert compiled_by_other == 1 and STATS["compiled_modules"] == before + 1  # the waiter compiled nothing
    assert results and results[0][2] == objects
    assert not (tmp_path / "store" / cache.LOCKS / key).exists()


def test_compile_workers_start_while_a_module_loads(tmp_path, monkeypatch):
    """The first module with several baseline units starts the workers that compile them at
    its first call; the call takes them (and gets the interpreter's bits)."""
    from jitvm.lower.llvm import compile_pool

    monkeypatch.setenv("JITVM_CACHE_DIR", str(tmp_path / "store"))
    monkeypatch.setattr(lazy, "_prestarted", [])
    monkeypatch.setattr(compile_pool, "processes", lambda: 2)
    assert not compile_pool._spare
    m = jitvm.load("example:cnn", backend=JitBackend(progress=False, tier="baseline"))
    assert [k[:2] for k in compile_pool._spare] == [(2, JitBackend().target)]
    x = np.random.default_rng(3).random((1, 28, 28, 1), np.float32)
    got = m.predict(x)
    assert not compile_pool._spare  # taken by the kernels' compile, and closed after it
    want = jitvm.load("example:cnn", backend="interp").predict(x)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_no_compile_workers_start_when_the_store_has_the_code(tmp_path, monkeypatch):
    """A warm load starts no workers: they would only take the cores from it."""
    from jitvm.lower.llvm import compile_pool

    monkeypatch.setenv("JITVM_CACHE_DIR", str(tmp_path / "store"))
    monkeypatch.setattr(compile_pool, "processes", lambda: 2)
    x = np.random.default_rng(4).random((1, 28, 28, 1), np.float32)
    for warm in (False, True):
        monkeypatch.setattr(lazy, "_prestarted", [])
        m = jitvm.load("example:cnn", backend=JitBackend(progress=False, tier="baseline"))
        assert bool(compile_pool._spare) == (not warm)
        m.predict(x)
        assert not compile_pool._spare


def _kernel_executables(backend, before) -> list:
    return [lm.executable for key, lm in list(hal_executable._loaded_cache.items())
            if key not in before and isinstance(lm.executable, lazy.LazyExecutable) and lm.executable.backend is backend]


@pytest.mark.parametrize("first", ["baseline", "jammed", "jammed_slp", "middle"])
def test_each_quick_tier_a_kernel_can_start_on_computes_the_interpreters_bits(tmp_path, monkeypatch, first):
    """Under "auto" a kernel's first dispatch compiles it on the quick tier that costs least
    for the call's dispatches (lazy.FIRST_TIERS: the CNN's kernels are small, baseline code;
    the table is narrowed to one tier to see each); kernels without loops take the baseline.
    Each quick tier tiers up to the full tier once called again; every tier gives the
    interpreter's bits."""
    monkeypatch.setenv("JITVM_CACHE_DIR", str(tmp_path / "store"))
    if first != "baseline":
        monkeypatch.setattr(lazy, "FIRST_TIERS", {first: lazy.FIRST_TIERS[first]})
    gc.collect()
    before = set(hal_executable._loaded_cache.keys())
    backend = JitBackend(progress=False, tier="auto")
    m = jitvm.load("example:cnn", backend=backend)
    x = np.random.default_rng(5).random((1, 28, 28, 1), np.float32)
    want = jitvm.load("example:cnn", backend="interp").predict(x)
    got = m.predict(x)
    kernels = _kernel_executables(backend, before)
    units = [(k, u) for k in kernels for u in k.units if u.tier is not None]
    assert units and {u.tier for k, u in units if k.builder._loops(u)} == {first}, [(u.tier) for k, u in units]
    assert {u.tier for k, u in units if not k.builder._loops(u)} <= {"baseline"}
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    got = m.predict(x)  # called again: hot
    assert lazy.wait_for_tier_up(300)
    stats = [k.compile_stats() for k in kernels]
    assert all(s["full"] == s["compiled"] for s in stats), repr(stats)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert np.array_equal(m.predict(x).view(np.uint32), want.view(np.uint32))


def test_the_first_tier_follows_the_work():
    """More accesses in a call, a quicker-running tier: the baseline for little work, then
    the jammed code, the jammed code vectorised, then the middle tier; each chosen somewhere."""
    work = [round(10 ** (k / 8)) for k in range(32, 88)]
    chosen = [lazy.first_tier(a) for a in work]
    assert set(chosen) == set(lazy.FIRST_TIERS) == {"baseline", "jammed", "jammed_slp", "middle"}
    order = list(lazy.FIRST_TIERS)
    assert [order.index(t) for t in chosen] == sorted(order.index(t) for t in chosen)
    # flat loops make the middle tier's code larger: a kernel needs more work for it
    middle = next(a for a in work if lazy.first_tier(a) == "middle")
    assert order.index(lazy.first_tier(middle, flat_loops=3)) < order.index("middle")


def test_the_store_keeps_a_units_tiers_apart(tmp_path, monkeypatch):
    """A kernel's baseline, jammed, jammed_slp, middle and full code have keys of their own
    in the code store; each tier's code is read back under its own key."""
    monkeypatch.setenv("JITVM_CACHE_DIR", str(tmp_path / "store"))
    gc.collect()
    before = set(hal_executable._loaded_cache.keys())
    backend = JitBackend(progress=False, tier="baseline")
    jitvm.load("example:cnn", backend=backend).predict(np.zeros((1, 28, 28, 1), np.float32))
    exe = max(_kernel_executables(backend, before), key=lambda e: len(e.units))
    unit = next(u for u in exe.units if exe.builder._loops(u))
    tiers = ("baseline", "jammed", "jammed_slp", "middle", "full")
    keys = {t: exe.builder.key(unit, exe.options(unit, t)) for t in tiers}
    assert len(set(keys.values())) == len(tiers)
    assert exe.options(unit, "middle")["speed"] == exe.options(unit, "jammed_slp")["speed"] == compiler.MIDDLE
    built = {t: exe.builder.build([unit], t)[0][2] for t in tiers}
    assert len({bytes(b"".join(objects)) for objects in built.values()}) == len(tiers)
    for t in tiers:
        assert cache.load(keys[t])[0] == built[t]


def test_the_middle_tier_does_not_wait_for_the_vector_math_probe(tmp_path, monkeypatch):
    """A kernel's first code never waits for the vector math probe (about 0.2 s of a cold
    first call): the middle tier uses vector math only if its answer is known already."""
    monkeypatch.setenv("JITVM_CACHE_DIR", str(tmp_path / "store"))
    gc.collect()
    before = set(hal_executable._loaded_cache.keys())
    backend = JitBackend(progress=False, tier="auto")
    jitvm.load("example:cnn", backend=backend)
    exe = max(_kernel_executables(backend, before), key=lambda e: len(e.units))
    unit = next(u for u in exe.units if exe.builder._loops(u))

    def probe():
        raise AssertionError("the vector math probe ran")
    monkeypatch.setattr(vector_math, "known", lambda: None)
    monkeypatch.setattr(vector_math, "available", probe)
    options = exe.options(unit, "middle")
    assert options["speed"] == compiler.MIDDLE and options["vector_math"] is False
    with pytest.raises(AssertionError, match="probe ran"):
        exe.options(unit, "full")  # the full tier still asks


# A matmul IREE splits into several workgroups (VMVX tiles of 64 x 64: 2 x 2 here).
MATMUL = """
func.func @main(%a: tensor<96x128xf32>, %b: tensor<128x80xf32>) -> tensor<96x80xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<96x80xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<96x80xf32>) -> tensor<96x80xf32>
  %r = linalg.matmul ins(%a, %b : tensor<96x128xf32>, tensor<128x80xf32>) outs(%z : tensor<96x80xf32>)
      -> tensor<96x80xf32>
  return %r : tensor<96x80xf32>
}
"""


@pytest.fixture(scope="module")
def matmul_vmfb(tmp_path_factory):
    pytest.importorskip("iree.runtime")
    from bench.build import TARGETS, _iree_compile
    from jitvm.fuzz.corpus import require_tool
    require_tool("iree-compile")
    directory = tmp_path_factory.mktemp("matmul")
    src, vmfb = directory / "m.mlir", directory / "m.vmfb"
    src.write_text(MATMUL)
    _iree_compile(src, TARGETS["vmvx"], vmfb, "matmul")
    return vmfb


def _iree_main(path, args):
    import iree.runtime as rt
    ctx = rt.SystemContext(config=rt.Config("local-sync"))
    ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, path.read_bytes()))
    return np.asarray(ctx.modules.module["main"](*args))


@pytest.mark.parametrize("first", ["baseline", "jammed", "jammed_slp", "middle"])
def test_a_kernel_tiers_up_after_its_first_call_and_every_tier_gives_irees_bits(tmp_path, monkeypatch,
                                                                                 matmul_vmfb, first):
    """A kernel of several workgroups, on each quick tier: IREE's interpreter's bits; it is
    not hot within its first call (its workgroups are its calls: the tier-up waits for a
    second call and leaves the first the cores), and tiers up after the second."""
    monkeypatch.setenv("JITVM_CACHE_DIR", str(tmp_path / "store"))
    monkeypatch.setattr(lazy, "FIRST_TIERS", {first: lazy.FIRST_TIERS[first]})
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((96, 128)).astype(np.float32), rng.standard_normal((128, 80)).astype(np.float32)
    want = _iree_main(matmul_vmfb, [a, b])
    gc.collect()
    before = set(hal_executable._loaded_cache.keys())
    backend = JitBackend(progress=False, tier="auto")
    m = jitvm.load(str(matmul_vmfb), backend=backend)
    got = m.main(a, b)
    kernels = _kernel_executables(backend, before)
    looped = [(k, u) for k in kernels for u in k.units if u.tier is not None and k.builder._loops(u)]
    assert looped and {u.tier for _k, u in looped} == {first}
    several = [(k, o) for k in kernels for o, n in k._per_call.items() if n > 1]
    assert several and all(k.counts[o] == k._per_call[o] for k, o in several)  # each workgroup: a call
    assert not any(k.hot_units() for k in kernels)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    got = m.main(a, b)
    assert any(k.hot_units() or k.compile_stats()["full"] for k in kernels)
    assert lazy.wait_for_tier_up(300)
    assert all(s["full"] == s["compiled"] for s in (k.compile_stats() for k in kernels))
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert np.array_equal(m.main(a, b).view(np.uint32), want.view(np.uint32))


# --- a first call's sequence runs while its later kernels compile (compile ahead) ------------

def _cnn_call(tier="auto"):
    gc.collect()
    before = set(hal_executable._loaded_cache.keys())
    backend = JitBackend(progress=False, tier=tier)
    m = jitvm.load("example:cnn", backend=backend)
    x = np.random.default_rng(7).random((1, 28, 28, 1), np.float32)
    want = jitvm.load("example:cnn", backend="interp").predict(x)
    return m, x, want, lambda: _kernel_executables(backend, before)


def test_a_first_call_runs_dispatches_before_its_last_kernel_is_installed(tmp_path, monkeypatch):
    """The ordering, recorded: the call's last kernel to arrive is installed only once a
    dispatch has run (its install waits for that, bounded), which the sequence can do while
    it compiles; compiling every kernel before the sequence runs (as before compile-ahead)
    records no dispatch before the last install. Kernel calls are counted natively under
    "auto". (When the sequence's first kernel happens to arrive last, nothing could run
    before it: the experiment is made again with an empty store.)"""
    install = lazy.LazyExecutable._install
    record = []  # (ordinals installed, kernel calls made before)

    def recording_install(self, built):
        installed = [o for unit, _tier, _objects, _meta in built for o in unit.ordinals]
        left = [o for o in self._per_call if self.unit_of[o].tier is None]
        first = next(iter(self._per_call), None)
        if left and set(left) <= set(installed) and first not in installed:  # the last, not the first
            deadline = time.monotonic() + 20
            while not any(self.counts[o] for o in self._per_call) and time.monotonic() < deadline:
                time.sleep(0.01)
        if self._per_call and installed:
            record.append((installed, sum(self.counts[o] for o in self._per_call)))
        install(self, built)

    monkeypatch.setattr(lazy.LazyExecutable, "_install", recording_install)
    for attempt in range(3):
        record.clear()
        monkeypatch.setenv("JITVM_CACHE_DIR", str(tmp_path / f"store{attempt}"))
        m, x, want, kernels = _cnn_call()
        got = m.predict(x)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
        assert all(k.compile_stats()["uncompiled"] == 0 for k in kernels())
        if record and record[-1][1] > 0:
            break
    assert len(record) > 1 and record[0][1] == 0, record  # one install per kernel, the first before any dispatch
    assert record[-1][1] > 0, record  # dispatches ran before the last kernel was there


@pytest.mark.parametrize("tier", ["baseline", "full"])
def test_a_cold_first_call_from_several_threads_at_once_gives_the_interpreters_bits(tmp_path, monkeypatch, tier):
    """Threads calling while the kernels compile wait in the same stubs; none deadlocks."""
    monkeypatch.setenv("JITVM_CACHE_DIR", str(tmp_path / "store"))
    m, x, want, _kernels = _cnn_call(tier)
    results, errors = [], []

    def call():
        try:
            results.append(m.predict(x))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=call) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors and len(results) == 3
    assert all(np.array_equal(r.view(np.uint32), want.view(np.uint32)) for r in results)


def test_a_kernel_failing_to_compile_in_the_background_raises_at_the_call(tmp_path, monkeypatch):
    """The error of a kernel compiled while the sequence runs is the call's; the next call
    compiles it afresh."""
    from jitvm.lower.unit_build import UnitBuilder

    monkeypatch.setenv("JITVM_CACHE_DIR", str(tmp_path / "store"))
    lower = UnitBuilder.lower
    lowered = []

    def failing_lower(self, unit, options):
        lowered.append(unit)
        if len(lowered) == 3:
            raise jitvm.Error("lowering broke")
        return lower(self, unit, options)

    monkeypatch.setattr(UnitBuilder, "lower", failing_lower)
    m, x, want, _kernels = _cnn_call("baseline")  # no tier-up left running after the test
    with pytest.raises(jitvm.Error, match="lowering broke"):
        m.predict(x)
    monkeypatch.setattr(UnitBuilder, "lower", lower)
    assert np.array_equal(m.predict(x).view(np.uint32), want.view(np.uint32))


def test_a_kernel_the_lowering_declines_runs_in_the_interpreter(tmp_path, monkeypatch):
    """Found out while the sequence already runs: its stub sends its workgroups to the
    interpreter, then and on later calls."""
    from jitvm.lower.emit.emitter import Emitter
    from jitvm.lower.emit.types import LoweringError

    monkeypatch.setenv("JITVM_CACHE_DIR", str(tmp_path / "store"))
    emit = Emitter.lower
    declined = []

    def declining(self):
        if self.vf.name not in declined and len(declined) < 1 and compiler.has_loops_in(self.vf):
            declined.append(self.vf.name)
        if self.vf.name in declined:
            raise LoweringError("test.op", "declined by the test")
        return emit(self)

    monkeypatch.setattr(Emitter, "lower", declining)
    m, x, want, kernels = _cnn_call("baseline")
    with pytest.warns(RuntimeWarning, match="declined by the test"):
        got = m.predict(x)
    assert declined and any(k.compile_stats()["interpreted"] for k in kernels())
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert np.array_equal(m.predict(x).view(np.uint32), want.view(np.uint32))
