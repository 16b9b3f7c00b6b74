"""Compile once: a second load of the same module, in a fresh process, does no LLVM work."""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = """
import json, sys
from jitvm.frontend.module import load_module
from jitvm.lower.backend import JitBackend, STATS
from jitvm.runtime.native import engine
from jitvm.runtime.vm.bytecode import LoadedModule
from jitvm.runtime.vm.context import Context
from jitvm.verify import verify_module
inst = Context().add(LoadedModule(verify_module(load_module(sys.argv[1])), JitBackend()))
result = inst.lookup("arith_i32").call([40, 2])
print(json.dumps({"stats": {**STATS, **engine.STATS}, "result": result}))
"""


def run_probe(path, cache_dir):
    env = {**os.environ, "JITVM_CACHE_DIR": str(cache_dir)}
    out = subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True, env=env,
                         check=True).stdout
    return json.loads(out)


def test_second_load_in_a_fresh_process_compiles_nothing(corpus_by_name, tmp_path):
    path = corpus_by_name["vmasm/int_arith"].vmfb
    first = run_probe(path, tmp_path)
    second = run_probe(path, tmp_path)
    assert first["stats"].get("compiled_modules") == 1 and not first["stats"].get("cache_hits")
    assert second["stats"].get("cache_hits") == 1 and not second["stats"].get("compiled_modules")
    assert first["result"] == second["result"] == [42, 38, 80, 122]
    # the runtime's own native code (object model, executor, fast paths) comes from the store too
    assert first["stats"].get("runtime_compiled") and not second["stats"].get("runtime_compiled")
    assert second["stats"].get("runtime_cache_hits") == first["stats"]["runtime_compiled"]


def test_cache_clear_command(corpus_by_name, tmp_path):
    run_probe(corpus_by_name["vmasm/int_arith"].vmfb, tmp_path)
    env = {**os.environ, "JITVM_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-m", "jitvm", "cache", "clear"], capture_output=True, text=True,
                         env=env, check=True).stdout
    assert out.startswith("removed ") and int(out.split()[1]) >= 1  # the module (and the runtime's code)
    assert not any(tmp_path.glob("*/*"))


def test_cache_is_bounded_least_recently_used_first(corpus_by_name, tmp_path, monkeypatch):
    """Past JITVM_CACHE_MAX_MB, storing an entry drops the entries used longest ago."""
    from jitvm.runtime.native import cache

    monkeypatch.setenv("JITVM_CACHE_DIR", str(tmp_path))
    blob = [b"\0" * 300_000]
    for i, k in enumerate(("aa01", "aa02", "aa03")):
        cache.store(k, blob, {"n": i})
        os.utime(tmp_path / "aa" / k, (1000 + i, 1000 + i))  # stored in this order, long ago
    assert cache.load("aa01") is not None  # used now: the most recent
    monkeypatch.setenv("JITVM_CACHE_MAX_MB", "1")  # room for three entries of 300 kB
    cache.store("aa04", blob, {"n": 3})
    left = sorted(p.name for p in tmp_path.glob("*/*"))
    assert left == ["aa01", "aa03", "aa04"]
