"""Lowering a unit leaves no cyclic garbage behind (issue 22 item 5): its IR module is let go
of once rendered (runtime.native.ir.Module.discard), so refcounting frees it at once rather
than the next full collection, which came only every several units (1-6 MB of IR each)."""

from __future__ import annotations

import gc
from collections import Counter

import numpy as np

import jitvm
from jitvm.lower import lazy
from jitvm.lower.backend import JitBackend
from jitvm.runtime.modules.hal import executable as hal_executable
from jitvm.runtime.native import ir


def _cyclic_garbage(make) -> tuple[object, Counter]:
    """What `make()` returns, and the types of the cyclic garbage it left."""
    gc.collect()
    gc.disable()
    try:
        out = make()
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        found = Counter(type(o).__module__ + "." + type(o).__qualname__ for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    return out, found


def _ir_garbage(found: Counter) -> int:
    return sum(n for name, n in found.items() if name.startswith(ir.__name__ + "."))


def test_a_discarded_module_is_freed_without_the_collector():
    def make():
        module = ir.Module("discard_test")
        fn = ir.Function(module, ir.FunctionType(ir.IntType(32), [ir.IntType(32)]), "pick")
        entry, loop, done = (fn.append_basic_block(n) for n in ("entry", "loop", "done"))
        b = ir.IRBuilder(entry)
        b.branch(loop)
        b.position_at_end(loop)
        phi = b.phi(ir.IntType(32))
        phi.add_incoming(fn.args[0], entry)
        b.branch(done)
        b.position_at_end(done)
        b.ret(phi)
        text = str(module)
        module.discard()
        return text

    text, found = _cyclic_garbage(make)
    assert "phi i32" in text
    assert _ir_garbage(found) == 0, found


def test_lowering_a_unit_leaves_no_ir_to_collect(tmp_path, monkeypatch):
    monkeypatch.setenv("JITVM_CACHE_DIR", str(tmp_path / "store"))
    gc.collect()
    before = set(hal_executable._loaded_cache.keys())
    backend = JitBackend(progress=False, tier="baseline")
    jitvm.load("example:cnn", backend=backend).predict(np.zeros((1, 28, 28, 1), np.float32))
    exe = max((lm.executable for key, lm in list(hal_executable._loaded_cache.items())
               if key not in before and isinstance(lm.executable, lazy.LazyExecutable)
               and lm.executable.backend is backend), key=lambda e: len(e.units))
    unit = next(u for u in exe.units if exe.builder._loops(u))
    for tier in ("baseline", "full"):
        (text, _meta), found = _cyclic_garbage(lambda: exe.builder.lower(unit, exe.options(unit, tier)))
        assert "define" in text
        assert _ir_garbage(found) == 0, (tier, found.most_common(8))
        assert exe.builder.lower(unit, exe.options(unit, tier))[0] == text  # the same IR each time
